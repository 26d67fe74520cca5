package runner_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// scenario is one random run: a DAG, scripted behaviours and settings.
type scenario struct {
	g           *dag.Graph
	scripts     map[string]runnertest.Script
	attempts    map[string]int // retries.Attempts of each component
	maxParallel int
	groupLimits map[string]int
	mode        runner.Mode
	policy      runner.FailurePolicy
	maxFailures int // of the policy; 0 for ContinueIndependent
}

func (s scenario) String() string {
	return fmt.Sprintf("%d components, %d edges, mode %s, policy %s, MaxParallel %d, groups %v",
		s.g.Len(), s.g.NumEdges(), s.mode, s.policy, s.maxParallel, s.groupLimits)
}

func randomScenario(t *testing.T, rnd *rand.Rand) scenario {
	s := scenario{scripts: map[string]runnertest.Script{}, attempts: map[string]int{}, groupLimits: map[string]int{}}
	n := 5 + rnd.IntN(36)
	nodes := make([]dag.Node, n)
	for i := range nodes {
		name := fmt.Sprintf("c%02d", i)
		var deps []string
		for _, j := range rnd.Perm(i)[:rnd.IntN(min(i, 4)+1)] {
			deps = append(deps, fmt.Sprintf("c%02d", j))
		}
		to := &release.ComponentVersion{Name: name, Version: release.MustParseVersion("v1.1.0"), Dependencies: deps}
		attempts := 1 + rnd.IntN(3)
		to.Retries = &release.Retries{Attempts: attempts, Backoff: release.D(time.Duration(rnd.IntN(1000)) * time.Microsecond)}
		s.attempts[name] = attempts
		switch x := rnd.Float64(); {
		case x < 0.15:
			to.Group = "g1"
		case x < 0.3:
			to.Group = "g2"
		}
		script := runnertest.Script{Delay: time.Duration(rnd.IntN(2000)) * time.Microsecond}
		switch x := rnd.Float64(); {
		case x < 0.08:
			script.FailAlways = true
		case x < 0.14:
			script.FailFirst = 1 + rnd.IntN(2)
		case x < 0.17:
			script.FailAlways, script.Permanent = true, true
		case x < 0.19:
			script.Panic = true
		case x < 0.24:
			script.Skip = "nothing to do"
		case x < 0.27:
			script = runnertest.Script{Hang: true}
			to.Timeout = release.D(time.Duration(1+rnd.IntN(2)) * time.Millisecond)
		}
		s.scripts[name] = script
		nodes[i] = dag.Node{Name: name, Deps: deps, To: to}
	}
	g, err := dag.New(nodes)
	require.NoError(t, err)
	s.g = g
	s.maxParallel = rnd.IntN(6)
	if rnd.IntN(2) == 0 {
		s.groupLimits["g1"] = 1 + rnd.IntN(3)
	}
	if rnd.IntN(2) == 0 {
		s.groupLimits["g2"] = 1 + rnd.IntN(3)
	}
	s.mode = []runner.Mode{runner.Eager, runner.Batch}[rnd.IntN(2)]
	s.maxFailures = []int{0, 0, 1, 2, 3}[rnd.IntN(5)]
	s.policy = runner.MaxFailures(s.maxFailures)
	return s
}

// Random DAGs, scripted failures, delays and limits: whatever happens, the
// recording respects dependencies, limits and the failure policy, and the
// status agrees with the recording.
func TestPropertyRandomRuns(t *testing.T) {
	iterations := 200
	if testing.Short() {
		iterations = 40
	}
	for it := range iterations {
		rnd := rand.New(rand.NewPCG(20260601, uint64(it)))
		s := randomScenario(t, rnd)
		t.Run(fmt.Sprintf("seed=%d", it), func(t *testing.T) {
			checkScenario(t, s)
			if t.Failed() {
				t.Logf("scenario: %s", s)
			}
		})
	}
}

