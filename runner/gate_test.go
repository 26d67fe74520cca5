package runner_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

func gated(reason string) func(*release.ComponentVersion) {
	return func(cv *release.ComponentVersion) { cv.Gate = &release.Gate{Reason: reason} }
}

// A gated component waits; its dependents stay Pending, independent
// components run. A new run of that status (a restart) does not pass the
// gate; an approval does, and is recorded.
func TestComponentGate(t *testing.T) {
	p := plan1(t, c("a"), c("b", "a").with(gated("check the dashboards")), c("c", "b"), c("d"))
	fake := runnertest.New()
	var cps snapshots
	e := runner.New(fake, runner.WithCheckpointer(&cps))
	st, err := e.Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrWaitingForApproval)
	assert.NotErrorIs(t, err, runner.ErrRunFailed)
	var ge *runner.GateError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, []string{"v2.0/b"}, ge.Steps)
	assert.Equal(t, record.WaitingForApproval, st.Phase, "run phase")
	assert.Equal(t, record.CodeWaitingForApproval, st.Code)
	assert.Equal(t, record.WaitingForApproval, st.Hops[0].Phase, "hop phase")
	assert.Equal(t, map[string]record.Phase{"a": record.Succeeded, "b": record.WaitingForApproval, "c": record.Pending, "d": record.Succeeded}, phases(st, 0))
	assert.Equal(t, "waiting for approval of v2.0/b: check the dashboards", compStatus(t, st, 0, "b").Reason)
	assert.Equal(t, []string{"v2.0/b"}, st.Waiting)
	assert.Equal(t, st, cps.last(), "the store holds what Execute returned")

	// A restart is not an approval.
	st, err = runner.New(fake).Execute(context.Background(), p, cps.last())
	require.ErrorIs(t, err, runner.ErrWaitingForApproval)
	assert.Equal(t, record.WaitingForApproval, compStatus(t, st, 0, "b").Phase, "b after a restart")
	assert.Empty(t, attemptsOf(fake.Records(), "b"), "b never ran")

	require.ErrorIs(t, st.Approve("v2.0/c", "ops", t0), record.ErrNotWaiting, "c does not wait")
	require.NoError(t, st.Approve("v2.0/b", "alice", t0))
	require.ErrorIs(t, st.Approve("v2.0/b", "bob", t0), record.ErrNotWaiting, "approved twice")
	st, err = runner.New(fake).Execute(context.Background(), p, st)
	require.NoError(t, err)
	assert.Equal(t, record.Succeeded, st.Phase)
	assert.Equal(t, []record.Approval{{Step: "v2.0/b", By: "alice", At: t0}}, st.Approvals)
	assert.Empty(t, st.Waiting)
	assert.Equal(t, []int{1}, attemptsOf(fake.Records(), "c"))
	assert.NoError(t, runnertest.CheckOrder(p.Hops[0].Graph, 0, fake.Records()))
}

// A gate on a hop (its rule's gate) stops the run before the hop.
func TestHopGate(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"))}, hop{g: graphOf(t, c("a"))})
	p.Hops[1].Rule.Gate = &release.Gate{Reason: "change window"}
	fake := runnertest.New()
	st, err := runner.New(fake).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrWaitingForApproval)
	assert.Equal(t, []record.Phase{record.Succeeded, record.WaitingForApproval}, []record.Phase{st.Hops[0].Phase, st.Hops[1].Phase})
	assert.Equal(t, "waiting for approval of v3.0: change window", st.Hops[1].Message)
	assert.Equal(t, record.Pending, st.Hops[1].Components[0].Phase)
	require.NoError(t, st.Approve("v3.0", "alice", t0))
	st, err = runner.New(fake).Execute(context.Background(), p, st)
	require.NoError(t, err)
	assert.Equal(t, record.Succeeded, st.Phase)
	assert.Len(t, fake.Records(), 2)
}

// phasedRunner enters each declared phase of the component in order,
// from the one its record names, and logs what it ran.
type phasedRunner struct {
	mu  sync.Mutex
	ran []string
}

func (r *phasedRunner) Run(ctx context.Context, t runner.Task) error {
	from := 0
	for i, p := range t.To.Phases {
		if p.Name == t.Step {
			from = i
		}
	}
	for _, p := range t.To.Phases[from:] {
		if err := t.Enter(ctx, p.Name); err != nil {
			return err
		}
		r.mu.Lock()
		r.ran = append(r.ran, t.Component+"/"+p.Name)
		r.mu.Unlock()
	}
	return nil
}

func (r *phasedRunner) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ran...)
}

