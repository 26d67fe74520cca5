package runner_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// A route across tracks runs like a one-track route: each hop upgrades the
// components of the track it moves, and the status records the track.
func TestExecuteRouteAcrossTracks(t *testing.T) {
	c, err := release.LoadDir("../testdata/two-track")
	require.NoError(t, err)
	from, err := path.ParseState("platform=13.01.0,kubernetes=v1.33.0")
	require.NoError(t, err)
	to, err := path.ParseState("platform=27.03.0,kubernetes=v1.35.0")
	require.NoError(t, err)
	p, err := runner.NewPlan(c, from, to)
	require.NoError(t, err)

	var mu sync.Mutex
	var ran []string
	e := runner.New(runner.RunnerFunc(func(_ context.Context, task runner.Task) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, fmt.Sprintf("%d %s %s", task.HopIndex+1, task.Component, task.To.Version))
		return nil
	}), runner.WithCheck("iso-uploaded", func(context.Context, runner.CheckTask) error { return nil }))
	st, err := e.Execute(context.Background(), p, nil)
	require.NoError(t, err)
	assert.Equal(t, record.Succeeded, st.Phase)
	assert.Equal(t, "kubernetes=v1.33.0,platform=13.01.0", st.From)
	assert.Equal(t, "kubernetes=v1.35.0,platform=27.03.0", st.To)
	var tracks []string
	for _, h := range st.Hops {
		tracks = append(tracks, h.Track+" "+h.To)
	}
	assert.Equal(t, []string{"platform 13.01.2", "kubernetes v1.34.1", "platform 27.03.0", "kubernetes v1.35.0"}, tracks)
	assert.Equal(t, []string{
		"1 sw-deploy 13.01.2", "1 sysinv 13.01.2",
		"2 kube-control-plane v1.34.1", "2 kubelet v1.34.1",
		"3 sw-deploy 27.03.0", "3 sysinv 27.03.0",
		"4 kube-control-plane v1.35.0", "4 kubelet v1.35.0",
	}, ran, "each hop runs its track's components, in dependency order")
}

// A state holds one version of each component, so a route across tracks
// whose tracks' releases ship the same component is refused at plan time:
// each track's hops would upgrade it from its own version (the second
// from a version it no longer runs, maybe back down).
func TestNewPlanComponentOnTwoTracks(t *testing.T) {
	v := release.MustParseVersion
	comps := []release.ComponentVersion{
		{Name: "agent", Version: v("1.0"), Type: release.TypeInline, Handler: "agent"},
		{Name: "agent", Version: v("2.0"), Type: release.TypeInline, Handler: "agent"},
		{Name: "agent", Version: v("1.5"), Type: release.TypeInline, Handler: "agent"},
		{Name: "agent", Version: v("1.6"), Type: release.TypeInline, Handler: "agent"},
		{Name: "kubelet", Version: v("1.0"), Type: release.TypeInline, Handler: "kubelet"},
		{Name: "kubelet", Version: v("2.0"), Type: release.TypeInline, Handler: "kubelet"},
	}
	ref := func(name, version string) release.ComponentRef {
		return release.ComponentRef{Name: name, Version: v(version)}
	}
	rels := []release.Release{
		{Name: "p1", Version: v("1.0"), Track: "platform", Components: []release.ComponentRef{ref("agent", "1.0")}},
		{Name: "p2", Version: v("2.0"), Track: "platform", Components: []release.ComponentRef{ref("agent", "2.0")}},
		{Name: "k1", Version: v("v1.0"), Track: "kubernetes", Components: []release.ComponentRef{ref("agent", "1.5"), ref("kubelet", "1.0")}},
		{Name: "k2", Version: v("v2.0"), Track: "kubernetes", Components: []release.ComponentRef{ref("agent", "1.6"), ref("kubelet", "2.0")}},
	}
	paths := []release.UpgradePath{
		{Name: "p", Track: "platform", Rules: []release.Rule{{From: release.MustParseConstraint("1.0"), To: v("2.0")}}},
		{Name: "k", Track: "kubernetes", Rules: []release.Rule{{From: release.MustParseConstraint("v1.0"), To: v("v2.0")}}},
	}
	c, err := release.NewCatalog(rels, comps, paths)
	require.NoError(t, err)
	from, err := path.ParseState("platform=1.0,kubernetes=v1.0")
	require.NoError(t, err)
	to, err := path.ParseState("platform=2.0,kubernetes=v2.0")
	require.NoError(t, err)
	_, err = runner.NewPlan(c, from, to)
	require.ErrorIs(t, err, runner.ErrInvalidPlan, "NewPlan(%s -> %s) with agent on both tracks", from, to)
	assert.Contains(t, err.Error(), "component agent is shipped on two tracks: by kubernetes v1.0 and by platform 1.0")
	assert.Contains(t, err.Error(), "ship it on one track")

	// One track at a time (tracks as independent lines) is not a state
	// that holds both, and plans as before.
	one, err := runner.NewPlan(c, path.State{"platform": v("1.0")}, path.State{"platform": v("2.0")})
	require.NoError(t, err)
	assert.Equal(t, 1, one.Total())
}