func checkScenario(t *testing.T, s scenario) {
	fake := runnertest.New()
	for name, sc := range s.scripts {
		fake.Script(name, sc)
	}
	rec := &recorder{}
	opts := []runner.Option{runner.WithMaxParallel(s.maxParallel), runner.WithMode(s.mode),
		runner.WithFailurePolicy(s.policy), runner.WithObserver(rec), runner.WithJitter(0.5, 1)}
	for g, n := range s.groupLimits {
		opts = append(opts, runner.WithGroupLimit(g, n))
	}
	p := planOf(hop{g: s.g})
	res := wait(t, start(context.Background(), runner.New(fake, opts...), p, nil))
	st, err := res.st, res.err
	require.NotNil(t, st)
	assert.Equal(t, err == nil, st.Phase == record.Succeeded, "Execute error %v with phase %s", err, st.Phase)
	if err != nil {
		assert.ErrorIs(t, err, runner.ErrRunFailed)
	}

	recs := fake.Records()
	checkRecording(t, s, recs)
	count := checkComponents(t, s, st, recs)
	checkPolicy(t, s, st, err, count, recs, rec.all())
}

// checkRecording checks that the recording respects the graph and the
// limits.
func checkRecording(t *testing.T, s scenario, recs []runnertest.Record) {
	g := s.g
	assert.NoError(t, runnertest.CheckOrder(g, 0, recs), "CheckOrder")
	assert.NoError(t, runnertest.CheckSucceededOnce(0, recs), "CheckSucceededOnce")
	if s.maxParallel > 0 {
		assert.NoError(t, runnertest.CheckParallelism(recs, s.maxParallel, nil), "MaxParallel")
	}
	for group, limit := range s.groupLimits {
		in := func(r runnertest.Record) bool { return g.Node(mustIndex(t, g, r.Component)).To.Group == group }
		assert.NoError(t, runnertest.CheckParallelism(recs, limit, in), "group %s", group)
	}
	if s.mode == runner.Batch {
		for _, r := range recs {
			for _, o := range recs {
				if g.Level(mustIndex(t, g, o.Component)) < g.Level(mustIndex(t, g, r.Component)) {
					require.Greater(t, r.Start, o.End, "batch barrier: %s started before %s of an earlier level ended", r.Component, o.Component)
				}
			}
		}
	}
}

// checkComponents checks that the status agrees with the recording and
// the scripts, component by component, and returns how many components
// ended in each phase.
func checkComponents(t *testing.T, s scenario, st *record.Status, recs []runnertest.Record) map[record.Phase]int {
	g := s.g
	byComp := map[string][]runnertest.Record{}
	for _, r := range recs {
		byComp[r.Component] = append(byComp[r.Component], r)
	}
	count := map[record.Phase]int{}
	done := 0
	for i := 0; i < g.Len(); i++ {
		name := g.Node(i).Name
		cs := compStatus(t, st, 0, name)
		rs := byComp[name]
		count[cs.Phase]++
		if cs.Phase == record.Succeeded || (cs.Phase == record.Skipped && cs.Code == "") {
			done++
		}
		require.Equal(t, len(rs), cs.Attempts, "%s: attempts in the status vs runner calls", name)
		for k, r := range rs {
			require.Equal(t, k+1, r.Attempt, "%s: Task.Attempt of call %d", name, k+1)
		}
		var last error
		if len(rs) > 0 {
			last = rs[len(rs)-1].Err
		}
		checkComponent(t, s, st, i, cs, rs, last)
	}
	assert.Equal(t, record.Progress{Done: done, Total: g.Len()}, st.Progress, "Status.Progress")
	return count
}

// checkComponent checks the final record cs of component i, whose runner
// calls are rs (the last returned last), against its script.
func checkComponent(t *testing.T, s scenario, st *record.Status, i int, cs record.ComponentStatus, rs []runnertest.Record, last error) {
	g := s.g
	name := g.Node(i).Name
	script := s.scripts[name]
	switch cs.Phase {
	case record.Succeeded:
		assert.NoError(t, last, "%s Succeeded: its last call's error", name)
		assert.True(t, script.FailFirst < s.attempts[name] && !script.FailAlways && !script.Hang && !script.Panic && script.Skip == "",
			"%s Succeeded with script %+v and %d attempts", name, script, s.attempts[name])
	case record.Skipped:
		if cs.Code == "" {
			assert.ErrorIs(t, last, runner.ErrSkipped, "%s skipped by its runner", name)
			return
		}
		assert.Equal(t, record.CodeDependencyFailed, cs.Code, "%s Skipped: code", name)
		assert.Empty(t, rs, "%s Skipped behind a failure: runner calls", name)
		dep := strings.TrimSuffix(strings.TrimPrefix(cs.Reason, "dependency "), " failed")
		di, ok := g.Index(dep)
		require.True(t, ok, "%s: reason %q names no component", name, cs.Reason)
		assert.Contains(t, g.Ancestors(i), di, "%s: reason names %s, not one of its dependencies", name, dep)
		assert.Equal(t, record.Failed, compStatus(t, st, 0, dep).Phase, "%s: the dependency its reason names", name)
	case record.Failed:
		checkFailed(t, s, name, cs, last)
	case record.Cancelled:
		assert.NotZero(t, s.maxFailures, "%s Cancelled under %s", name, s.policy)
		assert.Equal(t, record.CodeCancelled, cs.Code, "%s Cancelled: code", name)
	default:
		t.Errorf("%s ended %s", name, cs.Phase)
	}
}

