package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// Run executes plan durably, in one call: it acquires lock, keeps the
// lease while the run lasts (Keep), loads the status store holds and
// resumes from it (nil: a fresh run), executes plan through exec with
// store's Checkpointer under the lease, and releases the lock. Every
// write of the run presents the lease's fencing token, so a holder that
// lost the lock can never write over its successor's status. exec is not
// changed: Run executes a copy of it with the checkpointer added
// (runner.Executor.With), which replaces any checkpointer exec has.
//
// Run takes WithHolder (default "host/pid") and WithTTL (default 15s)
// for the lease, WithClock (the keeper's, and the checkpointer's
// retries), WithLogger (the keeper's, and a release that failed),
// WithCheckpoints to wrap the checkpointer, and WithSession to decide
// what runs between the Load and the Release.
//
// What Run returns:
//
//   - The lock is held by another holder: a *LockedError (ErrLocked)
//     and a nil status. Nothing ran and nothing was written; try again
//     after LockedError.Expires (plus Skew), or wait for the holder to
//     release it. Any other error of Acquire comes back as it is, with a
//     nil status too.
//   - The stored status does not load: Load's error (a *CorruptError,
//     ErrCorrupt, for a damaged record) and a nil status. Nothing ran;
//     the lock was released.
//   - Otherwise, what Execute returned (see runner.Executor.Execute):
//     the final status, and nil when the plan succeeded, or an error
//     matching runner.ErrRunFailed for the run's own failures (failed
//     components and checks), runner.ErrPlanMismatch when the store
//     holds another plan's run (nothing ran; WithSession can start over
//     instead), and the others Execute documents (a plan it refuses: a
//     nil status). A write the store refused halts
//     the run at once, its status saying CHECKPOINT_FAILED (Code
//     record.CodeCheckpointFailed), with the store's error: a
//     *FencedError (ErrFenced) when another holder acquired the lock
//     since, a *CorruptError when the record it appends to is damaged.
//     The store holds what was written before it: the next Run resumes
//     from there.
//   - The lease was lost while the run lasted (no refresh succeeded
//     before it expired, or a refresh was fenced): the run stops as when
//     ctx is cancelled, and the error matches ErrLost (a *LostError,
//     also matching ErrFenced for a fenced refresh) beside whatever else
//     went wrong. The status returned is the one Execute ended with; the
//     store holds it up to the last write before the loss.
//   - ctx done: the run stops, what did not finish is Cancelled in the
//     status, and the error matches ctx.Err().
//
// The lock is released whatever happened, under a context that ctx's
// cancellation does not reach (bounded by the lease's TTL), so a
// cancelled run frees it at once; except when the lease was lost, as it
// is no longer the run's to release. A release that fails is logged
// (WithLogger; not when fenced: another holder has the lock), not
// returned: the run's outcome stands, and the lock is free once the
// lease expires.
func Run(ctx context.Context, store Store, lock Lock, exec *runner.Executor, plan *runner.Plan, opts ...Option) (*record.Status, error) {
	if store == nil || lock == nil || exec == nil || plan == nil {
		return nil, errorf("run: the store, the lock, the executor and the plan must not be nil (got %T, %T, %T, %T)", store, lock, exec, plan)
	}
	o := newOptions(opts)
	session := o.session
	if session == nil {
		session = func(ctx context.Context, s *Session) (*record.Status, error) { return s.Execute(ctx, s.Prev) }
	}
	return hold(ctx, store, lock, o, opts, func(ctx context.Context, s *Session) (*record.Status, error) {
		var cp runner.Checkpointer = Checkpointer(store, s.keeper.Lease(), opts...)
		if o.wrap != nil {
			cp = o.wrap(cp)
		}
		s.exec, s.plan = exec.With(runner.WithCheckpointer(cp)), plan
		return session(ctx, s)
	})
}

// Approve records by's approval of the gated step at at in the status
// store holds (record.Status.Approve), in one call: it acquires lock,
// loads the status, approves the step, saves the status under the lease
// and releases the lock. It returns the status saved. The run that
// waits at step passes it when it runs again.
//
// Approve takes the options Run takes for the lease (WithHolder,
// WithTTL, WithClock, WithLogger). Its errors: Acquire's (a
// *LockedError while a run holds the lock: a run stopped at a gate has
// released it) and Load's, as Run's; an error matching ErrNoStatus when
// the store holds no status; record.Status.Approve's (matching
// record.ErrNotWaiting when step does not wait, or was approved
// already); and Save's (a *FencedError when the lease was lost
// meanwhile). On any error nothing was saved.
func Approve(ctx context.Context, store Store, lock Lock, step, by string, at time.Time, opts ...Option) (*record.Status, error) {
	if store == nil || lock == nil {
		return nil, errorf("approve %s: the store and the lock must not be nil (got %T, %T)", step, store, lock)
	}
	return hold(ctx, store, lock, newOptions(opts), opts, func(ctx context.Context, s *Session) (*record.Status, error) {
		st := s.Prev
		if st == nil {
			return nil, fmt.Errorf("%w: there is no run to approve %s in; run the upgrade first", ErrNoStatus, step)
		}
		if err := st.Approve(step, by, at); err != nil {
			return nil, err
		}
		if err := store.Save(ctx, s.Lease().Token, st); err != nil {
			return nil, err
		}
		return st, nil
	})
}

