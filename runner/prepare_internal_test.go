package runner

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
)

// preparePlan is a one-hop plan v1.0 -> v2.0 of components a and b (b
// depends on a).
func preparePlan(t *testing.T) *Plan {
	t.Helper()
	v1, v2 := release.MustParseVersion("v1.0"), release.MustParseVersion("v2.0")
	node := func(name string, deps ...string) dag.Node {
		return dag.Node{Name: name, Deps: deps,
			From: &release.ComponentVersion{Name: name, Version: release.MustParseVersion("v1.0.0")},
			To:   &release.ComponentVersion{Name: name, Version: release.MustParseVersion("v1.1.0"), Type: release.TypeInline, Dependencies: deps}}
	}
	g, err := dag.New([]dag.Node{node("b", "a"), node("a")})
	require.NoError(t, err)
	h := path.Hop{From: v1, To: v2}
	return &Plan{Route: &path.Route{From: v1, To: v2, Hops: []path.Hop{h}}, Hops: []*HopPlan{{Hop: h, Graph: g}}}
}

// TestPrepare checks the prepared form of a run: its status as the run
// starts, its policy and until step, and, for what it refuses, the error
// and the status Execute returns with it.
func TestPrepare(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var ok rollbacker
	fresh := func(t *testing.T, p *Plan) *record.Status { return NewStatus(p) }
	withPhase := func(ph record.Phase, policy string) func(*testing.T, *Plan) *record.Status {
		return func(t *testing.T, p *Plan) *record.Status {
			s := NewStatus(p)
			s.Phase, s.Runs, s.FailurePolicy, s.StartedAt = ph, 1, policy, now.Add(-time.Hour)
			s.LastFailure = &record.Failure{Component: "a", Code: record.CodeComponentFailed, Error: "boom"}
			return s
		}
	}
	tests := []struct {
		name string
		opts []Option
		prev func(*testing.T, *Plan) *record.Status // nil: a new run
		// on success
		done        bool
		runs        int
		policy      FailurePolicy
		until       string
		lastFailure bool
		// on error
		err        error
		wantStatus bool // refused returns a copy of prev
	}{
		{name: "new run", runs: 1, policy: ContinueIndependent},
		{name: "new run with until", opts: []Option{WithUntil("v2.0/a")}, runs: 1, until: "v2.0/a"},
		{name: "resumed run keeps its recorded policy", prev: withPhase(record.Failed, "rollback"), runs: 2, policy: Rollback},
		{name: "an explicit policy wins over the recorded one", opts: []Option{WithFailurePolicy(FailFast)}, prev: withPhase(record.Failed, "rollback"), runs: 2, policy: FailFast},
		{name: "a resumed rollback keeps its last failure", prev: func(t *testing.T, p *Plan) *record.Status {
			s := withPhase(record.RollingBack, "rollback")(t, p)
			s.Hops[0].Phase = record.RollingBack
			return s
		}, runs: 2, policy: Rollback, lastFailure: true},
		{name: "succeeded status is done", prev: withPhase(record.Succeeded, ""), done: true, runs: 1},
		{name: "unknown recorded policy", prev: withPhase(record.Failed, "sometimes"), err: ErrPlanMismatch, wantStatus: true},
		{name: "abandoned status", prev: withPhase(record.Abandoned, ""), err: ErrAbandoned, wantStatus: true},
		{name: "status of another plan", prev: func(t *testing.T, p *Plan) *record.Status {
			s := fresh(t, p)
			s.To = "v3.0"
			return s
		}, err: ErrPlanMismatch, wantStatus: true},
		{name: "until step the plan lacks", opts: []Option{WithUntil("v9.0")}, err: ErrInvalidPlan},
		{name: "gate on a component the plan lacks", opts: []Option{WithGates("v2.0/zz")}, err: ErrInvalidPlan},
		{name: "check without a function", opts: []Option{WithCheck("ready", nil)}, err: ErrInvalidPlan},
		{name: "plan problem refuses a resumable status with none", opts: []Option{WithUntil("v9.0")}, prev: withPhase(record.Failed, ""), err: ErrInvalidPlan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := preparePlan(t)
			var prev *record.Status
			if tt.prev != nil {
				prev = tt.prev(t, p)
			}
			before := prev.DeepCopy()
			e := New(ok, append([]Option{WithClock(fixedClock{now})}, tt.opts...)...)
			pr, err := e.prepare(p, prev)
			assert.Equal(t, before, prev, "prepare changed prev")
			if tt.err != nil {
				require.Error(t, err, "prepare = %+v, want an error matching %v", pr, tt.err)
				assert.ErrorIs(t, err, tt.err)
				got := refused(prev, err)
				if tt.wantStatus {
					assert.Equal(t, prev, got, "refused(prev, %v) = %+v, want a copy of prev", err, got)
					assert.NotSame(t, prev, got, "refused returned prev itself, want a copy")
				} else {
					assert.Nil(t, got, "refused(prev, %v) = %+v, want nil", err, got)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.done, pr.done, "done")
			assert.Equal(t, tt.runs, pr.s.Runs, "Status.Runs")
			if tt.done {
				assert.Equal(t, record.Succeeded, pr.s.Phase)
				return
			}
			assert.Equal(t, record.Running, pr.s.Phase, "Status.Phase")
			assert.Equal(t, now, pr.started, "started")
			assert.Equal(t, tt.policy, pr.e.policy, "policy")
			assert.Equal(t, tt.policy.record(), pr.s.FailurePolicy, "Status.FailurePolicy")
			assert.Equal(t, record.Progress{Total: 2}, pr.s.Progress, "Status.Progress")
			assert.Equal(t, tt.lastFailure, pr.s.LastFailure != nil, "Status.LastFailure kept")
			// Order is the batch order: a before b.
			order := map[string]int{}
			for _, c := range pr.s.Hops[0].Components {
				order[c.Name] = c.Order
			}
			assert.Equal(t, map[string]int{"a": 1, "b": 2}, order, "ComponentStatus.Order")
			if tt.until == "" {
				assert.Nil(t, pr.until, "until")
			} else if assert.NotNil(t, pr.until, "until") {
				assert.Equal(t, tt.until, pr.until.name)
			}
			if prev != nil {
				assert.NotSame(t, prev, pr.s, "the prepared status is prev itself, want a copy")
			}
		})
	}
}

// rollbacker succeeds at everything.
type rollbacker struct{}

func (rollbacker) Run(context.Context, Task) error      { return nil }
func (rollbacker) Rollback(context.Context, Task) error { return nil }

// fixedClock is a Clock whose Now is always the same.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                       { return c.t }
func (fixedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (fixedClock) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
