package runner_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// attemptsOf lists Task.Attempt of each call for component.
func attemptsOf(recs []runnertest.Record, component string) []int {
	var out []int
	for _, r := range recs {
		if r.Component == component {
			out = append(out, r.Attempt)
		}
	}
	return out
}

// Resuming a failed run: what succeeded (or was skipped by its runner) is
// not run again; the failed component runs again, its attempts counting
// on; its dependents run.
func TestResumeAfterFailure(t *testing.T) {
	p := plan1(t, c("a"), c("b", "a"), c("c", "b"), c("s"))
	fake := runnertest.New().
		Script("b", runnertest.Script{FailFirst: 1}).
		Script("s", runnertest.Script{Skip: "nothing to do"})
	e := runner.New(fake)
	st1, err := e.Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	require.Equal(t, map[string]record.Phase{"a": record.Succeeded, "b": record.Failed, "c": record.Skipped, "s": record.Skipped}, phases(st1, 0))
	kept := st1.DeepCopy()

	st2, err := e.Execute(context.Background(), p, st1)
	require.NoError(t, err, "Execute(resume)")
	assert.Equal(t, kept, st1, "Execute does not change prev")
	assert.Equal(t, record.Succeeded, st2.Phase, "Status.Phase")
	assert.Equal(t, 2, st2.Runs, "Status.Runs")
	assert.Empty(t, st2.Code, "Status.Code after a successful resume")
	assert.Equal(t, map[string]record.Phase{"a": record.Succeeded, "b": record.Succeeded, "c": record.Succeeded, "s": record.Skipped}, phases(st2, 0))
	assert.Equal(t, record.Progress{Done: 4, Total: 4}, st2.Progress)

	recs := fake.Records()
	assert.Equal(t, []int{1}, attemptsOf(recs, "a"), "a: not run again")
	assert.Equal(t, []int{1}, attemptsOf(recs, "s"), "s (skipped by its runner): not run again")
	assert.Equal(t, []int{1, 2}, attemptsOf(recs, "b"), "b: attempts count on")
	assert.Equal(t, []int{1}, attemptsOf(recs, "c"), "c: runs once its dependency succeeded")
	assert.Equal(t, 2, compStatus(t, st2, 0, "b").Attempts, "b attempts in the status")
	assert.Equal(t, kept.StartedAt, st2.StartedAt, "StartedAt is the first run's")
	assert.NoError(t, runnertest.CheckSucceededOnce(0, recs))
	assert.NoError(t, runnertest.CheckOrder(p.Hops[0].Graph, 0, recs))
}

// Resuming after a crash, from the checkpoint taken while b was Running:
// b runs again (attempt 2), a does not.
func TestResumeRunningComponent(t *testing.T) {
	p := plan1(t, c("a"), c("b", "a"), c("c", "b"))
	snaps := &snapshots{}
	var crashed *record.Status
	first := runnertest.New()
	first.OnStart = func(task runner.Task) {
		if task.Component == "b" {
			crashed = snaps.last() // what a crash now would leave
		}
	}
	_, err := runner.New(first, runner.WithCheckpointer(snaps)).Execute(context.Background(), p, nil)
	require.NoError(t, err)
	require.NotNil(t, crashed)
	require.Equal(t, record.Running, compStatus(t, crashed, 0, "b").Phase, "b in the crash checkpoint")
	require.Equal(t, record.Running, crashed.Phase, "run in the crash checkpoint")

	second := runnertest.New()
	st, err := runner.New(second).Execute(context.Background(), p, crashed)
	require.NoError(t, err, "Execute(resume after crash)")
	recs := second.Records()
	assert.Empty(t, attemptsOf(recs, "a"), "a succeeded before the crash: not run again")
	assert.Equal(t, []int{2}, attemptsOf(recs, "b"), "b was Running: run again as attempt 2")
	assert.Equal(t, []int{1}, attemptsOf(recs, "c"))
	assert.Equal(t, 2, compStatus(t, st, 0, "b").Attempts, "b attempts")
	assert.Equal(t, 1, compStatus(t, st, 0, "a").Attempts, "a attempts")
	assert.Equal(t, record.Succeeded, st.Phase)
	assert.Equal(t, 2, st.Runs)
}

// A hop that succeeded is skipped on resume: its checks and components do
// not run again and it emits no events.
func TestResumeSkipsCompletedHops(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a1"), c("a2", "a1"))}, hop{g: graphOf(t, c("b1"))})
	fake := runnertest.New().Script("b1", runnertest.Script{FailFirst: 1})
	st1, err := runner.New(fake).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	require.Equal(t, record.Succeeded, st1.Hops[0].Phase)
	require.Equal(t, record.Failed, st1.Hops[1].Phase)

	rec := &recorder{}
	st2, err := runner.New(fake, runner.WithObserver(rec)).Execute(context.Background(), p, st1)
	require.NoError(t, err)
	assert.Equal(t, st1.Hops[0], st2.Hops[0], "hop 1 status unchanged")
	assert.Equal(t, 1, st2.CurrentHop, "CurrentHop")
	recs := fake.Records()
	assert.Equal(t, []int{1}, attemptsOf(recs, "a1"))
	assert.Equal(t, []int{1}, attemptsOf(recs, "a2"))
	assert.Equal(t, []int{1, 2}, attemptsOf(recs, "b1"))
	for _, ev := range rec.all() {
		assert.NotEqual(t, 0, ev.Hop, "event %s of the completed hop 1", ev.Type)
	}
}

