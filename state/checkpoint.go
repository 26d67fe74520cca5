package state

import (
	"context"

	"github.com/hopdag/hopdag/runner"
)

// Checkpointer makes s a runner.Checkpointer that saves every transition
// of a run under the lease's token. When the lease is no longer current
// the save is fenced and the executor stops the run (CHECKPOINT_FAILED),
// leaving the stored status as its new holder wrote it.
func Checkpointer(s Store, l Lease) runner.Checkpointer {
	return runner.CheckpointFunc(func(ctx context.Context, st *runner.Status) error {
		return s.Save(ctx, l.Token, st)
	})
}