// alikePlan is the plan of a route across two tracks whose hops go to
// versions spelled alike: platform 1.0 -> 2.0 (component agent) and
// kubernetes 1.0 -> 2.0 (component kubelet), the rules gated when gated.
func alikePlan(t *testing.T, gated bool) *runner.Plan {
	t.Helper()
	v := release.MustParseVersion
	var comps []release.ComponentVersion
	var rels []release.Release
	for _, tr := range []struct{ track, comp string }{{"platform", "agent"}, {"kubernetes", "kubelet"}} {
		for _, ver := range []string{"1.0", "2.0"} {
			comps = append(comps, release.ComponentVersion{Name: tr.comp, Version: v(ver), Type: release.TypeInline, Handler: tr.comp})
			rels = append(rels, release.Release{Name: tr.track + ver, Version: v(ver), Track: tr.track,
				Components: []release.ComponentRef{{Name: tr.comp, Version: v(ver)}}})
		}
	}
	rule := func(track string) release.Rule {
		r := release.Rule{From: release.MustParseConstraint("1.0"), To: v("2.0")}
		if gated {
			r.Gate = &release.Gate{Reason: "check the " + track + " release notes"}
		}
		return r
	}
	paths := []release.UpgradePath{
		{Name: "p", Track: "platform", Rules: []release.Rule{rule("platform")}},
		{Name: "k", Track: "kubernetes", Rules: []release.Rule{rule("kubernetes")}},
	}
	c, err := release.NewCatalog(rels, comps, paths)
	require.NoError(t, err)
	from, err := path.ParseState("platform=1.0,kubernetes=1.0")
	require.NoError(t, err)
	to, err := path.ParseState("platform=2.0,kubernetes=2.0")
	require.NoError(t, err)
	p, err := runner.NewPlan(c, from, to)
	require.NoError(t, err)
	require.Len(t, p.Hops, 2)
	require.Equal(t, "kubernetes", p.Hops[0].Track, "hop 1's track")
	return p
}

// hopPhases is "TRACK PHASE" of each hop of st.
func hopPhases(st *record.Status) []string {
	var out []string
	for _, h := range st.Hops {
		out = append(out, h.Track+" "+string(h.Phase))
	}
	return out
}

// Two tracks whose hops go to versions spelled alike (platform 1.0 -> 2.0,
// kubernetes 1.0 -> 2.0) make a step name HOP ambiguous: WithUntil and
// WithGates refuse it, naming the hops, rather than stop after (or gate)
// whichever matched last; HOP/COMPONENT names the hop that has the
// component.
func TestStepNamesAcrossTracks(t *testing.T) {
	p := alikePlan(t, false)
	ok := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
	phases := hopPhases

	for _, opt := range map[string]runner.Option{"until": runner.WithUntil("2.0"), "gate": runner.WithGates("2.0")} {
		st, err := runner.New(ok, opt).Execute(context.Background(), p, nil)
		require.ErrorIs(t, err, runner.ErrInvalidPlan, "a step 2.0 that names two hops")
		assert.Nil(t, st)
		assert.Contains(t, err.Error(), "2.0 names 2 hops: hop 1 kubernetes 1.0 -> 2.0, hop 2 platform 1.0 -> 2.0")
		assert.Contains(t, err.Error(), "write kubernetes=2.0 or platform=2.0, or name a component of the hop (2.0/COMPONENT)")
	}

	// The hops' step names say their tracks: TRACK=VERSION, as a state
	// across tracks is written.
	assert.Equal(t, "kubernetes=2.0", runner.StepName(p.Hops[0], "", ""), "StepName(hop 1)")
	assert.Equal(t, "platform=2.0/agent/upgrade", runner.StepName(p.Hops[1], "agent", "upgrade"), "StepName(hop 2, agent, upgrade)")
	st, err := runner.New(ok, runner.WithUntil("kubernetes=2.0")).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrUntilReached, "WithUntil(kubernetes=2.0)")
	assert.Equal(t, []string{"kubernetes Succeeded", "platform Pending"}, phases(st), "WithUntil(kubernetes=2.0) stops after hop 1")
	st, err = runner.New(ok, runner.WithGates("platform=2.0")).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrWaitingForApproval, "WithGates(platform=2.0)")
	assert.Equal(t, []string{"platform=2.0"}, st.Waiting)
	assert.Equal(t, []string{"platform=2.0"}, st.Gates)
	assert.Equal(t, []string{"kubernetes Succeeded", "platform WaitingForApproval"}, phases(st))

	// HOP/COMPONENT picks the hop that has the component, whichever it is,
	// and is recorded by the hop's step name.
	st, err = runner.New(ok, runner.WithUntil("2.0/kubelet")).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrUntilReached, "WithUntil(2.0/kubelet)")
	assert.Equal(t, []string{"kubernetes Succeeded", "platform Pending"}, phases(st), "WithUntil(2.0/kubelet) stops after hop 1")
	st, err = runner.New(ok, runner.WithGates("2.0/agent")).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrWaitingForApproval, "WithGates(2.0/agent)")
	assert.Equal(t, []string{"platform=2.0/agent"}, st.Waiting)
	assert.Equal(t, []string{"platform=2.0/agent"}, st.Gates)
	assert.Equal(t, []string{"kubernetes Succeeded", "platform WaitingForApproval"}, phases(st))

	_, err = runner.New(ok, runner.WithGates("platform=2.0/kubelet")).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrInvalidPlan, "WithGates(platform=2.0/kubelet): kubelet is kubernetes'")
	assert.Contains(t, err.Error(), "hop platform=2.0 has no component kubelet; its components are agent")
}