func TestResumePlanMismatch(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"), c("b"))}, hop{g: graphOf(t, c("c"))})
	st, err := runner.New(runnertest.New()).Execute(context.Background(), planOf(hop{g: graphOf(t, c("a"))}), nil)
	require.NoError(t, err)
	oneHop := st

	other := runner.NewStatus(p)
	other.From, other.To = "v9.0", "v9.1"

	comps := runner.NewStatus(p)
	comps.Hops[0].Components[1].Name = "z"

	version := runner.NewStatus(p)
	version.Hops[1].Components[0].ToVersion = "v0.0.1"

	hops := runner.NewStatus(p)
	hops.Hops[1].From = "v1.5"

	// The catalog changed what the starting release ships: the plan's
	// Task.From would disagree with what the status says it upgrades from.
	from := runner.NewStatus(p)
	from.Hops[1].Components[0].FromVersion = "v0.9.0"
	added := runner.NewStatus(p)
	added.Hops[0].Components[1].FromVersion = ""

	tests := []struct {
		name string
		prev *record.Status
		want string
	}{
		{"another route", other, "status is for v9.0 -> v9.1, plan is v1.0 -> v3.0"},
		{"another number of hops", oneHop, "status is for v1.0 -> v2.0, plan is v1.0 -> v3.0"},
		{"other components", comps, "hop 1 components differ: status has a@v1.1.0 z@v1.1.0, plan has a@v1.1.0 b@v1.1.0"},
		{"other versions", version, "hop 2 components differ: status has c@v0.0.1, plan has c@v1.1.0"},
		{"another hop", hops, "hop 2 is v1.5 -> v3.0 in the status, v2.0 -> v3.0 in the plan"},
		{"another from-version", from, "hop 2: c is upgraded from v0.9.0 in the status, from v1.0.0 in the plan (the catalog changed what v2.0 ships)"},
		{"new in the status", added, "hop 1: b is upgraded from none in the status, from v1.0.0 in the plan (the catalog changed what v1.0 ships)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := runnertest.New()
			kept := tt.prev.DeepCopy()
			got, err := runner.New(fake).Execute(context.Background(), p, tt.prev)
			require.ErrorIs(t, err, runner.ErrPlanMismatch)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, kept, got, "the status returned is prev, unchanged")
			assert.Empty(t, fake.Records(), "nothing ran")
		})
	}
	t.Run("hop count", func(t *testing.T) {
		short := runner.NewStatus(p)
		short.Hops = short.Hops[:1]
		_, err := runner.New(runnertest.New()).Execute(context.Background(), p, short)
		require.ErrorIs(t, err, runner.ErrPlanMismatch)
		assert.Contains(t, err.Error(), "status has 1 hops, plan has 2")
	})
}

func TestResumeSucceeded(t *testing.T) {
	p := plan1(t, c("a"))
	fake := runnertest.New()
	st, err := runner.New(fake).Execute(context.Background(), p, nil)
	require.NoError(t, err)
	again, err := runner.New(fake).Execute(context.Background(), p, st)
	require.NoError(t, err, "Execute of a succeeded status")
	assert.Equal(t, st, again, "status of a succeeded run")
	assert.NotSame(t, st, again, "a copy")
	assert.Equal(t, 1, fake.Attempts("a"), "nothing ran again")
}

// Resuming a cancelled run: the hops it never reached were recorded
// Cancelled, and run now; what succeeded before the cancel does not run again.
func TestResumeAfterCancel(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a1"), c("a2", "a1"))}, hop{g: graphOf(t, c("b1"))})
	ctx, cancel := context.WithCancel(context.Background())
	fake := runnertest.New().Script("a2", runnertest.Script{Hang: true})
	fake.OnStart = func(t runner.Task) {
		if t.Component == "a2" {
			cancel()
		}
	}
	st1, err := runner.New(fake).Execute(ctx, p, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, map[string]record.Phase{"a1": record.Succeeded, "a2": record.Cancelled}, phases(st1, 0))
	require.Equal(t, record.Cancelled, st1.Hops[1].Phase, "hop 2 never started")
	require.Equal(t, map[string]record.Phase{"b1": record.Cancelled}, phases(st1, 1))

	fake.Script("a2", runnertest.Script{})
	fake.OnStart = nil
	st2, err := runner.New(fake).Execute(context.Background(), p, st1)
	require.NoError(t, err, "Execute(resume)")
	assert.Equal(t, record.Succeeded, st2.Phase)
	recs := fake.Records()
	assert.Equal(t, []int{1}, attemptsOf(recs, "a1"), "a1 succeeded before the cancel")
	assert.Equal(t, []int{1, 2}, attemptsOf(recs, "a2"), "a2 was cancelled while running: run again")
	assert.Equal(t, []int{1}, attemptsOf(recs, "b1"), "b1 runs once its hop is reached")
	assert.Equal(t, record.Progress{Done: 3, Total: 3}, st2.Progress)
}
