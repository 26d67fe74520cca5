package state

import (
	"context"
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
	return f.flock(ctx, &f.lmutex, leaseMutexFile, fn)
}

// bothLocked runs fn holding both flocks (and both mutexes): what
// changes whose lease is current (Acquire, Release) excludes commits and
// refreshes alike.
func (f *File) bothLocked(ctx context.Context, fn func(now time.Time) error) error {
	return f.locked(ctx, func(time.Time) error {
		return f.leaseLocked(ctx, fn)
	})
}
