package runner_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// richStatus runs a plan that fills every field of a Status: failures,
// a panic stack, skips, a retry, checks and warnings, times and durations
// from a fake clock that each attempt moves by one second.
func richStatus(t *testing.T) *record.Status {
	t.Helper()
	clock := fakeClock()
	fake := runnertest.New().
		Script("fails", runnertest.Script{FailAlways: true}).
		Script("panics", runnertest.Script{Panic: true}).
		Script("retries", runnertest.Script{FailFirst: 1}).
		Script("skips", runnertest.Script{Skip: "already at target"})
	fake.OnStart = func(runner.Task) { clock.Advance(time.Second) }
	ok := func(context.Context, runner.CheckTask) error { return nil }
	bad := func(context.Context, runner.CheckTask) error { return assert.AnError }
	e := runner.New(fake, runner.WithClock(clock), runner.WithMaxParallel(1),
		runner.WithCheck("healthy", ok), runner.WithCheck("mirror", bad))
	p := planOf(hop{
		g:   graphOf(t, c("fails"), c("panics"), c("retries").with(retries(2, 0, 0)), c("skips"), c("after", "fails"), c("ok", "skips")),
		pre: []release.Check{{Name: "healthy", Required: true}, {Name: "mirror"}},
	}, hop{g: graphOf(t, c("later"))})
	st, err := e.Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	require.NotEmpty(t, compStatus(t, st, 0, "panics").Stack)
	require.NotEmpty(t, st.Hops[0].Warnings)
	return st
}

func TestStatusRoundTrip(t *testing.T) {
	st := richStatus(t)
	t.Run("json", func(t *testing.T) {
		b, err := json.Marshal(st)
		require.NoError(t, err)
		var back record.Status
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, st, &back, "json round trip (-want +got)")

		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		for _, k := range []string{"phase", "from", "to", "currentHop", "hops", "progress", "lastFailure", "code", "message", "startedAt", "finishedAt", "runs"} {
			assert.Contains(t, m, k, "json field %q", k)
		}
		hop := m["hops"].([]any)[0].(map[string]any)
		for _, k := range []string{"from", "to", "phase", "code", "message", "startedAt", "finishedAt", "duration", "checks", "components", "warnings"} {
			assert.Contains(t, hop, k, "json hop field %q", k)
		}
		var comp map[string]any // the component "fails"
		for _, x := range hop["components"].([]any) {
			if x.(map[string]any)["name"] == "fails" {
				comp = x.(map[string]any)
			}
		}
		require.NotNil(t, comp, "component fails in the json")
		for _, k := range []string{"name", "fromVersion", "toVersion", "phase", "attempts", "startedAt", "finishedAt", "duration", "code", "error"} {
			assert.Contains(t, comp, k, "json component field %q", k)
		}
		assert.Equal(t, "1s", comp["duration"], "durations are written as Go durations")
	})
	t.Run("yaml", func(t *testing.T) {
		b, err := yaml.Marshal(st)
		require.NoError(t, err)
		var back record.Status
		require.NoError(t, yaml.Unmarshal(b, &back))
		assert.Equal(t, st, &back, "yaml round trip (-want +got)")
		assert.Contains(t, string(b), "currentHop: 0\n")
		assert.Contains(t, string(b), "lastFailure:\n")
	})
	t.Run("pending status", func(t *testing.T) {
		st := runner.NewStatus(plan1(t, c("a")))
		b, err := json.Marshal(st)
		require.NoError(t, err)
		assert.JSONEq(t, `{"phase":"Pending","from":"v1.0","to":"v2.0","currentHop":0,"runs":0,"progress":{"done":0,"total":1},
			"hops":[{"from":"v1.0","to":"v2.0","phase":"Pending","components":[{"name":"a","fromVersion":"v1.0.0","toVersion":"v1.1.0","phase":"Pending","attempts":0}]}]}`, string(b))
	})
}

func TestStatusDeepCopy(t *testing.T) {
	st := richStatus(t)
	before, err := json.Marshal(st)
	require.NoError(t, err)

	cp := st.DeepCopy()
	require.Equal(t, st, cp, "DeepCopy equals the original")
	cp.Hops[0].Components[0].Phase = record.Pending
	cp.Hops[0].Components[0].Error = "changed"
	cp.Hops[0].Checks[0].Error = "changed"
	cp.Hops[0].Warnings[0] = "changed"
	cp.Hops[0].Components = append(cp.Hops[0].Components, record.ComponentStatus{Name: "extra"})
	cp.Hops = append(cp.Hops, record.HopStatus{From: "x"})
	cp.LastFailure.Error = "changed"
	cp.Progress.Done = 99

	after, err := json.Marshal(st)
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(after), "the original after changing its copy")

	var into record.Status
	st.DeepCopyInto(&into)
	assert.Equal(t, st, &into, "DeepCopyInto")
	var hop record.HopStatus
	st.Hops[0].DeepCopyInto(&hop)
	hop.Components[0].Name = "changed"
	assert.NotEqual(t, "changed", st.Hops[0].Components[0].Name, "HopStatus.DeepCopyInto shares components")

	var nilStatus *record.Status
	assert.Nil(t, nilStatus.DeepCopy(), "DeepCopy of nil")
}

func TestStatusAbandon(t *testing.T) {
	p := plan1(t, c("a"), c("b", "a"))
	fake := runnertest.New().Script("a", runnertest.Script{FailAlways: true})
	st, err := runner.New(fake).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)

	at := t0.Add(time.Hour)
	require.NoError(t, st.Abandon("operator gave up", at), "Abandon of a failed run")
	assert.Equal(t, record.Abandoned, st.Phase, "Status.Phase")
	assert.Equal(t, record.CodeAbandoned, st.Code, "Status.Code")
	assert.Equal(t, "operator gave up", st.Message, "Status.Message")
	assert.Equal(t, at, st.FinishedAt, "Status.FinishedAt")

	kept := st.DeepCopy()
	got, err := runner.New(fake).Execute(context.Background(), p, st)
	require.ErrorIs(t, err, runner.ErrAbandoned, "Execute of an abandoned status")
	assert.Contains(t, err.Error(), "operator gave up", "the error says why")
	assert.Contains(t, err.Error(), "start a new run", "the error says what to do")
	assert.Equal(t, kept, got, "Execute returns the abandoned status unchanged")
	assert.Equal(t, kept, st, "Execute does not change prev")
	assert.Equal(t, 1, fake.Attempts("a"), "nothing ran again")

	ok, err := runner.New(runnertest.New()).Execute(context.Background(), p, nil)
	require.NoError(t, err)
	assert.Error(t, ok.Abandon("too late", at), "Abandon of a run that succeeded")
	assert.Equal(t, record.Succeeded, ok.Phase, "phase after a refused Abandon")
}

func TestStatusComponent(t *testing.T) {
	st := runner.NewStatus(planOf(hop{g: graphOf(t, c("a"), c("b"))}, hop{g: graphOf(t, c("b"))}))
	tests := []struct {
		hop  int
		name string
		ok   bool
	}{
		{0, "a", true}, {0, "b", true}, {1, "b", true}, {1, "a", false}, {2, "a", false}, {-1, "a", false},
	}
	for _, tt := range tests {
		cs, ok := st.Component(tt.hop, tt.name)
		require.Equal(t, tt.ok, ok, "Component(%d, %q) found", tt.hop, tt.name)
		if ok {
			assert.Equal(t, tt.name, cs.Name)
			cs.Attempts = 7
			assert.Equal(t, 7, compStatus(t, st, tt.hop, tt.name).Attempts, "Component returns a pointer into the status")
		}
	}
}
