package runner_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// With derives an executor that has e's settings and the options given,
// and leaves e, and every other executor derived from it, as they were:
// an observer or a check added to one copy is not seen by another, even
// when e's observers have room to grow in place.
func TestExecutorWith(t *testing.T) {
	ok := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
	var seen [5]atomic.Int32 // PlanFinished events by observer: base's three, a's, b's
	count := func(i int) runner.Observer {
		return runner.ObserverFunc(func(ev runner.Event) {
			if ev.Type == runner.PlanFinished {
				seen[i].Add(1)
			}
		})
	}
	check := func(context.Context, runner.CheckTask) error { return nil }
	// Three observers: the slice's capacity (4) exceeds its length.
	base := runner.New(ok, runner.WithObserver(count(0)), runner.WithObserver(count(1)), runner.WithObserver(count(2)))
	cp := &snapshots{}
	a := base.With(runner.WithObserver(count(3)), runner.WithCheckpointer(cp), runner.WithCheck("ready", check))
	b := base.With(runner.WithObserver(count(4)))

	checked := planOf(hop{g: graphOf(t, c("x")), pre: []release.Check{{Name: "ready"}}})
	for _, tc := range []struct {
		name      string
		e         *runner.Executor
		wantCheck bool  // runs a plan with hop check "ready"
		wantSeen  int32 // PlanFinished events a's own observer has seen after the first Execute (a runs twice)
		wantSeenB int32 // and b's
		wantCPs   bool  // a's checkpointer was called
	}{
		{"base", base, false, 0, 0, false},
		{"a, with an observer, a checkpointer and a check", a, true, 1, 0, true},
		{"b, with an observer of its own", b, false, 2, 1, true},
		{"base after a and b ran", base, false, 2, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := [3]int32{seen[0].Load(), seen[1].Load(), seen[2].Load()}
			_, err := tc.e.Execute(t.Context(), plan1(t, c("x")), nil)
			require.NoError(t, err, "Execute of a plan without checks")
			for i := range before {
				assert.Equal(t, before[i]+1, seen[i].Load(), "base's observer %d sees every executor's run", i)
			}
			assert.Equal(t, tc.wantSeen, seen[3].Load(), "PlanFinished events a's observer saw")
			assert.Equal(t, tc.wantSeenB, seen[4].Load(), "PlanFinished events b's observer saw")
			assert.Equal(t, tc.wantCPs, len(cp.list()) > 0, "a's checkpointer was called")

			_, err = tc.e.Execute(t.Context(), checked, nil)
			if tc.wantCheck {
				assert.NoError(t, err, "Execute of a plan with hop check ready")
			} else {
				assert.ErrorContains(t, err, "ready", "Execute of a plan with hop check ready, which only a has")
			}
		})
	}
}