func lifecycle(gated string, names ...string) func(*release.ComponentVersion) {
	return func(cv *release.ComponentVersion) {
		for _, n := range names {
			p := release.LifecyclePhase{Name: n, Handler: n}
			if n == gated {
				p.Gate = &release.Gate{}
			}
			cv.Phases = append(cv.Phases, p)
		}
	}
}

// A gate on a declared phase: the phases before it run, the component
// waits at it (its record names it) and, once approved, continues there
// after a crash: a new executor, the stored status.
func TestPhaseGateSurvivesCrash(t *testing.T) {
	p := plan1(t, c("api").with(lifecycle("rollout", "drain", "upgrade", "rollout")))
	var cps snapshots
	first := &phasedRunner{}
	st, err := runner.New(first, runner.WithCheckpointer(&cps)).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrWaitingForApproval)
	assert.Equal(t, []string{"api/drain", "api/upgrade"}, first.log())
	cs := compStatus(t, st, 0, "api")
	assert.Equal(t, record.WaitingForApproval, cs.Phase)
	assert.Equal(t, "rollout", cs.Step)
	assert.Equal(t, []string{"v2.0/api/rollout"}, st.Waiting)

	stored := cps.last()
	require.NoError(t, stored.Approve("v2.0/api/rollout", "alice", t0))
	second := &phasedRunner{}
	st, err = runner.New(second).Execute(context.Background(), p, stored)
	require.NoError(t, err)
	assert.Equal(t, record.Succeeded, st.Phase)
	assert.Equal(t, []string{"api/rollout"}, second.log(), "continues at the gated phase")
	assert.Equal(t, 1, compStatus(t, st, 0, "api").Attempts, "a wait at a gate is not another attempt")
}

// Until HOP stops after the hop; the next run continues.
func TestUntilHop(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"))}, hop{g: graphOf(t, c("a"))}, hop{g: graphOf(t, c("a"))})
	fake := runnertest.New()
	st, err := runner.New(fake, runner.WithUntil("v3.0")).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrUntilReached)
	assert.NotErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, record.Paused, st.Phase)
	assert.Equal(t, record.CodeUntilReached, st.Code)
	assert.Equal(t, []record.Phase{record.Succeeded, record.Succeeded, record.Pending}, []record.Phase{st.Hops[0].Phase, st.Hops[1].Phase, st.Hops[2].Phase})
	st, err = runner.New(fake).Execute(context.Background(), p, st)
	require.NoError(t, err)
	assert.Equal(t, record.Succeeded, st.Phase)
	assert.Len(t, fake.Records(), 3)
}

// Until HOP/COMPONENT runs the component and what it depends on only.
func TestUntilComponent(t *testing.T) {
	for _, mode := range []runner.Mode{runner.Eager, runner.Batch} {
		t.Run(mode.String(), func(t *testing.T) {
			p := plan1(t, c("a"), c("x"), c("y", "x"), c("b", "a"), c("c", "b"), c("d", "c"))
			fake := runnertest.New()
			st, err := runner.New(fake, runner.WithMode(mode), runner.WithUntil("v2.0/c")).Execute(context.Background(), p, nil)
			require.ErrorIs(t, err, runner.ErrUntilReached)
			assert.Equal(t, record.Paused, st.Phase)
			assert.Equal(t, record.Paused, st.Hops[0].Phase)
			assert.Equal(t, map[string]record.Phase{"a": record.Succeeded, "b": record.Succeeded, "c": record.Succeeded,
				"d": record.Pending, "x": record.Pending, "y": record.Pending}, phases(st, 0))
			st, err = runner.New(fake).Execute(context.Background(), p, st)
			require.NoError(t, err)
			assert.Equal(t, record.Succeeded, st.Phase)
			assert.NoError(t, runnertest.CheckSucceededOnce(0, fake.Records()))
		})
	}
}

// Until HOP/COMPONENT/PHASE stops the component before the phase after.
func TestUntilPhase(t *testing.T) {
	p := plan1(t, c("api").with(lifecycle("", "drain", "upgrade", "rollout")))
	first := &phasedRunner{}
	st, err := runner.New(first, runner.WithUntil("v2.0/api/upgrade")).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrUntilReached)
	assert.Equal(t, []string{"api/drain", "api/upgrade"}, first.log())
	cs := compStatus(t, st, 0, "api")
	assert.Equal(t, record.Paused, cs.Phase)
	assert.Equal(t, "rollout", cs.Step)
	second := &phasedRunner{}
	st, err = runner.New(second).Execute(context.Background(), p, st)
	require.NoError(t, err)
	assert.Equal(t, []string{"api/rollout"}, second.log())
	assert.Equal(t, record.Succeeded, st.Phase)
	assert.Equal(t, 1, compStatus(t, st, 0, "api").Attempts, "a stop at the until step is not another attempt")
}