// Session is a Run between its Load and its Release: the lock is held,
// its lease kept, and the stored status loaded. WithSession gives it to
// a function that decides what runs.
type Session struct {
	// Store is the run's store. Writes to it (Save, Commit) present
	// Lease().Token.
	Store Store
	// Prev is the status Load returned: nil when the store holds none.
	Prev *record.Status

	keeper *Keeper
	exec   *runner.Executor
	plan   *runner.Plan
}

// Lease returns the run's lease as last refreshed. Its token never
// changes.
func (s *Session) Lease() Lease { return s.keeper.Lease() }

// Execute executes the run's plan from prev (nil: a fresh run) through
// the run's executor, checkpointing under the lease, and returns what
// runner.Executor.Execute returns. Give it the session's ctx or one
// derived from it, so that a lost lease stops the run.
func (s *Session) Execute(ctx context.Context, prev *record.Status) (*record.Status, error) {
	return s.exec.Execute(ctx, s.plan, prev)
}

// WithHolder names the holder of a Run's or an Approve's lease, for
// humans and errors (LockedError.Holder); the default is "host/pid".
func WithHolder(name string) Option { return func(o *options) { o.holder = name } }

// WithTTL sets the TTL of a Run's or an Approve's lease: how long a
// holder that died without releasing it keeps the lock, against how long
// a paused or partitioned holder keeps it. The default is 15s; see
// MinTTL.
func WithTTL(ttl time.Duration) Option { return func(o *options) { o.ttl = ttl } }

// WithCheckpoints wraps a Run's checkpointer (the store's, under the
// lease) in wrap's: to count, time or note checkpoints. Pass the ctx and
// the status on, and call CheckpointChanges when the store's has it (a
// runner.ChangeCheckpointer), so that every checkpoint stays a commit of
// what changed (see Checkpointer).
func WithCheckpoints(wrap func(runner.Checkpointer) runner.Checkpointer) Option {
	return func(o *options) { o.wrap = wrap }
}

// WithSession has a Run call fn once it holds the lock and has loaded
// the status, instead of executing the plan from the loaded status. fn
// gets the lease's context (cancelled when the lease is lost) and the
// Session; it decides what to resume from (Session.Prev, or nil to start
// over), may write under the lease (Session.Store, Session.Lease), calls
// Session.Execute (or not: a caller that finds nothing to run), and may
// record the outcome under the lease before the lock is released. Run
// returns what fn returns (with a lost lease's *LostError added, see
// Run).
func WithSession(fn func(ctx context.Context, s *Session) (*record.Status, error)) Option {
	return func(o *options) { o.session = fn }
}

// defaultTTL is a Run's lease TTL unless WithTTL sets one.
const defaultTTL = 15 * time.Second

// hold is the part Run and Approve share: acquire, keep, load, fn,
// release.
func hold(ctx context.Context, store Store, lock Lock, o options, opts []Option, fn func(context.Context, *Session) (*record.Status, error)) (*record.Status, error) {
	holder, ttl := o.holder, o.ttl
	if holder == "" {
		host, _ := os.Hostname()
		holder = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	if ttl == 0 {
		ttl = defaultTTL
	}
	lease, err := lock.Acquire(ctx, holder, ttl)
	if err != nil {
		return nil, err
	}
	runCtx, keeper := Keep(ctx, lock, lease, opts...)
	defer release(ctx, runCtx, lock, keeper, o)
	prev, err := store.Load(runCtx)
	if err != nil {
		return nil, withLost(runCtx, err)
	}
	st, err := fn(runCtx, &Session{Store: store, Prev: prev, keeper: keeper})
	return st, withLost(runCtx, err)
}

// release stops the keeper and releases its lease, unless it was lost,
// under ctx without its cancellation, for at most the lease's TTL (after
// which the lease has expired anyway). A release that fails is logged,
// unless it was fenced.
func release(ctx, runCtx context.Context, lock Lock, keeper *Keeper, o options) {
	keeper.Stop()
	if _, lost := errors.AsType[*LostError](context.Cause(runCtx)); lost {
		return
	}
	lease := keeper.Lease()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lease.TTL)
	defer cancel()
	// Fenced: another holder has the lock, and nothing of the run's is
	// left to free.
	if err := lock.Release(rctx, lease); err != nil && !errors.Is(err, ErrFenced) {
		o.logger.Warn("state: releasing the lock failed; it is free once the lease expires",
			"holder", lease.Holder, "token", lease.Token, "expires", lease.Expires, "error", err)
	}
}

// withLost adds to err the *LostError that cancelled runCtx, unless err
// says so already (Execute's does).
func withLost(runCtx context.Context, err error) error {
	if err == nil || errors.Is(err, ErrLost) {
		return err
	}
	if lost, ok := errors.AsType[*LostError](context.Cause(runCtx)); ok {
		return errors.Join(err, lost)
	}
	return err
}
