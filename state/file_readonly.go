package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// ErrReadOnly is matched by the error of a write (Save, Commit, Acquire,
// Refresh, Release) through a store opened to read only: a
// *ReadOnlyFile. The call changed nothing.
var ErrReadOnly = errors.New("state: opened read-only")

// ReadOnlyFile is a File store opened to read only, with OpenFileReadOnly:
// its status (Load) and its lock's lease (ReadLease). It creates nothing,
// opens nothing for writing and takes no flock, so it reads a directory
// its user may not write, on a read-only mount, beside a coordinator
// writing it, and never holds that coordinator up. It is a Store and a
// Lock whose writes fail with ErrReadOnly, and a LeaseReader; it is safe
// for concurrent use, and holds no file open between calls.
type ReadOnlyFile struct {
	f *File // a view: no "lock" file, no directory handle
}

// Compile-time checks: a ReadOnlyFile reads as a File does.
var (
	_ Store       = (*ReadOnlyFile)(nil)
	_ Lock        = (*ReadOnlyFile)(nil)
	_ LeaseReader = (*ReadOnlyFile)(nil)
)

// OpenFileReadOnly opens the File store in dir, which must exist, to read
// only. It takes WithClock (the clock ReadLease decides on).
func OpenFileReadOnly(dir string, opts ...Option) (*ReadOnlyFile, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, errorf("open: %w", err) // matches fs.ErrNotExist
	}
	if !fi.IsDir() {
		return nil, errorf("open %s: not a directory", dir)
	}
	return &ReadOnlyFile{f: fileView(dir, newOptions(opts).clock, nil)}, nil
}

// fileView is a File on dir for reading, with mutex as its "lock" file
// (nil for none).
func fileView(dir string, clock runner.Clock, mutex *os.File) *File {
	f := &File{dir: dir, clock: clock, mutex: mutex}
	f.v = fileVolume{f}
	f.j.v = f.v
	return f
}

// Close does nothing: a ReadOnlyFile holds no file open. It is there so
// that a ReadOnlyFile closes as a File does.
func (r *ReadOnlyFile) Close() error { return nil }

// Load reads the status as File.Load does (File.Load takes no lock).
func (r *ReadOnlyFile) Load(ctx context.Context) (*record.Status, error) {
	return r.f.Load(ctx)
}

// ReadLease returns the lock's lease as File.ReadLease does, without its
// flock: when LeaseFile is missing it reads the last token issued (the
// "lock" file, if there is one, and the status) and then LeaseFile again,
// so that an Acquire that wrote it meanwhile is seen.
func (r *ReadOnlyFile) ReadLease(ctx context.Context) (Lease, bool, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, false, err
	}
	rec, err := readRecord(r.f.v)
	if err != nil {
		return Lease{}, false, err
	}
	if !rec.missing {
		l, held := rec.read(r.f.clock.Now())
		return l, held, nil
	}
	last, err := r.lastIssued()
	if err != nil {
		return Lease{}, false, err
	}
	if rec, err = readRecord(r.f.v); err != nil {
		return Lease{}, false, err
	}
	if !rec.missing {
		l, held := rec.read(r.f.clock.Now())
		return l, held, nil
	}
	if last == 0 {
		return Lease{}, false, nil
	}
	return Lease{Holder: unknownHolder, Token: last}, true, nil
}

// lastIssued is the last token issued, as File's tokens finds it: the
// greatest of the "lock" file's (opened to read, if there is one) and the
// status's.
func (r *ReadOnlyFile) lastIssued() (uint64, error) {
	m, err := os.Open(r.f.v.where(mutexFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, errorf("read %s: %w", r.f.v.where(mutexFile), err)
	}
	view := fileView(r.f.dir, r.f.clock, m)
	if m == nil {
		t, err := view.j.lastToken()
		return t, err
	}
	defer m.Close()
	_, last, err := view.tokens()
	return last, err
}

// readOnly is the error of a write named what.
func (r *ReadOnlyFile) readOnly(what string) error {
	return fmt.Errorf("%w: cannot %s in %s: it was opened with OpenFileReadOnly; open it with OpenFile to write", ErrReadOnly, what, r.f.dir)
}

// Save fails with ErrReadOnly.
func (r *ReadOnlyFile) Save(context.Context, uint64, *record.Status) error {
	return r.readOnly("save the status")
}

// Commit fails with ErrReadOnly.
func (r *ReadOnlyFile) Commit(context.Context, uint64, *record.Status, []record.Ref) error {
	return r.readOnly("commit the status")
}

// Acquire fails with ErrReadOnly.
func (r *ReadOnlyFile) Acquire(context.Context, string, time.Duration) (Lease, error) {
	return Lease{}, r.readOnly("acquire the lock")
}

// Refresh fails with ErrReadOnly.
func (r *ReadOnlyFile) Refresh(context.Context, Lease) (Lease, error) {
	return Lease{}, r.readOnly("refresh the lease")
}

// Release fails with ErrReadOnly.
func (r *ReadOnlyFile) Release(context.Context, Lease) error {
	return r.readOnly("release the lock")
}