// Catalog gates on two tracks' hops to versions spelled alike wait, and
// are approved, one at a time: approving one does not pass the other.
func TestApproveAcrossTracks(t *testing.T) {
	p := alikePlan(t, true)
	e := runner.New(runner.RunnerFunc(func(context.Context, runner.Task) error { return nil }))
	st, err := e.Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrWaitingForApproval)
	assert.Equal(t, []string{"kubernetes=2.0"}, st.Waiting, "hop 1 waits")
	assert.Equal(t, "waiting for approval of kubernetes=2.0: check the kubernetes release notes", st.Hops[0].Message)

	err = st.Approve("2.0", "ops", t0)
	require.ErrorIs(t, err, record.ErrNotWaiting, "Approve(2.0) names no one step")
	assert.Contains(t, err.Error(), "waiting: kubernetes=2.0")
	require.NoError(t, st.Approve("kubernetes=2.0", "ops", t0))
	st, err = e.Execute(context.Background(), p, st)
	require.ErrorIs(t, err, runner.ErrWaitingForApproval, "hop 2 has a gate of its own")
	assert.Equal(t, []string{"platform=2.0"}, st.Waiting, "hop 2 waits")
	assert.Equal(t, []string{"kubernetes Succeeded", "platform WaitingForApproval"}, hopPhases(st))

	require.NoError(t, st.Approve("platform=2.0", "ops", t0))
	st, err = e.Execute(context.Background(), p, st)
	require.NoError(t, err)
	assert.Equal(t, record.Succeeded, st.Phase)
}

// A plan built by hand (not by NewPlan) whose hops go to
// versions spelled alike has hops of one step name: a gate, an approval
// or WithUntil could not tell them apart. Execute refuses it, naming the
// hops; the same hops from NewPlan are named apart (TRACK=VERSION).
func TestValidateStepNamesApart(t *testing.T) {
	built := alikePlan(t, false)
	p := &runner.Plan{Route: built.Route}
	for _, h := range built.Hops {
		p.Hops = append(p.Hops, &runner.HopPlan{Hop: h.Hop, Graph: h.Graph})
	}
	ok := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
	st, err := runner.New(ok).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrInvalidPlan, "Execute of a hand-built plan with two hops named 2.0")
	assert.Nil(t, st)
	assert.EqualError(t, err, "runner: invalid plan: hop 1 kubernetes 1.0 -> 2.0 and hop 2 platform 1.0 -> 2.0 have the same step name 2.0, "+
		"which gates, approvals and WithUntil could not tell apart; name them apart: build the plan with NewPlan, which names such hops TRACK=VERSION (kubernetes=2.0, platform=2.0)")

	require.NoError(t, runner.New(ok).Validate(built), "Validate of the NewPlan plan")
}

