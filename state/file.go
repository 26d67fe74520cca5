package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// Names of the files in a File store's directory, besides SnapshotFile
// and JournalFile.
const (
	// LeaseFile holds the lock: the current lease and the last token.
	LeaseFile = "lease.json"
	// mutexFile is flocked around every read-check-write of the lease
	// and status files, and holds the last token issued (fileissued.go).
	mutexFile = "lock"
)

// File is the embedded default Store and Lock: one directory on a local
// file system, safe for concurrent use by goroutines and by processes on
// one machine. Open it with OpenFile.
//
// The status is JournalFile and SnapshotFile (see the package doc for
// the format). A commit appends one line to the journal and fsyncs it
// once, whatever number of transitions it carries; every so often (see
// the package doc) a snapshot replaces SnapshotFile atomically (a
// temporary file, fsynced, renamed over the old one, the directory
// fsynced) and the journal starts again, replaced the same way by its
// header, which names the snapshot (a missing or emptied journal is
// corrupt, not an empty one). A crash in the middle of an
// append leaves a torn last line, which Load drops and the next commit
// cuts off; any other line that does not check out is a *CorruptError
// naming the file and the byte offset, and nothing is written over it.
// LeaseFile is replaced atomically on every change. A write that fails
// (a full disk: "no space left on DIR") leaves no temporary file and no
// partial append behind, so the space it took is free for the next.
//
// Writers serialise on an flock of the directory's "lock" file, held
// only for a read-check-write (Load takes no lock); a lease refresh takes
// the "lease.lock" flock instead, which Acquire and Release take too, so
// that no checkpoint delays it. The lease itself is the persisted
// LeaseFile, so a holder that is paused, or dead, keeps the lock until its
// lease expires, and is fenced after that. (No file's absence or lock is
// taken as a sign that a holder is dead: only the lease's expiry is.)
//
// A lease whose record was lost (LeaseFile deleted after the lease was
// issued) is still the lease of the last token issued: its holder, if it
// still runs, goes on. Its commits are accepted and its next Refresh
// writes the record again (its holder and TTL, a TTL from then); an
// Acquire before that takes the lease as held, by an unknown holder, for
// the lease's own TTL (the "lock" file keeps it; the acquirer's TTL only
// when that file was lost too) from when it found the record missing, and
// nobody else gets in before the holder stopped refreshing. Every other
// token is fenced.
//
// Tokens survive the loss of any one record: the next token is above
// LeaseFile's last token, the last token issued as the "lock" file keeps
// it too, and the greatest token the status was written under; a write
// under a token below the latter is fenced. Deleting the whole directory
// starts tokens over: never do it while a coordinator that used it may
// still run (a handle opened before is fenced in the new directory, since
// its "lock" file is not the one there, but a process that opens the
// store again is not). Every process sharing a directory must time leases on the
// wall clock.
type File struct {
	dir   string
	clock runner.Clock

	// mu serialises this handle's operations: an flock is per open file,
	// so the mutex file's flock does not exclude goroutines sharing it.
	mu      sync.Mutex
	mutex   *os.File
	dirFile *os.File
	closed  bool // set holding mu and lmu: read holding either
	v       fileVolume
	j       journal

	// lmu serialises this handle's use of lmutex, the lease flock's file
	// (filelease.go), opened on first use.
	lmu    sync.Mutex
	lmutex *os.File
}

// OpenFile opens the File store in dir, creating the directory if needed.
// It takes WithClock. Close it to release its file descriptors.
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
	f := &File{dir: dir, clock: o.clock, mutex: m, dirFile: d}
	f.v = fileVolume{f}
	f.j.v = f.v
	return f, nil
}

// Close closes the store's files. Leases acquired through it are not
// released: they stay current until they expire.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lmu.Lock()
	defer f.lmu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	var lerr error
	if f.lmutex != nil {
		lerr = f.lmutex.Close()
	}
	return errors.Join(f.mutex.Close(), f.dirFile.Close(), lerr)
}

// Load reads the snapshot and replays the journal; nil and no error
// when no status was saved. It takes no lock, so that a reader polling
// the status (an operator's status command) never holds up the writer:
// the snapshot is replaced atomically and the journal only grows between
// snapshots, so a read sees a consistent state or, when a snapshot was
// written meanwhile, a journal that does not follow its snapshot, and
// reads again.
func (f *File) Load(ctx context.Context) (*record.Status, error) {
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		before, err := f.v.stamp()
		if err != nil {
			return nil, errorf("load: %w", err)
		}
		j := journal{v: f.v} // a view of its own: the writer's is f.j
		st, err := j.load()
		if err == nil {
			return st.Status, nil
		}
		after, serr := f.v.stamp()
		if !errors.Is(err, ErrCorrupt) || serr != nil || after == before || try == 100 {
			return nil, err
		}
		// A writer changed the records while they were read: read again.
	}
}

// Save writes s whole (a snapshot) if token is the current lease's.
func (f *File) Save(ctx context.Context, token uint64, s *record.Status) error {
	return f.commit(ctx, token, s, nil, true)
}

// Commit records the changed components of s and its header (one journal
// line) if token is the current lease's.
func (f *File) Commit(ctx context.Context, token uint64, s *record.Status, changed []record.Ref) error {
	return f.commit(ctx, token, s, changed, false)
}

