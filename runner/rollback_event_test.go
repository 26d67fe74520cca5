package runner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// slowUndoer is an undoer whose rollbacks take d each.
type slowUndoer struct {
	*undoer
	d time.Duration
}

func (u slowUndoer) Rollback(ctx context.Context, t runner.Task) error {
	time.Sleep(u.d)
	return u.undoer.Rollback(ctx, t)
}

// Each hop's rollback ends with a HopFailed event of Phase RolledBack
// whose Duration is the time the rollback of that hop took (a metric of
// hop durations reads it), last hop first.
func TestRollbackHopEventDuration(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"), c("b", "a"))}, hop{g: graphOf(t, c("a"))})
	st, err := runner.New(newUndoer()).Execute(context.Background(), p, nil)
	require.NoError(t, err)
	require.NoError(t, runner.Revert(st, "undo", t0))

	var mu sync.Mutex
	var ends []runner.Event
	obs := runner.ObserverFunc(func(e runner.Event) {
		if e.Type == runner.HopFailed {
			mu.Lock()
			ends = append(ends, e)
			mu.Unlock()
		}
	})
	const d = 20 * time.Millisecond
	_, err = runner.New(slowUndoer{newUndoer(), d}, runner.WithBlockingObserver(obs)).Execute(context.Background(), p, st)
	require.ErrorIs(t, err, runner.ErrRolledBack)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, ends, 2)
	for i, want := range []struct {
		hop  int
		took time.Duration // at least: its components one after the other
	}{{1, d}, {0, 2 * d}} {
		assert.Equal(t, want.hop, ends[i].Hop)
		assert.Equal(t, record.RolledBack, ends[i].Phase)
		assert.GreaterOrEqual(t, ends[i].Duration, want.took, "hop %d's rollback took at least its components'", want.hop)
		assert.Less(t, ends[i].Duration, 10*time.Second)
	}
}
