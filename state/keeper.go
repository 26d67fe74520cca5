package state

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/hopdag/hopdag/runner"
)

// Keeper refreshes a lease in the background and cancels its context the
// moment the lease is lost, so a coordinator that lost its lock stops
// acting at once rather than at its next write. Build one with Keep.
//
// The lease counts as lost when a refresh is fenced (another holder took
// the lock, or the backend expired the lease), and when no refresh
// succeeded by Margin before the lease's Expires on the keeper's clock: a
// refresh that hangs (a partitioned network, a paused process) loses the
// lease then, not when the refresh returns. Other refresh errors are
// logged and retried until then.
//
// Fencing, not the keeper, is what keeps the status safe: between the
// moment a lease is lost and the moment the holder sees its context done,
// a write can still be attempted, and the store rejects it (ErrFenced).
// The keeper makes the holder stop trying.
type Keeper struct {
	lock   Lock
	clock  runner.Clock
	logger *slog.Logger
	cancel context.CancelCauseFunc
	done   chan struct{}

	mu    sync.Mutex
	lease Lease
}

// Keep starts refreshing lease on l every third of its TTL, and returns a
// context derived from ctx that is cancelled when the lease is lost (its
// cause, context.Cause, is then a *LostError matching ErrLost), when ctx
// is done, or when Stop is called. Run the work that needs the lock under
// that context. Keep takes WithClock and WithLogger.
//
// Refreshing stops when the returned context is done, for whatever reason;
// call Stop to release the keeper's goroutines.
func Keep(ctx context.Context, l Lock, lease Lease, opts ...Option) (context.Context, *Keeper) {
	o := newOptions(opts)
	run, cancel := context.WithCancelCause(ctx)
	k := &Keeper{lock: l, clock: o.clock, logger: o.logger, cancel: cancel, done: make(chan struct{}), lease: lease}
	// The first timers are set before Keep returns, so that a test that
	// advances a fake clock right after Keep is seen by the keeper.
	expiry := k.clock.After(lease.Expires.Sub(k.clock.Now()) - Margin(lease.TTL))
	tick := k.clock.After(interval(lease.TTL))
	go k.loop(run, expiry, tick)
	return run, k
}

// Lease returns the lease as last refreshed. Its token never changes.
func (k *Keeper) Lease() Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lease
}

// Stop stops refreshing, cancels the keeper's context (with cause
// context.Canceled unless it was already done) and waits for the keeper's
// goroutines, including a refresh in flight, which is cancelled through
// its ctx (one the backend took all the same is kept: Lease() returns
// it). It does not release the lease: call Lock.Release with Lease() for
// that. Stop is idempotent.
func (k *Keeper) Stop() {
	k.cancel(context.Canceled)
	<-k.done
}

// Margin is how long before a lease's expiry, on the Keeper's clock, the
// Keeper cancels the run if no refresh succeeded by then: a tenth of the
// TTL. It leaves the run that long to see its context done before its
// writes are fenced, and it covers a holder's clock running slower than
// the backend's (etcd times leases on the server; a File's are wall-clock
// timestamps; see Skew).
func Margin(ttl time.Duration) time.Duration { return ttl / 10 }

// interval is the time between refreshes: a third of the TTL, so two
// refreshes in a row may fail before the lease runs out.
func interval(ttl time.Duration) time.Duration { return max(ttl/3, time.Millisecond) }

// retryInterval is the wait before retrying a refresh that failed
// without being fenced.
func retryInterval(ttl time.Duration) time.Duration { return max(ttl/10, time.Millisecond) }

// loop is the keeper's goroutine. It owns the timers: expiry fires when
// the current lease's Expires passes, tick when the next refresh is due.
func (k *Keeper) loop(ctx context.Context, expiry, tick <-chan time.Time) {
	defer close(k.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-expiry:
			k.lose(nil)
			return
		case <-tick:
		}
		lease := k.Lease()
		next, expired, err := k.refresh(ctx, lease, expiry)
		if err == nil && next != (Lease{}) {
			// Kept even when Stop or the expiry came meanwhile: the lock
			// holds it now (the run stays cancelled after an expiry).
			k.mu.Lock()
			k.lease = next
			k.mu.Unlock()
		}
		switch {
		case expired:
			return // refresh has cancelled the run
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrFenced):
			k.lose(err)
			return
		case err != nil:
			k.logger.Warn("state: lease refresh failed; retrying until the lease expires",
				"holder", lease.Holder, "token", lease.Token, "expires", lease.Expires, "error", err)
			tick = k.clock.After(retryInterval(lease.TTL))
		default:
			expiry = k.clock.After(next.Expires.Sub(k.clock.Now()) - Margin(next.TTL))
			tick = k.clock.After(interval(next.TTL))
		}
	}
}

// refresh runs one Refresh in its own goroutine so that the lease's expiry
// is noticed while the refresh hangs. It returns once the refresh has
// returned (a hung one is cancelled through its ctx first), so no
// goroutine outlives the keeper.
func (k *Keeper) refresh(ctx context.Context, lease Lease, expiry <-chan time.Time) (Lease, bool, error) {
	type result struct {
		lease Lease
		err   error
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := make(chan result, 1)
	go func() {
		l, err := k.lock.Refresh(rctx, lease)
		res <- result{l, err}
	}()
	select {
	case r := <-res:
		return r.lease, false, r.err
	case <-expiry:
		// The lease is lost now, whether or not the refresh ever returns:
		// cancel the run first, then wait for the refresh to give up.
		k.lose(nil)
		cancel()
		if r := <-res; r.err == nil {
			return r.lease, true, nil // taken late: Lease() says so
		}
		return Lease{}, true, nil
	case <-ctx.Done():
		cancel()
		if r := <-res; r.err == nil {
			return r.lease, false, nil // the backend took it before the cancel
		}
		return Lease{}, false, ctx.Err()
	}
}

// lose cancels the context with a *LostError.
func (k *Keeper) lose(err error) {
	lease := k.Lease()
	lost := &LostError{Lease: lease, Err: err}
	k.logger.Warn("state: lease lost; cancelling the run", "holder", lease.Holder, "token", lease.Token, "error", lost)
	k.cancel(lost)
}
