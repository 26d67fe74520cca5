package state

import (
	"context"
	"errors"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state/codec"
)

// Checkpointer makes s a runner.Checkpointer (a runner.ChangeCheckpointer)
// that commits every round of transitions of a run under the lease's
// token: one journal record per round, whatever its number of
// transitions. It takes WithClock (the retries' waits).
//
// A write that fails for a reason that may pass (a network error, a
// timeout, a disk that is full for a moment) is retried with a backoff,
// 10ms doubling to 1s, for as long as the lease's TTL from the first
// failure; then the error is returned and the executor halts the run at
// once, and makes one last attempt at the final status (see
// runner.Checkpointer). A fenced write (*FencedError), a corrupt record
// (*CorruptError) or a nil status is not retried. Each attempt is cut off
// after the lease's TTL, so a backend that hangs cannot hold the run:
// the executor's checkpoint context is never cancelled.
//
// Wrapped in a plain runner.Checkpointer (a runner.CheckpointFunc that
// counts, times or logs checkpoints and calls this one's Checkpoint), it
// still commits only what changed, as long as the wrapper passes on the
// ctx and the status Execute gave it (see runner.Changes); with another
// status (a copy) every checkpoint writes the whole status, which makes
// the bytes written grow with the square of the run.
func Checkpointer(s Store, l Lease, opts ...Option) runner.Checkpointer {
	return &checkpointer{s: s, l: l, clock: newOptions(opts).clock}
}

type checkpointer struct {
	s     Store
	l     Lease
	clock runner.Clock
}

// Checkpoint commits what changed when ctx carries it for st
// (runner.Changes: Execute called a wrapper of this checkpointer, which
// passed its ctx and st on), else saves st whole.
func (c *checkpointer) Checkpoint(ctx context.Context, st *record.Status) error {
	if changed, ok := runner.Changes(ctx, st); ok {
		return c.CheckpointChanges(ctx, st, changed)
	}
	return c.retry(ctx, func(ctx context.Context) error { return c.s.Save(ctx, c.l.Token, st) })
}

func (c *checkpointer) CheckpointChanges(ctx context.Context, st *record.Status, changed []record.Ref) error {
	return c.retry(ctx, func(ctx context.Context) error { return c.s.Commit(ctx, c.l.Token, st, changed) })
}

func (c *checkpointer) retry(ctx context.Context, write func(context.Context) error) error {
	var deadline time.Time
	wait := 10 * time.Millisecond
	for {
		err := c.attempt(ctx, write)
		if err == nil || !transient(err) || ctx.Err() != nil || c.l.TTL <= 0 {
			return err
		}
		now := c.clock.Now()
		if deadline.IsZero() {
			deadline = now.Add(c.l.TTL)
		}
		if !now.Add(wait).Before(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-c.clock.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

func (c *checkpointer) attempt(ctx context.Context, write func(context.Context) error) error {
	if c.l.TTL > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.l.TTL)
		defer cancel()
	}
	return write(ctx)
}

// transient reports whether a failed write may succeed if tried again:
// not a fenced or corrupt one, nor an invalid call (a status no Load could
// read back, as any store's codec refuses it).
func transient(err error) bool {
	return !errors.Is(err, ErrFenced) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, errInvalid) && !errors.Is(err, codec.ErrInvalid)
}