func TestUntilUnknownStep(t *testing.T) {
	p := plan1(t, c("a"))
	for step, want := range map[string]string{
		"v9.0":    "until v9.0: the plan has no hop to v9.0; its hops are v2.0",
		"v2.0/zz": "until v2.0/zz: hop v2.0 has no component zz; its components are a",
		"v2.0/a/": "until v2.0/a/: empty phase; write HOP/COMPONENT/PHASE",
		"v2.0/":   "until v2.0/: empty component; write HOP, HOP/COMPONENT or HOP/COMPONENT/PHASE",
	} {
		_, err := runner.New(runnertest.New(), runner.WithUntil(step)).Execute(context.Background(), p, nil)
		assert.ErrorIs(t, err, runner.ErrInvalidPlan, "until %s", step)
		assert.ErrorContains(t, err, want)
	}
	_, err := runner.New(runnertest.New(), runner.WithUntil("v9.0")).Execute(context.Background(), p, nil)
	assert.EqualError(t, err, "runner: invalid plan: until v9.0: the plan has no hop to v9.0; its hops are v2.0")
	assert.False(t, errors.Is(err, runner.ErrUntilReached))
}

// A phase of an exec or manifest component without spec.phases is
// refused in words that read: "an exec component", "a manifest component".
func TestUntilPhaseWithoutPhases(t *testing.T) {
	for typ, want := range map[string]string{
		release.TypeExec:     "x has no phase db: an exec component without spec.phases has no phases to stop at; stop after the component (HOP/x)",
		release.TypeManifest: "x has no phase db: a manifest component without spec.phases has no phases to stop at; stop after the component (HOP/x)",
	} {
		p := plan1(t, c("x").with(func(cv *release.ComponentVersion) { cv.Type = typ }))
		_, err := runner.New(runnertest.New(), runner.WithUntil("v2.0/x/db")).Execute(context.Background(), p, nil)
		assert.ErrorIs(t, err, runner.ErrInvalidPlan, "%s: until v2.0/x/db", typ)
		assert.ErrorContains(t, err, want, "%s: until v2.0/x/db", typ)
	}
}

// WithGates gates a component the catalog does not gate; the gate is
// recorded in the status, so a resumed Execute without the option still
// waits there; an approval passes it. A step the plan lacks is refused.
func TestWithGatesRecorded(t *testing.T) {
	p := plan1(t, c("a"), c("b", "a"))
	fake := runnertest.New()
	st, err := runner.New(fake, runner.WithGates("v2.0/b")).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrWaitingForApproval)
	assert.Equal(t, []string{"v2.0/b"}, st.Gates)
	assert.Equal(t, []string{"v2.0/b"}, st.Waiting)

	st, err = runner.New(fake).Execute(context.Background(), p, st)
	require.ErrorIs(t, err, runner.ErrWaitingForApproval, "a resumed run keeps the recorded gate")
	assert.Empty(t, attemptsOf(fake.Records(), "b"), "b never ran")

	require.NoError(t, st.Approve("v2.0/b", "alice", t0))
	st, err = runner.New(fake).Execute(context.Background(), p, st)
	require.NoError(t, err)
	assert.Equal(t, record.Succeeded, st.Phase)
	assert.Equal(t, []int{1}, attemptsOf(fake.Records(), "b"))

	_, err = runner.New(fake, runner.WithGates("v9")).Execute(context.Background(), p, nil)
	assert.ErrorIs(t, err, runner.ErrInvalidPlan)
	assert.ErrorContains(t, err, "gate v9: the plan has no hop to v9; its hops are v2.0")
	_, err = runner.New(fake, runner.WithGates("v2.0/nosuch")).Execute(context.Background(), p, nil)
	assert.ErrorContains(t, err, "gate v2.0/nosuch: hop v2.0 has no component nosuch")
	for step, want := range map[string]string{
		"v2.0/b/upgrade": "gate v2.0/b/upgrade: a gate added at run time is on a hop (HOP) or a component (HOP/COMPONENT); a phase's gate is declared in the catalog",
		"v2.0/":          "gate v2.0/: empty component; write HOP or HOP/COMPONENT",
	} {
		_, err = runner.New(fake, runner.WithGates(step)).Execute(context.Background(), p, nil)
		assert.ErrorIs(t, err, runner.ErrInvalidPlan, step)
		assert.ErrorContains(t, err, want)
	}
}
