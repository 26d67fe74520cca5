package runner_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// end is a hop's or component's phase, code and message (reason) as one
// string: "Cancelled ABANDONED interrupted: abandoned (gave up)".
func end(phase record.Phase, code record.Code, msg string) string {
	return fmt.Sprintf("%s %s %s", phase, code, msg)
}

// ends are the ends of hop h and of its components, by name.
func ends(st *record.Status, h int) (string, map[string]string) {
	hs := st.Hops[h]
	cs := map[string]string{}
	for _, c := range hs.Components {
		cs[c.Name] = end(c.Phase, c.Code, c.Reason)
	}
	return end(hs.Phase, hs.Code, hs.Message), cs
}

// Abandon ends for good what the run left unfinished: after it no hop and
// no component is Pending, Running, waiting, paused or rolling back, and
// each says whether it was interrupted or never started. What finished
// keeps its record.
func TestAbandonEndsTheUnfinished(t *testing.T) {
	const why = "gave up"
	var (
		interrupted = end(record.Cancelled, record.CodeAbandoned, "interrupted: abandoned (gave up)")
		notStarted  = end(record.Cancelled, record.CodeAbandoned, "not started: abandoned (gave up)")
		rbStopped   = end(record.RollbackFailed, record.CodeAbandoned, "rollback interrupted: abandoned (gave up)")
		succeeded   = end(record.Succeeded, "", "")
	)
	type hopEnd struct {
		hop   string
		comps map[string]string
	}
	tests := []struct {
		name string
		// status is the status the run left behind (what the store holds).
		status func(t *testing.T) *record.Status
		want   []hopEnd
	}{{
		name: "killed while db runs",
		status: func(t *testing.T) *record.Status {
			p := planOf(hop{g: graphOf(t, c("db"), c("api", "db"))}, hop{g: graphOf(t, c("db"))})
			var cps snapshots
			var crashed *record.Status
			fake := runnertest.New()
			fake.OnStart = func(task runner.Task) {
				if task.HopIndex == 0 && task.Component == "db" {
					crashed = cps.last() // what a SIGKILL now leaves
				}
			}
			_, err := runner.New(fake, runner.WithCheckpointer(&cps)).Execute(context.Background(), p, nil)
			require.NoError(t, err)
			require.NotNil(t, crashed)
			require.Equal(t, record.Running, compStatus(t, crashed, 0, "db").Phase, "db in the crash checkpoint")
			return crashed
		},
		want: []hopEnd{
			{interrupted, map[string]string{"db": interrupted, "api": notStarted}},
			{notStarted, map[string]string{"db": notStarted}},
		},
	}, {
		name: "failed run",
		status: func(t *testing.T) *record.Status {
			p := plan1(t, c("a"), c("b", "a"))
			fake := runnertest.New().Script("a", runnertest.Script{FailAlways: true})
			st, err := runner.New(fake).Execute(context.Background(), p, nil)
			require.ErrorIs(t, err, runner.ErrRunFailed)
			return st
		},
		want: []hopEnd{{
			end(record.Failed, record.CodeComponentFailed, "component a failed: a attempt 1: runnertest: scripted failure"),
			map[string]string{
				"a": end(record.Failed, record.CodeComponentFailed, ""),
				"b": end(record.Skipped, record.CodeDependencyFailed, "dependency a failed"),
			},
		}},
	}, {
		name: "component waiting for approval",
		status: func(t *testing.T) *record.Status {
			p := plan1(t, c("a"), c("b", "a").with(gated("")), c("c", "b"))
			st, err := runner.New(runnertest.New()).Execute(context.Background(), p, nil)
			require.ErrorIs(t, err, runner.ErrWaitingForApproval)
			return st
		},
		want: []hopEnd{{interrupted, map[string]string{"a": succeeded, "b": notStarted, "c": notStarted}}},
	}, {
		name: "hop waiting for approval",
		status: func(t *testing.T) *record.Status {
			p := planOf(hop{g: graphOf(t, c("a"))}, hop{g: graphOf(t, c("a"))})
			p.Hops[1].Rule.Gate = &release.Gate{Reason: "change window"}
			st, err := runner.New(runnertest.New()).Execute(context.Background(), p, nil)
			require.ErrorIs(t, err, runner.ErrWaitingForApproval)
			return st
		},
		want: []hopEnd{
			{succeeded, map[string]string{"a": succeeded}},
			{notStarted, map[string]string{"a": notStarted}},
		},
	}, {
		name: "phase waiting for approval",
		status: func(t *testing.T) *record.Status {
			p := plan1(t, c("api").with(lifecycle("rollout", "drain", "rollout")))
			st, err := runner.New(&phasedRunner{}).Execute(context.Background(), p, nil)
			require.ErrorIs(t, err, runner.ErrWaitingForApproval)
			return st
		},
		want: []hopEnd{{interrupted, map[string]string{"api": interrupted}}},
	}, {
		name: "paused at until",
		status: func(t *testing.T) *record.Status {
			p := plan1(t, c("a"), c("b", "a"), c("x"))
			st, err := runner.New(runnertest.New(), runner.WithMode(runner.Batch), runner.WithUntil("v2.0/a")).Execute(context.Background(), p, nil)
			require.ErrorIs(t, err, runner.ErrUntilReached)
			return st
		},
		want: []hopEnd{{interrupted, map[string]string{"a": succeeded, "b": notStarted, "x": notStarted}}},
	}, {
		name: "killed while rolling back",
		status: func(t *testing.T) *record.Status {
			p := plan1(t, c("a"), c("b", "a"), c("c", "b"))
			var cps snapshots
			var crashed *record.Status
			u := newUndoer("c")
			u.onRollback = func(name string) {
				if name == "b" {
					crashed = cps.last()
				}
			}
			_, err := runner.New(u, runner.WithFailurePolicy(runner.Rollback), runner.WithCheckpointer(&cps), runner.WithMaxParallel(1)).
				Execute(context.Background(), p, nil)
			require.ErrorIs(t, err, runner.ErrRunFailed)
			require.NotNil(t, crashed)
			require.Equal(t, record.RollingBack, crashed.Hops[0].Phase, "hop in the crash checkpoint")
			return crashed
		},
		want: []hopEnd{{rbStopped, map[string]string{
			"a": succeeded, // its rollback never started: it is at its target
			"b": rbStopped,
			"c": end(record.RolledBack, "", "rolled back to v1.0.0"),
		}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.status(t)
			at := t0.Add(time.Hour)
			require.NoError(t, st.Abandon(why, at))
			assert.Equal(t, record.Abandoned, st.Phase, "run phase")
			assert.Equal(t, record.CodeAbandoned, st.Code, "run code")
			assert.Equal(t, why, st.Message, "run message")
			assert.Equal(t, at, st.FinishedAt, "run finishedAt")
			assert.Empty(t, st.Waiting, "an abandoned run waits for no approval")
			require.Len(t, st.Hops, len(tt.want), "hops")
			for i, w := range tt.want {
				hop, comps := ends(st, i)
				assert.Equal(t, w.hop, hop, "hop %d", i+1)
				assert.Equal(t, w.comps, comps, "hop %d components (-want +got)", i+1)
			}
			for _, h := range st.Hops {
				for _, c := range h.Components {
					assert.True(t, c.Phase.Terminal() || c.Phase == record.RolledBack || c.Phase == record.RollbackFailed,
						"component %s ends %s, not a final phase", c.Name, c.Phase)
				}
			}
			// Abandon again changes nothing below the run.
			hops := st.DeepCopy().Hops
			require.NoError(t, st.Abandon(why, at))
			assert.Equal(t, hops, st.Hops, "a second Abandon")
		})
	}
}

// An empty reason still says abandoned.
func TestAbandonWithoutReason(t *testing.T) {
	st := runner.NewStatus(plan1(t, c("a")))
	require.NoError(t, st.Abandon("", t0))
	hop, comps := ends(st, 0)
	assert.Equal(t, end(record.Cancelled, record.CodeAbandoned, "not started: abandoned"), hop)
	assert.Equal(t, map[string]string{"a": end(record.Cancelled, record.CodeAbandoned, "not started: abandoned")}, comps)
}
