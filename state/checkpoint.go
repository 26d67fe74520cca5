package state

import (
	"context"

	"github.com/hopdag/hopdag/runner"
)

// Checkpointer makes s a runner.Checkpointer that saves every transition
// of a run under the lease's token. When the lease is no longer current
// the save is fenced and the executor stops the run (CHECKPOINT_FAILED),
// leaving the stored status as its new holder wrote it.
//
// The executor checkpoints even a cancelled run, with a context that is
// never cancelled; a save that cannot finish (a backend that hangs, a
// directory lock held by a stopped process) is therefore cut off after the
// lease's TTL: by then the lease is lost anyway, and the run stops with the
// save's error instead of hanging.
func Checkpointer(s Store, l Lease) runner.Checkpointer {
	return runner.CheckpointFunc(func(ctx context.Context, st *runner.Status) error {
		if l.TTL > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, l.TTL)
			defer cancel()
		}
		return s.Save(ctx, l.Token, st)
	})
}
