package statetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// WrappedCheckpointer checks that state.Checkpointer on a backend, wrapped
// in a plain runner.CheckpointFunc (as one wraps it to count or log
// checkpoints), stays linear: it runs 200 and 600 components of the
// Layered DAG four at a time (a round per start or end), and the status
// bytes written per checkpoint (written: the backend's count) stay flat
// and match the unwrapped checkpointer's in the same run. It counts
// bytes, not time. open returns fresh, empty storage.
func WrappedCheckpointer(t *testing.T, open func(t *testing.T) Backend, written func(Backend) int64) {
	// run returns the status bytes written per checkpoint.
	run := func(n int, wrap bool) float64 {
		b := open(t)
		l, err := b.Acquire(t.Context(), "a", time.Hour)
		require.NoError(t, err)
		defer func() { _ = b.Release(t.Context(), l) }()
		counted := &countingWrites{Store: b}
		cp := state.Checkpointer(counted, l)
		if wrap {
			inner := cp
			cp = runner.CheckpointFunc(func(ctx context.Context, s *runner.Status) error {
				return inner.Checkpoint(ctx, s)
			})
		}
		noop := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
		before := written(b)
		_, err = runner.New(noop, runner.WithMaxParallel(4), runner.WithCheckpointer(cp)).Execute(t.Context(), Layered(t, n), nil)
		require.NoError(t, err, "Execute of %d components", n)
		require.Positive(t, counted.writes, "checkpoints of %d components", n)
		return float64(written(b)-before) / float64(counted.writes)
	}
	small, large, plain := run(200, true), run(600, true), run(600, false)
	t.Logf("bytes per checkpoint, wrapped: %.0f at 200 components, %.0f at 600; unwrapped at 600: %.0f", small, large, plain)
	assert.LessOrEqual(t, large, 1.5*small, "bytes per checkpoint of a wrapped checkpointer at 600 components (%.0f) against 200 (%.0f): want flat, not growing with the run", large, small)
	assert.LessOrEqual(t, large, 1.1*plain, "bytes per checkpoint at 600 components, wrapped (%.0f) against unwrapped (%.0f)", large, plain)
}

// countingWrites counts a Store's Saves and Commits.
type countingWrites struct {
	state.Store
	writes int
}

func (c *countingWrites) Save(ctx context.Context, token uint64, s *runner.Status) error {
	c.writes++
	return c.Store.Save(ctx, token, s)
}

func (c *countingWrites) Commit(ctx context.Context, token uint64, s *runner.Status, changed []runner.Ref) error {
	c.writes++
	return c.Store.Commit(ctx, token, s, changed)
}
