package state

import (
	"context"
	"os"
	"time"
)

// leaseMutexFile is flocked around every read-check-write of LeaseFile:
// by Refresh alone, and by Acquire and Release inside mutexFile's flock.
// So a refresh never waits for a checkpoint (a Commit holds mutexFile's
// flock, and the handle's mutex, through its fsyncs), which with a short
// TTL on a loaded machine lost healthy leases. A Commit reads LeaseFile
// without it: LeaseFile is replaced atomically, and a refresh changes
// only the lease's expiry (or writes back the record of the lease the
// Commit is checked against), never whose lease is current; what does
// (Acquire, Release) holds both flocks.
const leaseMutexFile = "lease.lock"

// leaseLocked runs fn holding the handle's lease mutex and the
// directory's lease flock, not the handle's mutex nor mutexFile's flock.
// Lock order: mu, the status flock, lmu, the lease flock; Refresh takes
// the last two alone.
func (f *File) leaseLocked(ctx context.Context, fn func(now time.Time) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.lmu.Lock()
	defer f.lmu.Unlock()
	if f.closed {
		return errorf("%s: store is closed", f.dir)
	}
	wait := 50 * time.Microsecond
	for {
		if f.lmutex == nil {
			if err := f.reopenLease(); err != nil {
				return err
			}
		}
		ok, err := tryLock(f.lmutex)
		if err != nil {
			return errorf("lock %s: %w", f.v.where(leaseMutexFile), err)
		}
		if ok {
			again, err := f.sameLease()
			if err != nil || !again {
				defer unlock(f.lmutex)
				if err != nil {
					return err
				}
				return fn(f.clock.Now())
			}
			unlock(f.lmutex)
			if err := f.reopenLease(); err != nil {
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

// sameLease is same for the lease flock: the directory must be the one
// this handle opened, and again says to flock the lease mutex file that
// is there now (it was deleted or replaced).
func (f *File) sameLease() (again bool, err error) {
	if err := f.sameDir(); err != nil {
		return false, err
	}
	mine, err := f.lmutex.Stat()
	if err != nil {
		return false, errorf("lock %s: %w", f.dir, err)
	}
	now, err := os.Stat(f.v.where(leaseMutexFile))
	return err != nil || !os.SameFile(mine, now), nil
}

// reopenLease opens the lease mutex file (creating it if it is missing),
// in place of the one this handle had open.
func (f *File) reopenLease() error {
	m, err := os.OpenFile(f.v.where(leaseMutexFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return errorf("lock %s: %w", f.dir, f.full(err))
	}
	if f.lmutex != nil {
		f.lmutex.Close()
	}
	f.lmutex = m
	return nil
}

// bothLocked runs fn holding both flocks (and both mutexes): what
// changes whose lease is current (Acquire, Release) excludes commits and
// refreshes alike.
func (f *File) bothLocked(ctx context.Context, fn func(now time.Time) error) error {
	return f.locked(ctx, func(time.Time) error {
		return f.leaseLocked(ctx, fn)
	})
}