// genTracks is a random catalog of two or three tracks whose versions are
// spelled alike (v1.0, v1.1, v2.0, ...), with random rules (ranges, exact
// versions, downgrades) and supports between tracks; each track ships its
// own component.
func genTracks(rng *rand.Rand) (*release.Catalog, map[string][]string, error) {
	v := release.MustParseVersion
	spellings := []string{"v1.0", "v1.1", "v1.2", "v2.0", "v2.1", "v3.0"}
	names := []string{"a", "b", "c"}[:2+rng.IntN(2)]
	pools := map[string][]string{}
	var comps []release.ComponentVersion
	var paths []release.UpgradePath
	for _, tr := range names {
		pool := spellings[:2+rng.IntN(len(spellings)-1)]
		pools[tr] = pool
		var rules []release.Rule
		for range 1 + rng.IntN(3*len(pool)) {
			from := pool[rng.IntN(len(pool))]
			if rng.IntN(3) == 0 {
				from = ">= " + pool[rng.IntN(len(pool))] + ", < " + pool[rng.IntN(len(pool))]
			}
			rules = append(rules, release.Rule{From: release.MustParseConstraint(from), To: v(pool[rng.IntN(len(pool))])})
		}
		paths = append(paths, release.UpgradePath{Name: tr, Track: tr, Rules: rules})
		for _, ver := range pool {
			comps = append(comps, release.ComponentVersion{Name: "comp-" + tr, Version: v(ver), Type: release.TypeInline, Handler: "h"})
		}
	}
	var rels []release.Release
	for ti, tr := range names {
		for _, ver := range pools[tr] {
			r := release.Release{Name: tr + ver, Version: v(ver), Track: tr, Components: []release.ComponentRef{{Name: "comp-" + tr, Version: v(ver)}}}
			if ti+1 < len(names) && rng.IntN(3) == 0 {
				other := pools[names[ti+1]]
				lo, hi := other[rng.IntN(len(other))], other[rng.IntN(len(other))]
				r.Supports = map[string]release.Constraint{names[ti+1]: release.MustParseConstraint(">= " + lo + ", <= " + hi)}
			}
			rels = append(rels, r)
		}
	}
	c, err := release.NewCatalog(rels, comps, paths)
	return c, pools, err
}

// Property: a plan from NewPlan of a random route across tracks never
// has two hops of one step name, so Validate never refuses it for that;
// and every hop's step name selects that hop (WithUntil).
func TestPropertyNewPlanStepNames(t *testing.T) {
	ok := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
	routes, alike := 0, 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 0x57e9))
		c, pools, err := genTracks(rng)
		require.NoError(t, err, "seed %d", seed)
		tracks := c.Tracks()
		for range 20 {
			from, to := path.State{}, path.State{}
			for _, tr := range tracks {
				from[tr] = release.MustParseVersion(pools[tr][rng.IntN(len(pools[tr]))])
				if rng.IntN(3) > 0 {
					to[tr] = release.MustParseVersion(pools[tr][rng.IntN(len(pools[tr]))])
				}
			}
			msg := fmt.Sprintf("seed %d: %s -> %s", seed, from, to)
			route, err := path.Resolve(c, from, to, path.AllowPrereleases())
			if err != nil || len(route.Hops) == 0 {
				continue
			}
			routes++
			p, err := runner.NewPlan(c, from, to, runner.PathOptions(path.AllowPrereleases()), runner.ForExecutor(runner.New(ok)))
			require.NoError(t, err, "%s: NewPlan (Validate)", msg)
			require.Equal(t, route, p.Route, "%s: NewPlan's route, want Resolve's", msg)
			seen := map[string]bool{}
			for i, h := range p.Hops {
				name := runner.StepName(h, "", "")
				require.False(t, seen[name], "%s: hop %d %s: step name %s is another hop's", msg, i+1, h.Name(), name)
				seen[name] = true
				alike += strings.Count(name, "=")
			}
			i := rng.IntN(len(p.Hops))
			step := runner.StepName(p.Hops[i], "", "")
			st, err := runner.New(ok, runner.WithUntil(step)).Execute(context.Background(), p, nil)
			if i == len(p.Hops)-1 {
				require.NoError(t, err, "%s: WithUntil(%s), the last hop", msg, step)
			} else {
				require.ErrorIs(t, err, runner.ErrUntilReached, "%s: WithUntil(%s)", msg, step)
			}
			for j, hs := range st.Hops {
				assert.Equal(t, j <= i, hs.Phase == record.Succeeded, "%s: WithUntil(%s): hop %d %s", msg, step, j+1, hs.Phase)
			}
		}
	}
	require.Greater(t, routes, 500, "routes found (the generator should make many)")
	require.Greater(t, alike, 100, "hops named TRACK=VERSION (the generator should spell versions alike)")
}
