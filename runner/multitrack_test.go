package runner_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/path"
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
	route, err := path.ResolveState(c, from, to)
	require.NoError(t, err)
	p, err := runner.PlanRoute(c, route)
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
	assert.Equal(t, runner.Succeeded, st.Phase)
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
func TestPlanRouteComponentOnTwoTracks(t *testing.T) {
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
	route, err := path.ResolveState(c, from, to)
	require.NoError(t, err)
	_, err = runner.PlanRoute(c, route)
	require.ErrorIs(t, err, runner.ErrInvalidPlan, "PlanRoute(%s -> %s) with agent on both tracks", from, to)
	assert.Contains(t, err.Error(), "component agent is shipped on two tracks: by kubernetes v1.0 and by platform 1.0")
	assert.Contains(t, err.Error(), "ship it on one track")

	// One track at a time (tracks as independent lines) is not a state
	// that holds both, and plans as before.
	one, err := runner.NewPlan(c, v("1.0"), v("2.0"), runner.PathOptions(path.WithTrack("platform")))
	require.NoError(t, err)
	assert.Equal(t, 1, one.Total())
}

// Two tracks whose hops go to versions spelled alike (platform 1.0 -> 2.0,
// kubernetes 1.0 -> 2.0) make a step name HOP ambiguous: WithUntil and
// WithGates refuse it, naming the hops, rather than stop after (or gate)
// whichever matched last; HOP/COMPONENT names the hop that has the
// component.
func TestStepNamesAcrossTracks(t *testing.T) {
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
	paths := []release.UpgradePath{
		{Name: "p", Track: "platform", Rules: []release.Rule{{From: release.MustParseConstraint("1.0"), To: v("2.0")}}},
		{Name: "k", Track: "kubernetes", Rules: []release.Rule{{From: release.MustParseConstraint("1.0"), To: v("2.0")}}},
	}
	c, err := release.NewCatalog(rels, comps, paths)
	require.NoError(t, err)
	from, err := path.ParseState("platform=1.0,kubernetes=1.0")
	require.NoError(t, err)
	to, err := path.ParseState("platform=2.0,kubernetes=2.0")
	require.NoError(t, err)
	route, err := path.ResolveState(c, from, to)
	require.NoError(t, err)
	p, err := runner.PlanRoute(c, route)
	require.NoError(t, err)
	require.Len(t, p.Hops, 2)
	ok := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
	phases := func(st *runner.Status) []string {
		var out []string
		for _, h := range st.Hops {
			out = append(out, h.Track+" "+string(h.Phase))
		}
		return out
	}

	for _, opt := range map[string]runner.Option{"until": runner.WithUntil("2.0"), "gate": runner.WithGates("2.0")} {
		st, err := runner.New(ok, opt).Execute(context.Background(), p, nil)
		require.ErrorIs(t, err, runner.ErrInvalidPlan, "a step 2.0 that names two hops")
		assert.Nil(t, st)
		assert.Contains(t, err.Error(), "2.0 names 2 hops: hop 1 kubernetes 1.0 -> 2.0, hop 2 platform 1.0 -> 2.0")
		assert.Contains(t, err.Error(), "name a component of the hop (2.0/COMPONENT)")
	}

	// HOP/COMPONENT picks the hop that has the component, whichever it is.
	first := p.Hops[0].Graph.Names()[0]
	st, err := runner.New(ok, runner.WithUntil("2.0/"+first)).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrUntilReached, "WithUntil(2.0/%s)", first)
	assert.Equal(t, []string{p.Hops[0].Track + " Succeeded", p.Hops[1].Track + " Pending"}, phases(st), "WithUntil(2.0/%s) stops after hop 1", first)
	second := p.Hops[1].Graph.Names()[0]
	st, err = runner.New(ok, runner.WithGates("2.0/"+second)).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrWaitingForApproval, "WithGates(2.0/%s)", second)
	assert.Equal(t, []string{"2.0/" + second}, st.Waiting)
	assert.Equal(t, []string{p.Hops[0].Track + " Succeeded", p.Hops[1].Track + " WaitingForApproval"}, phases(st))
}
