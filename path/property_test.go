package path_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// Property tests on generated version graphs: every route is valid edge by
// edge, no shorter route exists (plain BFS), the route is the best by the
// documented order (backward dynamic programming, and brute force on small
// graphs), Targets agrees with Resolve, and the same input gives the same
// answer on every run.

var riskNames = []string{"r1", "r2", "r3"}

// genSpec generates a catalog of n versions (releases, prereleases, patch
// releases, a kubernetes-master version each) with random rules and flags,
// and random options.
func genSpec(rng *rand.Rand, n, maxRules int) (spec, refOpts) {
	s := spec{Versions: genVersions(rng, n), K8s: map[string]string{}}
	for _, ver := range s.Versions {
		if rng.IntN(10) > 0 {
			s.K8s[ver] = fmt.Sprintf("v1.%d.%d", 30+rng.IntN(5), rng.IntN(3))
		}
	}
	pick := func() string { return s.Versions[rng.IntN(n)] }
	for range rng.IntN(maxRules + 1) {
		s.Rules = append(s.Rules, genRule(rng, pick))
	}
	var channels map[string]bool
	s.Infos, channels = genInfos(rng, s.Versions)
	return s, genOptions(rng, channels)
}

// genVersions returns n versions of a shuffled pool of releases,
// prereleases and patch releases.
func genVersions(rng *rand.Rand, n int) []string {
	var pool []string
	for m := 0; len(pool) < 3*n; m++ {
		maj := 1 + m/20
		pool = append(pool, fmt.Sprintf("v%d.%d", maj, m%20))
		if rng.IntN(3) == 0 {
			pool = append(pool, fmt.Sprintf("v%d.%d-rc.1", maj, m%20), fmt.Sprintf("v%d.%d-rc.2", maj, m%20))
		}
		if rng.IntN(3) == 0 {
			pool = append(pool, fmt.Sprintf("v%d.%d.1", maj, m%20))
		}
	}
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	return pool[:n]
}

// genRule returns a rule between versions pick gives: an exact from, a
// range, "*", or an alternative; sometimes blocked, deprecated, risky or
// with a check.
func genRule(rng *rand.Rand, pick func() string) release.Rule {
	var from string
	switch k := rng.IntN(20); {
	case k < 10:
		from = pick()
	case k < 15:
		from = ">= " + pick() + ", < " + pick()
	case k < 16:
		from = "*"
	case k < 18:
		from = "> " + pick()
	case k < 19:
		from = pick() + " || " + pick()
	default:
		from = "<= " + pick() + ", != " + pick()
	}
	r := rule(from, pick())
	if rng.IntN(10) == 0 {
		r.Blocked = "blocked"
	}
	if rng.IntN(5) == 0 {
		r.Deprecated = "deprecated"
	}
	if rng.IntN(6) == 0 {
		for _, name := range riskNames {
			if rng.IntN(2) == 0 {
				r.Risks = append(r.Risks, release.Risk{Name: name})
			}
		}
	}
	if rng.IntN(3) == 0 {
		r.PreChecks = []release.Check{{Name: fmt.Sprintf("check-%d", rng.IntN(100)), Required: true}}
	}
	return r
}

// genInfos returns the versions list of an UpgradePath: some versions
// not installable or deprecated, each in channels stable and fast or not;
// and the channels it names.
func genInfos(rng *rand.Rand, versions []string) ([]release.VersionInfo, map[string]bool) {
	var infos []release.VersionInfo
	channels := map[string]bool{}
	for _, ver := range versions {
		vi := release.VersionInfo{Version: v(ver)}
		switch rng.IntN(10) {
		case 0:
			vi = notInstallable(ver)
		case 1:
			vi.Deprecated = "CVE: do not install"
		}
		for _, ch := range []string{"stable", "fast"} {
			if rng.IntN(3) > 0 {
				vi.Channels = append(vi.Channels, ch)
				channels[ch] = true
			}
		}
		infos = append(infos, vi)
	}
	return infos, channels
}