func (f *File) commit(ctx context.Context, token uint64, s *record.Status, changed []record.Ref, all bool) error {
	if s == nil {
		return errNilStatus
	}
	return f.locked(ctx, func(now time.Time) error {
		if _, err := f.current(now, token); err != nil {
			return err
		}
		_, err := f.j.commit(token, s, changed, all)
		return err
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
	return f.flock(ctx, &f.mutex, mutexFile, fn)
}

// flock runs fn holding the flock of the directory's file name, whose
// handle is *held (opened, or opened again, here); the caller holds the
// in-process mutex that goes with it. The flock is polled rather than
// waited for, so that ctx can end the wait; uncontended, the first try
// takes it.
func (f *File) flock(ctx context.Context, held **os.File, name string, fn func(now time.Time) error) error {
	wait := 50 * time.Microsecond
	for {
		if *held == nil {
			if err := f.reopen(held, name); err != nil {
				return err
			}
		}
		ok, err := tryLock(*held)
		if err != nil {
			return errorf("lock %s: %w", f.v.where(name), err)
		}
		if ok {
			again, err := f.same(*held, name)
			if err != nil || !again {
				defer unlock(*held)
				if err != nil {
					return err
				}
				return fn(f.clock.Now())
			}
			unlock(*held)
			if err := f.reopen(held, name); err != nil {
				return err
			}
			continue // flock the file that is there now
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
}

// same checks, holding the flock of mine (the directory's file name),
// that it excludes the other handles: that the directory is the one this
// handle opened and name the file it flocks. A directory removed (rm
// -rf) or replaced since is another store, whose tokens started over:
// this handle's leases are void there (ErrFenced). A file deleted (or
// replaced) in the same directory is one other handles no longer flock:
// again says to flock the one there now (reopen); the lease and the
// status, which hold the tokens, are where they were.
func (f *File) same(mine *os.File, name string) (again bool, err error) {
	if err := f.sameDir(); err != nil {
		return false, err
	}
	st, err := mine.Stat()
	if err != nil {
		return false, errorf("lock %s: %w", f.dir, err)
	}
	now, err := os.Stat(f.v.where(name))
	return err != nil || !os.SameFile(st, now), nil
}

// sameDir checks that the directory is the one this handle opened.
func (f *File) sameDir() error {
	dirMine, err := f.dirFile.Stat()
	if err != nil {
		return errorf("lock %s: %w", f.dir, err)
	}
	dirNow, err := os.Stat(f.dir)
	if err != nil || !os.SameFile(dirMine, dirNow) {
		return fmt.Errorf("%w: %s was removed or replaced since this handle opened it, so its tokens started over and this handle's leases are void there; nothing was written: open the store again (a coordinator that was running on it must not go on)",
			ErrFenced, f.dir)
	}
	return nil
}

// reopen opens the directory's file name (creating it if it is
// missing) into *held, in place of the one this handle had open.
func (f *File) reopen(held **os.File, name string) error {
	m, err := os.OpenFile(f.v.where(name), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return errorf("lock %s: %w", f.dir, f.full(err))
	}
	if *held != nil {
		(*held).Close()
	}
	*held = m
	return nil
}

// write replaces the file name in the directory with data: write to a
// temporary file, fsync it, rename it over name, fsync the directory.
// Callers hold the flock, so one temporary name per file suffices; one
// left by a crash is truncated by the next write. A write that fails
// before the rename removes the temporary file: on a full disk it would
// hold the space the next write (a lease refresh) needs.
func (f *File) write(name string, data []byte) (err error) {
	tmp := filepath.Join(f.dir, "."+name+".tmp")
	t, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return f.full(err)
	}
	renamed := false
	defer func() {
		if !renamed {
			t.Close() // a second Close after the first: ignored
			os.Remove(tmp)
		}
		err = f.full(err)
	}()
	if _, err := t.Write(data); err != nil {
		return err
	}
	if err := t.Sync(); err != nil {
		return err
	}
	if err := t.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(f.dir, name)); err != nil {
		return err
	}
	renamed = true
	return f.dirFile.Sync()
}

// full says which directory a write found full: "no space left on
// device" names no device.
func (f *File) full(err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("no space left on %s; free space there (nothing half-written was left behind): %w", f.dir, err)
	}
	return err
}

// fileVolume is a File's directory as a volume.
type fileVolume struct{ f *File }

func (v fileVolume) where(name string) string { return filepath.Join(v.f.dir, name) }

func (v fileVolume) read(name string) ([]byte, error) { return os.ReadFile(v.where(name)) }

func (v fileVolume) replace(name string, data []byte) error { return v.f.write(name, data) }

func (v fileVolume) appendAt(name string, off int64, data []byte) error {
	path := v.where(name)
	_, statErr := os.Stat(path)
	h, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	fi, err := h.Stat()
	if err == nil && fi.Size() != off {
		err = h.Truncate(off)
	}
	if err == nil && len(data) > 0 {
		_, err = h.WriteAt(data, off)
	}
	if err == nil {
		err = h.Sync()
	}
	if err != nil {
		// What was appended is not acknowledged: cut it off now, so that
		// a full disk gets its space back and the journal is as it was.
		_ = h.Truncate(off)
	}
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	if err == nil && errors.Is(statErr, fs.ErrNotExist) {
		err = v.f.dirFile.Sync()
	}
	return v.f.full(err)
}

// stamp is the size and modification time of the journal and the
// snapshot: any write by another handle changes one of them.
func (v fileVolume) stamp() (any, error) {
	var st [4]int64
	for i, name := range []string{JournalFile, SnapshotFile} {
		fi, err := os.Stat(v.where(name))
		if errors.Is(err, fs.ErrNotExist) {
			st[2*i] = -1
			continue
		}
		if err != nil {
			return nil, err
		}
		st[2*i], st[2*i+1] = fi.Size(), fi.ModTime().UnixNano()
	}
	return st, nil
}
