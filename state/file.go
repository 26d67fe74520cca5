package state

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state/internal/codec"
)

// Names of the files in a File store's directory.
const (
	// StatusFile holds the status as indented JSON.
	StatusFile = "status.json"
	// LeaseFile holds the lock: the current lease and the last token.
	LeaseFile = "lease.json"
	// mutexFile is flocked around every read-check-write of the lease
	// and status files.
	mutexFile = "lock"
	// holderPrefix names the file a holder flocks while it holds a lease
	// (holder-<token>.lock), so others can tell a dead holder.
	holderPrefix = "holder-"
)

// File is the embedded default Store and Lock: one directory on a local
// file system, safe for concurrent use by goroutines and by processes on
// one machine. Open it with OpenFile.
//
// The directory holds StatusFile and LeaseFile, both replaced atomically
// on every change (written to a temporary file, fsynced, renamed over the
// old one, and the directory fsynced), so a crash at any moment leaves
// the old record or the new one, never a torn one. A record that does not
// parse anyway (a disk error, a hand edit) is reported as a *CorruptError
// naming the file, never replaced.
//
// Writers serialise on an flock of the directory's "lock" file, held only
// for the few microseconds of a read-check-write; the lease itself is the
// persisted LeaseFile, so a holder that is paused (not dead) keeps the
// lock until its lease expires and is fenced after that. A holder also
// flocks a holder-<token>.lock file for as long as it holds the lease: when
// its process dies (or it calls Close) the kernel drops that flock, and
// the next Acquire takes the lock at once instead of waiting for the
// lease to expire.
//
// Load reads without locking. Every process sharing a directory must time
// leases on the wall clock. Never delete LeaseFile while a coordinator may
// still run: it holds the last token handed out, and without it tokens
// would start again from 1.
type File struct {
	dir   string
	clock runner.Clock

	// mu serialises this handle's operations: an flock is per open file,
	// so the mutex file's flock does not exclude goroutines sharing it.
	mu      sync.Mutex
	mutex   *os.File
	dirFile *os.File
	// holders are the holder files of leases acquired through this
	// handle, by token.
	holders map[uint64]*os.File
	closed  bool
}

// OpenFile opens the File store in dir, creating the directory if needed.
// It takes WithClock. Close it to release its file descriptors; leases
// acquired through it and not released are then free to take.
func OpenFile(dir string, opts ...Option) (*File, error) {
	o := newOptions(opts)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errorf("open: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, errorf("open: %w", err)
	}
	m, err := os.OpenFile(filepath.Join(dir, mutexFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		d.Close()
		return nil, errorf("open: %w", err)
	}
	return &File{dir: dir, clock: o.clock, mutex: m, dirFile: d, holders: map[uint64]*os.File{}}, nil
}

// Close closes the store's files. Leases held through it become free to
// acquire by others at once (their holder files are unlocked), but are
// not released: their tokens stay current until someone acquires.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	errs := []error{f.mutex.Close(), f.dirFile.Close()}
	for t, h := range f.holders {
		errs = append(errs, h.Close())
		delete(f.holders, t)
	}
	return errors.Join(errs...)
}

// Load reads StatusFile; nil and no error when it does not exist.
func (f *File) Load(ctx context.Context) (*runner.Status, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path := filepath.Join(f.dir, StatusFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errorf("load: %w", err)
	}
	s, err := codec.Unmarshal(b)
	if err != nil {
		return nil, &CorruptError{Path: path, Err: err}
	}
	return s, nil
}

// Save replaces StatusFile atomically if token is the current lease's.
func (f *File) Save(ctx context.Context, token uint64, s *runner.Status) error {
	b, err := codec.Marshal(s)
	if err != nil {
		return errorf("save: %w", err)
	}
	return f.locked(ctx, func(now time.Time) error {
		r, err := f.readRecord()
		if err != nil {
			return err
		}
		if err := r.check(now, token); err != nil {
			return err
		}
		if err := f.write(StatusFile, b); err != nil {
			return errorf("save: %w", err)
		}
		return nil
	})
}

// locked runs fn holding the handle's mutex and the directory's flock.
// The flock is polled rather than waited for, so that ctx can end the
// wait; uncontended, the first try takes it.
func (f *File) locked(ctx context.Context, fn func(now time.Time) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errorf("%s: store is closed", f.dir)
	}
	wait := 50 * time.Microsecond
	for {
		ok, err := tryLock(f.mutex)
		if err != nil {
			return errorf("lock %s: %w", f.dir, err)
		}
		if ok {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Millisecond)
	}
	defer unlock(f.mutex)
	return fn(f.clock.Now())
}

// write replaces the file name in the directory with data: write to a
// temporary file, fsync it, rename it over name, fsync the directory.
// Callers hold the flock, so one temporary name per file suffices; one
// left by a crash is truncated by the next write.
func (f *File) write(name string, data []byte) error {
	tmp := filepath.Join(f.dir, "."+name+".tmp")
	t, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := t.Write(data); err != nil {
		t.Close()
		return err
	}
	if err := t.Sync(); err != nil {
		t.Close()
		return err
	}
	if err := t.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(f.dir, name)); err != nil {
		return err
	}
	return f.dirFile.Sync()
}