// genOptions returns random options: prereleases or a channel, accepted
// risks, a mandatory or overridable guard.
func genOptions(rng *rand.Rand, channels map[string]bool) refOpts {
	o := refOpts{accept: map[string]bool{}, overrides: map[string]bool{}}
	switch rng.IntN(4) {
	case 0:
		o.prereleases = true
	case 1:
		if ch := []string{"stable", "fast"}[rng.IntN(2)]; channels[ch] {
			o.channel = ch
		}
	}
	for _, name := range riskNames {
		if rng.IntN(2) == 0 {
			o.accept[name] = true
		}
	}
	switch rng.IntN(3) {
	case 1:
		g := path.KubernetesSkewGuard()
		g.MaxMinorSkew = rng.IntN(3)
		o.guards = []path.Guard{g}
	case 2:
		g := path.Guard{Name: "soft", Component: k8s, MaxMinorSkew: rng.IntN(2), Overridable: true}
		o.guards = []path.Guard{g}
		if rng.IntN(2) == 0 {
			o.overrides[g.Name] = true
		}
	}
	return o
}

func iterations(t *testing.T, full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

func TestPropertyRoutes(t *testing.T) {
	for seed := range uint64(iterations(t, 400, 60)) {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		n := 2 + rng.IntN(11)
		s, o := genSpec(rng, n, 4*n)
		c, err := s.build()
		require.NoError(t, err, "seed %d", seed)
		checkGraph(t, c, o, n <= 7, fmt.Sprintf("seed %d\n%s", seed, describe(c, "")))
		if t.Failed() {
			return
		}
	}
}

func TestPropertyRoutesLarger(t *testing.T) {
	for seed := range uint64(iterations(t, 10, 4)) {
		rng := rand.New(rand.NewPCG(seed, 0x1a76e))
		n := 20 + rng.IntN(40)
		s, o := genSpec(rng, n, 5*n)
		c, err := s.build()
		require.NoError(t, err, "seed %d", seed)
		checkGraph(t, c, o, false, fmt.Sprintf("larger seed %d", seed))
		if t.Failed() {
			return
		}
	}
}

// checkGraph checks every pair of versions of c against the reference model.
func checkGraph(t *testing.T, c *release.Catalog, o refOpts, brute bool, msg string) {
	t.Helper()
	gs := newRefGraphs(c, o)
	ex := newExclusionGraphs(c, o)
	ix, err := path.NewIndex(c, o.options()...)
	require.NoError(t, err, msg)
	for src := range gs.all.versions {
		for dst := range gs.all.versions {
			g := gs.pick(src, dst)
			fwd := bfs(g.adj, src)
			from, to := g.versions[src], g.versions[dst]
			r, err := ix.Resolve(from, to)
			if src == dst {
				require.NoError(t, err, msg)
				require.Empty(t, r.Hops, msg)
				continue
			}
			want := g.best(src, dst)
			if want == nil {
				require.Equal(t, -1, fwd[dst], msg)
				nr := noRoute(t, err)
				checkNoRoute(t, g, ix, nr, src, dst, msg)
				checkExcluded(t, c, o, gs, ex, nr, src, dst, msg)
				continue
			}
			require.NoError(t, err, "%s -> %s\n%s", from, to, msg)
			g.checkRoute(t, r, o.track, from, to)
			require.Equal(t, g.costOf(want), g.costOf(g.nodes(r)), "a cheaper route exists: %s -> %s\n%s", from, to, msg)
			require.Equal(t, g.names(want), hopsOf(r), "%s -> %s\n%s", from, to, msg)
			if brute {
				require.Equal(t, g.names(g.bruteBest(src, dst)), hopsOf(r), "brute force: %s -> %s\n%s", from, to, msg)
			}
		}
		checkTargets(t, gs, ix, src, msg)
	}
}

func checkNoRoute(t *testing.T, g *refGraph, ix *path.Index, nr *path.NoRouteError, src, dst int, msg string) {
	t.Helper()
	fwd, bwd := bfs(g.adj, src), bfs(g.radj, dst)
	var reach, reaching []string
	for x := range g.versions {
		if fwd[x] > 0 {
			reach = append(reach, g.versions[x].String())
		}
		if bwd[x] > 0 {
			reaching = append(reaching, g.versions[x].String())
		}
	}
	slices.Reverse(reach) // furthest first
	require.Equal(t, reach, nilIfEmpty(strs(nr.Reachable)), msg)
	require.Equal(t, reaching, nilIfEmpty(strs(nr.Reaching)), msg)
	require.Equal(t, g.versions[dst].Less(g.versions[src]), nr.Downgrade, msg)
	for _, ce := range nr.Closed {
		f, to := g.index(ce.From), g.index(ce.To)
		require.True(t, fwd[f] >= 0 && bwd[to] >= 0, "closed edge %s does not join the two sides\n%s", ce, msg)
		e := g.edges[[2]int{f, to}]
		require.NotNil(t, e, msg)
		require.False(t, e.usable, msg)
	}
	if nr.Relaxed == nil {
		require.Empty(t, nr.Risks, msg)
		require.Empty(t, nr.Overrides, msg)
		return
	}
	// Accepting the named risks and overriding the named guards gives a route.
	r, err := ix.Resolve(g.versions[src], g.versions[dst], path.AcceptRisks(nr.Risks...), path.OverrideGuards(nr.Overrides...))
	require.NoError(t, err, "%v %v\n%s", nr.Risks, nr.Overrides, msg)
	require.Len(t, r.Hops, len(nr.Relaxed.Hops), msg)
	// And every one of them is needed.
	for i := range nr.Relaxations {
		var risks, overrides []string
		for j, x := range nr.Relaxations {
			switch {
			case j == i:
			case x.Kind == path.AcceptRisk:
				risks = append(risks, x.Name)
			default:
				overrides = append(overrides, x.Name)
			}
		}
		_, err := ix.Resolve(g.versions[src], g.versions[dst], path.AcceptRisks(risks...), path.OverrideGuards(overrides...))
		require.ErrorIs(t, err, path.ErrNoRoute, "%v without %v still gives a route\n%s", nr.Relaxations, nr.Relaxations[i], msg)
	}
}

// exclusionGraphs are the reference graphs of a catalog and options with
// every risk accepted and every guard overridden (mandatory ones still
// close their edges): inside the options' exclusion, and free of it (no
// channel, prereleases allowed).
type exclusionGraphs struct {
	inside refGraphs
	free   *refGraph
}

func newExclusionGraphs(c *release.Catalog, o refOpts) exclusionGraphs {
	relaxed := o
	relaxed.accept, relaxed.overrides = map[string]bool{}, map[string]bool{}
	for _, r := range riskNames {
		relaxed.accept[r] = true
	}
	for _, g := range o.guards {
		relaxed.overrides[g.Name] = true
	}
	free := relaxed
	free.channel, free.prereleases = "", true
	return exclusionGraphs{inside: newRefGraphs(c, relaxed), free: newRefGraph(c, free, false)}
}

// checkExcluded checks NoRouteError.Excluded against the reference model:
// it is set exactly when the query excludes versions (a channel, the
// prerelease rule) and either the target is outside the channel, or no
// route keeps out of them even with every risk accepted and every
// overridable guard overridden while one that enters them exists; each
// version it names is one the query excludes.
func checkExcluded(t *testing.T, c *release.Catalog, o refOpts, gs refGraphs, ex exclusionGraphs, nr *path.NoRouteError, src, dst int, msg string) {
	t.Helper()
	versions := gs.all.versions
	inChannel := func(x release.Version) bool {
		vi, ok := c.VersionInfo(o.track, x)
		return ok && vi.InChannel(o.channel)
	}
	gaRule := o.channel == "" && gs.pick(src, dst) == gs.ga
	targetOut := o.channel != "" && !inChannel(versions[dst])
	want := targetOut || (o.channel != "" || gaRule) && bfs(ex.inside.pick(src, dst).adj, src)[dst] < 0 && bfs(ex.free.adj, src)[dst] >= 0
	require.Equal(t, want, len(nr.Excluded) > 0, "Excluded %v\n%s", nr.Excluded, msg)
	if !want {
		return
	}
	require.Equal(t, o.channel, nr.Channel, msg)
	for _, x := range nr.Excluded {
		if o.channel != "" {
			require.False(t, inChannel(x.Version), "%s is in channel %s\n%s", x.Version, o.channel, msg)
		} else {
			require.NotEmpty(t, x.Version.Prerelease(), "%s is not a prerelease\n%s", x.Version, msg)
		}
	}
	if targetOut {
		require.Len(t, nr.Excluded, 1, msg)
		require.True(t, nr.Excluded[0].Version.Equal(versions[dst]), msg)
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func checkTargets(t *testing.T, gs refGraphs, ix *path.Index, src int, msg string) {
	t.Helper()
	ts, err := ix.Targets(gs.all.versions[src])
	var want []string
	for x := range gs.all.versions {
		if bfs(gs.pick(src, x).adj, src)[x] > 0 {
			want = append(want, gs.all.versions[x].String())
		}
	}
	if want == nil {
		noRoute(t, err)
		require.Empty(t, ts)
		return
	}
	require.NoError(t, err, msg)
	var got []string
	for _, tg := range ts {
		got = append(got, tg.Version.String())
		g := gs.pick(src, gs.all.index(tg.Version))
		best := g.best(src, g.index(tg.Version))
		require.Equal(t, len(best)-1, tg.Hops, msg)
		require.Equal(t, g.costOf(best).dep, tg.Deprecated, msg)
		r, err := ix.Resolve(g.versions[src], tg.Version)
		require.NoError(t, err, msg)
		require.Equal(t, r, tg.Route(), "Targets and Resolve disagree on %s -> %s\n%s", g.versions[src], tg.Version, msg)
	}
	require.Equal(t, want, got, msg)
}

// answers records every answer a catalog gives, as text.
func answers(t *testing.T, c *release.Catalog, o refOpts) []string {
	t.Helper()
	ix, err := path.NewIndex(c, o.options()...)
	require.NoError(t, err)
	var out []string
	for _, a := range c.Versions() {
		for _, b := range c.Versions() {
			r, err := ix.Resolve(a, b)
			js, _ := json.Marshal(r)
			out = append(out, fmt.Sprintf("%s %s\n%s%v", a, b, js, err))
		}
		ts, err := ix.Targets(a)
		var routes []*path.Route
		for _, t := range ts {
			routes = append(routes, t.Route())
		}
		js, _ := json.Marshal([]any{ts, routes})
		out = append(out, fmt.Sprintf("targets %s\n%s%v", a, js, err))
	}
	return out
}

func TestPropertyDeterministic(t *testing.T) {
	for seed := range uint64(iterations(t, 30, 10)) {
		rng := rand.New(rand.NewPCG(seed, 0xde7))
		n := 2 + rng.IntN(20)
		s, o := genSpec(rng, n, 4*n)
		c, err := s.build()
		require.NoError(t, err)
		want := answers(t, c, o)

		// The same catalog, its releases given in another order.
		rng.Shuffle(len(s.Versions), func(i, j int) { s.Versions[i], s.Versions[j] = s.Versions[j], s.Versions[i] })
		c2, err := s.build()
		require.NoError(t, err)
		require.Equal(t, want, answers(t, c2, o), "seed %d", seed)

		// And concurrently, on fresh indexes.
		var wg sync.WaitGroup
		got := make([][]string, 4)
		for i := range got {
			wg.Go(func() { got[i] = answers(t, c, o) })
		}
		wg.Wait()
		for i := range got {
			require.Equal(t, want, got[i], "seed %d run %d", seed, i)
		}
	}
}

// TestPropertyRiskAcceptanceMonotone: accepting more risks never makes a
// route costlier (more deprecated edges and versions, or as many and more
// hops) nor removes a target.
func TestPropertyRiskAcceptanceMonotone(t *testing.T) {
	for seed := range uint64(iterations(t, 100, 20)) {
		rng := rand.New(rand.NewPCG(seed, 0x4157))
		n := 2 + rng.IntN(15)
		s, _ := genSpec(rng, n, 3*n)
		c, err := s.build()
		require.NoError(t, err)
		ix, err := path.NewIndex(c)
		require.NoError(t, err)
		for _, a := range c.Versions() {
			for _, b := range c.Versions() {
				r1, err1 := ix.Resolve(a, b)
				r2, err2 := ix.Resolve(a, b, path.AcceptRisks(riskNames...))
				if err1 == nil {
					require.NoError(t, err2)
					require.False(t, routeCost(r1).less(routeCost(r2)), "accepting risks made %s -> %s costlier", a, b)
				}
				if err2 != nil {
					var nr *path.NoRouteError
					require.True(t, errors.As(err2, &nr))
					require.Empty(t, nr.Risks)
				}
			}
			t1, _ := ix.Targets(a)
			t2, _ := ix.Targets(a, path.AcceptRisks(riskNames...))
			for _, x := range t1 {
				require.True(t, slices.ContainsFunc(t2, func(y path.Target) bool {
					return y.Version.Equal(x.Version) && !(refCost{x.Deprecated, x.Hops}).less(refCost{y.Deprecated, y.Hops})
				}))
			}
		}
	}
}

// routeCost is the cost of a route by its hops' flags.
func routeCost(r *path.Route) refCost {
	c := refCost{hops: len(r.Hops)}
	for _, h := range r.Hops {
		if h.Deprecated != "" {
			c.dep++
		}
		if h.ToDeprecated != "" {
			c.dep++
		}
	}
	return c
}

// TestPropertyTargetHops: Target.Next and Last are documented as the first
// and last hop of Target.Route: the whole hop, Why included (issue 25: 1,589
// of 5,276 generated targets differed in Why only).
func TestPropertyTargetHops(t *testing.T) {
	targets, withWhy := 0, 0
	for seed := range uint64(iterations(t, 300, 60)) {
		rng := rand.New(rand.NewPCG(seed, 0x7a6e))
		n := 2 + rng.IntN(15)
		s, o := genSpec(rng, n, 4*n)
		c, err := s.build()
		require.NoError(t, err, "seed %d", seed)
		ix, err := path.NewIndex(c, o.options()...)
		require.NoError(t, err, "seed %d", seed)
		for _, from := range c.TrackVersions(o.track) {
			ts, _ := ix.Targets(from)
			for _, tg := range ts {
				targets++
				r := tg.Route()
				first, last := r.Hops[0], r.Hops[len(r.Hops)-1]
				if first.Why != "" || last.Why != "" {
					withWhy++
				}
				require.Equal(t, first, *tg.Next(), "Targets(%s): Next() of %s, want Route().Hops[0]\nseed %d", from, tg.Version, seed)
				require.Equal(t, last, *tg.Last(), "Targets(%s): Last() of %s, want Route().Hops[%d]\nseed %d", from, tg.Version, len(r.Hops)-1, seed)
			}
		}
	}
	t.Logf("%d targets, %d with a Why on the first or last hop", targets, withWhy)
	require.Positive(t, withWhy, "no generated target has a Why on its first or last hop: the test would pass on nothing")
}