// checkFailed checks the record cs of component name, Failed, against
// its script.
func checkFailed(t *testing.T, s scenario, name string, cs record.ComponentStatus, last error) {
	script := s.scripts[name]
	require.Error(t, last, "%s Failed: its last call's error", name)
	wantCode, wantAttempts := record.CodeComponentFailed, s.attempts[name]
	switch {
	case script.Panic:
		wantCode, wantAttempts = record.CodePanic, 1
	case script.Hang:
		wantCode = record.CodeComponentTimeout
	case script.Permanent:
		wantAttempts = 1
	case !script.FailAlways && s.maxFailures == 0:
		assert.GreaterOrEqual(t, script.FailFirst, s.attempts[name], "%s failed though its script succeeds in time", name)
	case !script.FailAlways:
		// Under a stop, retries are cut short, but the attempts
		// that ran all failed as scripted.
		assert.GreaterOrEqual(t, script.FailFirst, cs.Attempts, "%s failed on an attempt its script lets succeed", name)
	}
	assert.Equal(t, wantCode, cs.Code, "%s Failed: code", name)
	if s.maxFailures > 0 {
		// A failure while the policy's stop is under way is not
		// retried.
		assert.LessOrEqual(t, cs.Attempts, wantAttempts, "%s Failed: attempts", name)
	} else {
		assert.Equal(t, wantAttempts, cs.Attempts, "%s Failed: attempts", name)
	}
}

// checkPolicy checks the failure policy on the status, the events evs
// and the recording, and that the hop's phase follows from its
// components (count: how many ended in each phase).
func checkPolicy(t *testing.T, s scenario, st *record.Status, err error, count map[record.Phase]int, recs []runnertest.Record, evs []runner.Event) {
	g := s.g
	failed := count[record.Failed]
	stopped := s.maxFailures > 0 && failed >= s.maxFailures
	// More than maxFailures components may be Failed: those that failed by
	// themselves while the stop was on its way. What the policy forbids is
	// a start after the stop, checked on the events below.
	if !stopped {
		assert.Zero(t, count[record.Cancelled], "Cancelled components without a stop")
	}
	for i := 0; i < g.Len(); i++ {
		if compStatus(t, st, 0, g.Node(i).Name).Phase != record.Failed {
			continue
		}
		for _, d := range g.Descendants(i) {
			cs := compStatus(t, st, 0, g.Node(d).Name)
			assert.Equal(t, record.Skipped, cs.Phase, "%s depends on failed %s", cs.Name, g.Node(i).Name)
			assert.Equal(t, record.CodeDependencyFailed, cs.Code, "%s depends on failed %s", cs.Name, g.Node(i).Name)
		}
	}
	starts, fails := 0, 0
	for _, e := range evs {
		switch e.Type {
		case runner.ComponentStarted:
			starts++
			assert.False(t, stopped && fails >= s.maxFailures, "%s attempt %d started after the %s stop", e.Component, e.Attempt, s.policy)
		case runner.ComponentFailed:
			fails++
		}
	}
	assert.Equal(t, len(recs), starts, "ComponentStarted events vs runner calls")
	assert.Equal(t, failed, fails, "ComponentFailed events vs Failed components")

	// The hop's phase follows from its components.
	wantHop := record.Succeeded
	switch {
	case failed > 0:
		wantHop = record.Failed
	case slices.ContainsFunc(st.Hops[0].Components, func(c record.ComponentStatus) bool { return c.Phase == record.Cancelled }):
		wantHop = record.Cancelled
	}
	assert.Equal(t, wantHop, st.Hops[0].Phase, "hop phase")
	if failed > 0 {
		var ce *runner.ComponentError
		assert.True(t, errors.As(err, &ce), "Execute error %v, want a *ComponentError", err)
	}
}
