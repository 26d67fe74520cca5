package statetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// WrappedCheckpointer checks that state.Checkpointer on a backend, wrapped
// in a plain runner.CheckpointFunc (as one wraps it to count or log
// checkpoints), stays linear: it runs 200 and 800 components of the
// Layered DAG four at a time (a round per start or end, more or less as
// the writes keep up), and the status bytes written per component
// (written: the backend's count) stay flat, within the spread that
// rounds batching more or fewer transitions give, and near the
// unwrapped checkpointer's in the same run. Whole statuses every round
// grow with the run: 4 times as many bytes per component at 800 as at
// 200. It counts bytes, not time. open returns fresh, empty storage.
func WrappedCheckpointer(t *testing.T, open func(t *testing.T) Backend, written func(Backend) int64) {
	// run returns the status bytes written per component, and per
	// checkpoint.
	run := func(n int, wrap bool) (perComponent, perCheckpoint float64) {
		b := open(t)
		l, err := b.Acquire(t.Context(), "a", time.Hour)
		require.NoError(t, err)
		defer func() { _ = b.Release(t.Context(), l) }()
		counted := &countingWrites{Store: b}
		cp := state.Checkpointer(counted, l)
		if wrap {
			inner := cp
			cp = runner.CheckpointFunc(func(ctx context.Context, s *record.Status) error {
				return inner.Checkpoint(ctx, s)
			})
		}
		noop := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
		before := written(b)
		_, err = runner.New(noop, runner.WithMaxParallel(4), runner.WithCheckpointer(cp)).Execute(t.Context(), Layered(t, n), nil)
		require.NoError(t, err, "Execute of %d components", n)
		require.Positive(t, counted.writes, "checkpoints of %d components", n)
		bytes := float64(written(b) - before)
		return bytes / float64(n), bytes / float64(counted.writes)
	}
	small, smallCp := run(200, true)
	large, largeCp := run(800, true)
	plain, plainCp := run(800, false)
	t.Logf("bytes per component (per checkpoint), wrapped: %.0f (%.0f) at 200 components, %.0f (%.0f) at 800; unwrapped at 800: %.0f (%.0f)",
		small, smallCp, large, largeCp, plain, plainCp)
	assert.LessOrEqual(t, large, 2*small, "bytes per component of a wrapped checkpointer at 800 components (%.0f) against 200 (%.0f): want flat, not growing with the run", large, small)
	assert.LessOrEqual(t, large, 2*plain, "bytes per component at 800 components, wrapped (%.0f) against unwrapped (%.0f)", large, plain)
}

// countingWrites counts a Store's Saves and Commits.
type countingWrites struct {
	state.Store
	writes int
}

func (c *countingWrites) Save(ctx context.Context, token uint64, s *record.Status) error {
	c.writes++
	return c.Store.Save(ctx, token, s)
}

func (c *countingWrites) Commit(ctx context.Context, token uint64, s *record.Status, changed []record.Ref) error {
	c.writes++
	return c.Store.Commit(ctx, token, s, changed)
}
