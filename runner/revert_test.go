package runner_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// Revert rolls back, through the DAG, a run that succeeded, failed or
// was stopped partway: the last hop that started (its components that
// started, dependents first), then the hops completed before it; what a
// run never reached stays Pending. Nothing runs forward again, not even
// the component that failed.
func TestRevert(t *testing.T) {
	twoHops := func(t *testing.T) *runner.Plan {
		return planOf(hop{g: graphOf(t, c("a"), c("b", "a"))}, hop{g: graphOf(t, c("a"), c("b", "a"), c("c", "b"))})
	}
	tests := []struct {
		name string
		// run is the run to revert: it returns its status.
		run    func(t *testing.T, p *runner.Plan) *record.Status
		hops   []record.Phase
		undone map[string]int // rollbacks by hop/component
	}{{
		name: "succeeded",
		run: func(t *testing.T, p *runner.Plan) *record.Status {
			st, err := runner.New(newUndoer()).Execute(context.Background(), p, nil)
			require.NoError(t, err)
			return st
		},
		hops:   []record.Phase{record.RolledBack, record.RolledBack},
		undone: map[string]int{"0/a": 1, "0/b": 1, "1/a": 1, "1/b": 1, "1/c": 1},
	}, {
		name: "failed on the last hop",
		run: func(t *testing.T, p *runner.Plan) *record.Status {
			u := &hopUndoer{ran: map[string]int{}, undone: map[string]int{}, start: map[string]int{}, end: map[string]int{}, fail: "1/b"}
			st, err := runner.New(u).Execute(context.Background(), p, nil)
			require.ErrorIs(t, err, runner.ErrRunFailed)
			return st
		},
		hops: []record.Phase{record.RolledBack, record.RolledBack},
		// 1/c never started (its dependency failed): not rolled back.
		undone: map[string]int{"0/a": 1, "0/b": 1, "1/a": 1, "1/b": 1},
	}, {
		name: "cancelled during the first hop",
		run: func(t *testing.T, p *runner.Plan) *record.Status {
			ctx, cancel := context.WithCancel(context.Background())
			u := newUndoer()
			st, err := runner.New(runner.RunnerFunc(func(_ context.Context, task runner.Task) error {
				if task.Component == "a" {
					cancel() // a finishes; b never starts
				}
				return u.Run(ctx, task)
			}), runner.WithMaxParallel(1)).Execute(ctx, p, nil)
			require.ErrorIs(t, err, context.Canceled)
			return st
		},
		hops:   []record.Phase{record.RolledBack, record.Cancelled},
		undone: map[string]int{"0/a": 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := twoHops(t)
			st := tt.run(t, p)
			require.NoError(t, runner.Revert(st, "rollout fleet/v2 aborted", t0))
			assert.Equal(t, record.RollingBack, st.Phase)
			assert.Equal(t, "rollback-run", st.FailurePolicy)
			assert.Equal(t, &record.Failure{Hop: st.LastFailure.Hop, Code: record.CodeRollbackRequested, Error: "rollback requested: rollout fleet/v2 aborted", Time: t0}, st.LastFailure)

			u := &hopUndoer{ran: map[string]int{}, undone: map[string]int{}, start: map[string]int{}, end: map[string]int{}, failRollback: map[string]bool{}}
			got, err := runner.New(u).Execute(context.Background(), p, st)
			require.ErrorIs(t, err, runner.ErrRolledBack)
			assert.NotErrorIs(t, err, runner.ErrRunFailed, "nothing failed")
			assert.NotErrorIs(t, err, runner.ErrRollbackFailed)
			assert.Equal(t, record.RolledBack, got.Phase)
			assert.Equal(t, "rolled back after: rollback requested: rollout fleet/v2 aborted", got.Message)
			var hops []record.Phase
			for _, h := range got.Hops {
				hops = append(hops, h.Phase)
			}
			assert.Equal(t, tt.hops, hops)
			assert.Equal(t, tt.undone, u.undone)
			assert.Empty(t, u.ran, "nothing runs forward")
			if len(u.undone) > 1 {
				assert.Less(t, u.end["1/c"], u.start["1/b"], "dependents first")
				assert.Less(t, u.end["1/a"], u.start["0/b"], "the last hop first")
			}

			_, err = runner.New(u).Execute(context.Background(), p, got)
			assert.ErrorIs(t, err, runner.ErrRolledBack, "a reverted run is final")
			assert.ErrorIs(t, runner.Revert(got, "again", t0), runner.ErrRolledBack)
		})
	}
}

// A reverted run whose rollback is interrupted (a crash, a cancel)
// resumes as a rollback, still one that was asked for; a component left
// Running by a killed process is rolled back as one that started.
func TestRevertResumes(t *testing.T) {
	p := plan1(t, c("a"), c("b", "a"), c("c", "b"))
	st, err := runner.New(newUndoer()).Execute(context.Background(), p, nil)
	require.NoError(t, err)
	st.Hops[0].Components[2].Phase = record.Running // as a killed process leaves it
	st.Phase = record.Running
	require.NoError(t, runner.Revert(st, "", t0))
	assert.Equal(t, "rollback requested", st.LastFailure.Error)
	assert.Equal(t, record.Cancelled, compStatus(t, st, 0, "c").Phase)

	ctx, cancel := context.WithCancel(context.Background())
	u := newUndoer()
	u.onRollback = func(name string) {
		if name == "b" {
			cancel()
		}
	}
	var cps snapshots
	stopped, err := runner.New(u, runner.WithMaxParallel(1), runner.WithCheckpointer(&cps)).Execute(ctx, p, st)
	require.ErrorIs(t, err, runner.ErrRollbackFailed)
	require.NotErrorIs(t, err, runner.ErrRolledBack, "not rolled back: interrupted")
	assert.Equal(t, record.Cancelled, stopped.Phase)
	assert.Equal(t, record.RollingBack, stopped.Hops[0].Phase)

	second := newUndoer()
	got, err := runner.New(second).Execute(context.Background(), p, cps.last())
	require.ErrorIs(t, err, runner.ErrRolledBack)
	require.NotErrorIs(t, err, runner.ErrRollbackFailed)
	assert.Equal(t, record.RolledBack, got.Phase)
	assert.Equal(t, map[string]int{"a": 1}, second.undone, "what was rolled back before the stop is not rolled back again")
	assert.Equal(t, 1, u.undone["c"]+second.undone["c"])
}

// Revert refuses what cannot be rolled back, saying why.
func TestRevertRefuses(t *testing.T) {
	p := plan1(t, c("a"))
	abandoned := runner.NewStatus(p)
	abandoned.Phase = record.Failed
	abandoned.Hops[0].Components[0].Attempts = 1
	require.NoError(t, abandoned.Abandon("by hand", t0))
	for _, tt := range []struct {
		name string
		s    *record.Status
		err  string
	}{
		{"never started", runner.NewStatus(p), "runner: cannot revert v1.0 -> v2.0: no component of it has started, so there is nothing to roll back"},
		{"abandoned", abandoned, "runner: run was abandoned: v1.0 -> v2.0 was abandoned (by hand): an abandoned run is not rolled back; undo what it changed by hand, or start a new run"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.EqualError(t, runner.Revert(tt.s, "x", t0), tt.err)
		})
	}
}
