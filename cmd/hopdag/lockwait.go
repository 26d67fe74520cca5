package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hopdag/hopdag/state"
)

// Taking the state's lock for a run.
//
// A hopdag that dies without releasing its lease (SIGKILL, a crash, a lost
// machine) leaves it behind, and the state package hands the lock over
// only once that lease has expired plus a clock-skew allowance
// (state.Skew: a tenth of the TTL), never because its holder's process is
// gone. So the next run cannot start at once; instead of failing with
// "locked", it waits for the lease to expire, saying whose lease it waits
// for and until when, and takes the lock as soon as it is free: when the
// holder releases it (it finished), it says so, and otherwise that the
// lease expired. A holder that refreshes its lease meanwhile is
// alive (another hopdag is running the upgrade): that is an error at once,
// as is a lease that would take longer than ttl+state.Skew(ttl) from now
// to expire (the holder asked for a longer lease than this hopdag would
// wait for). hopdag abandon does not wait: it is a deliberate act, and it
// says until when the lock is held.
//
// --lease-ttl (run) sets the TTL: how long a killed run blocks its
// successor, against how long a paused or partitioned run keeps its lock.

// stateLock is the state's lock as a command takes it through state.Run
// or state.Approve: every transition goes to the audit log (auditedLock),
// Acquire waits for a dead holder's lease as above when wait is set
// (hopdag run), and keeps its error in err, for the command to tell it
// from the run's.
type stateLock struct {
	auditedLock
	c    *cli
	b    *backend
	wait bool
	err  error
}

func (l *stateLock) Acquire(ctx context.Context, holder string, ttl time.Duration) (state.Lease, error) {
	var (
		lease state.Lease
		err   error
	)
	if l.wait {
		lease, err = l.c.acquire(ctx, l.b, l.auditedLock, holder, ttl)
	} else {
		lease, err = l.auditedLock.Acquire(ctx, holder, ttl)
	}
	l.err = err
	return lease, err
}

// acquire takes lock for holder, waiting for a dead holder's lease as
// above. Messages about the wait go to stderr, prefixed with the command.
func (c *cli) acquire(ctx context.Context, b *backend, lock auditedLock, holder string, ttl time.Duration) (state.Lease, error) {
	lease, err := lock.Acquire(ctx, holder, ttl)
	first, ok := errors.AsType[*state.LockedError](err)
	if !ok || first.Expires.IsZero() {
		return lease, err
	}
	skew := state.Skew(ttl)
	now := time.Now()
	free := first.Expires.Add(skew)
	if free.Sub(now) > ttl+skew {
		return state.Lease{}, fmt.Errorf("%w: its lease expires in %s, more than this hopdag waits for (--lease-ttl %s plus %s); run again after %s",
			first, free.Sub(now).Round(time.Millisecond), ttl, skew, free.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(c.stderr, "hopdag %s: %s is locked by %s (lease %d) until %s; waiting until %s (the expiry plus a clock-skew allowance of %s) unless it releases the lock sooner or refreshes its lease: a hopdag that was killed leaves its lease behind\n",
		c.name, *c.state, first.Holder, first.Token, first.Expires.UTC().Format(time.RFC3339Nano), free.UTC().Format(time.RFC3339Nano), skew)
	// The backend decides when the lease is free; the deadline only
	// bounds the wait (a holder with a longer TTL has a longer skew
	// allowance). A refresh moves Expires by a third of the holder's TTL.
	jitter := b.expiryJitter()
	deadline := free.Add(skew + jitter + time.Second)
	poll := min(ttl/30, 250*time.Millisecond)
	for {
		select {
		case <-ctx.Done():
			return state.Lease{}, context.Cause(ctx)
		case <-time.After(poll):
		}
		lease, err := lock.Lock.Acquire(ctx, holder, ttl)
		if err == nil {
			lock.log.lock("Acquired", lease, nil)
			if released(first, jitter, time.Now()) {
				fmt.Fprintf(c.stderr, "hopdag %s: %s released the lock; took it (lease %d)\n", c.name, first.Holder, lease.Token)
			} else {
				fmt.Fprintf(c.stderr, "hopdag %s: the lease of %s expired; took the lock over (lease %d)\n", c.name, first.Holder, lease.Token)
			}
			return lease, nil
		}
		le, ok := errors.AsType[*state.LockedError](err)
		switch {
		case !ok:
			lock.log.lock("Refused", state.Lease{Holder: holder}, err)
			return state.Lease{}, err
		case le.Holder != first.Holder || le.Token != first.Token || le.Expires.After(first.Expires.Add(jitter)):
			lock.log.lock("Refused", state.Lease{Holder: le.Holder, Token: le.Token, Expires: le.Expires}, err)
			return state.Lease{}, &heldError{le}
		case time.Now().After(deadline):
			lock.log.lock("Refused", state.Lease{Holder: le.Holder, Token: le.Token, Expires: le.Expires}, err)
			return state.Lease{}, fmt.Errorf("%w: still locked at %s, after its expiry plus the clock-skew allowance", le, time.Now().UTC().Format(time.RFC3339))
		}
	}
}

// released reports whether the lock that first refused, taken at now,
// was released by its holder rather than taken over: Acquire takes over a
// lease only after its expiry (plus the skew allowance), so a lock taken
// before first.Expires (less the backend's jitter) was free because its
// holder let it go. A holder that ends between two refreshes does so
// well before that (its Expires is at least two thirds of its TTL away at
// the refusal, and any refresh ends the wait with a heldError).
func released(first *state.LockedError, jitter time.Duration, now time.Time) bool {
	return now.Before(first.Expires.Add(-jitter))
}

// heldError is a lock whose holder refreshed its lease while this hopdag
// waited for it: the holder is alive. It unwraps to the *state.LockedError.
type heldError struct{ *state.LockedError }

func (e *heldError) Error() string {
	return e.LockedError.Error() + ": it refreshed its lease while this hopdag waited, so it is running; wait for it to finish, or interrupt it"
}

func (e *heldError) Unwrap() error { return e.LockedError }

// expiryJitter is how far the Expires a backend reports for one lease may
// move between two looks without a refresh: none for a File (it reports
// the Expires its holder wrote); for etcd, which reports a lease's
// remaining time in whole seconds as of when its server answered, a
// second plus the round trip (measured: 1.06s), so 2s, for it and for
// backends this hopdag does not know. A holder with a lease of 6s or less
// then moves it by too little per refresh to be told apart at its first
// refresh: the wait ends at its second, or at the deadline, with the same
// error.
func (b *backend) expiryJitter() time.Duration {
	if _, ok := b.lock.(*state.File); ok {
		return 0
	}
	return 2 * time.Second
}
