package state

import (
	"context"
	"fmt"
	"time"
)

// Lock lets one holder at a time write a Store.
//
// Every acquisition gets a fencing token greater than every token handed
// out before, by any holder, across releases and restarts: tokens are
// never reused. The store checks the token on every Save, so a holder that
// was paused past its lease (a GC pause, a stopped VM, a partition) and
// wakes up still believing it holds the lock is fenced off instead of
// overwriting its successor's work.
type Lock interface {
	// Acquire takes the lock for holder (a name for humans and errors,
	// e.g. "host/pid") for ttl. It returns a *LockedError when another
	// lease holds the lock and has not expired.
	Acquire(ctx context.Context, holder string, ttl time.Duration) (Lease, error)
	// Refresh extends the lease by its TTL from now and returns it with
	// its new expiry; the token stays. It returns a *FencedError when the
	// lease is no longer current (expired, released or taken over).
	Refresh(ctx context.Context, l Lease) (Lease, error)
	// Release frees the lock. It returns a *FencedError, and frees
	// nothing, when the lease is no longer current.
	Release(ctx context.Context, l Lease) error
}

// Lease is one acquisition of a Lock.
type Lease struct {
	// Holder is the name given to Acquire.
	Holder string
	// Token is the fencing token: present it to Store.Save.
	Token uint64
	// TTL is how long the lease lasts after each acquisition or refresh.
	TTL time.Duration
	// Expires is when the lease ends unless refreshed, on the holder's
	// clock, counted from before the request that set it: the holder
	// never believes in its lease longer than the backend does.
	Expires time.Time
}

// checkAcquire validates Acquire's arguments.
func checkAcquire(holder string, ttl time.Duration) error {
	if holder == "" {
		return errorf("acquire: empty holder name; name the holder, e.g. host/pid")
	}
	if ttl <= 0 {
		return errorf("acquire: ttl %v is not positive", ttl)
	}
	return nil
}

// MinTTL is the shortest lease TTL that a Keeper keeps alive reliably: a
// refresh is due every third of the TTL and must succeed before a tenth
// of it is left (Margin), so the TTL must leave a refresh on a loaded
// machine (an fsync of the lease record, an etcd round trip) and one
// retry room; etcd also grants leases in whole seconds, with a minimum
// of its own. Healthy runs with 1 s leases on a loaded 2-core machine
// lost them. Acquire does not refuse shorter TTLs (tests on a fake clock
// use them); CheckTTL is the check a command line applies to its flags.
const MinTTL = 5 * time.Second

// CheckTTL returns an error unless ttl is at least MinTTL, saying the
// minimum.
func CheckTTL(ttl time.Duration) error {
	if ttl < MinTTL {
		return fmt.Errorf("state: a lease TTL of %v is shorter than the minimum, %v: a lease that short is lost whenever a refresh is late on a loaded machine; use a TTL of %v or more", ttl, MinTTL, MinTTL)
	}
	return nil
}
