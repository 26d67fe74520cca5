package path_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

var v = release.MustParseVersion

func strs(xs []release.Version) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	return out
}

func loadTestdata(t testing.TB) *release.Catalog {
	t.Helper()
	c, err := release.LoadDir("../testdata/catalog")
	require.NoError(t, err)
	return c
}

// spec describes a catalog built in code: releases (optionally shipping a
// kubernetes-master version), rules and version flags on one track.
type spec struct {
	Track    string
	Versions []string
	K8s      map[string]string // release version -> kubernetes-master version
	Rules    []release.Rule
	Infos    []release.VersionInfo
}

const k8s = "kubernetes-master"

func (s spec) catalog(t testing.TB) *release.Catalog {
	t.Helper()
	c, err := s.build()
	require.NoError(t, err)
	return c
}

func (s spec) build() (*release.Catalog, error) {
	var rels []release.Release
	var comps []release.ComponentVersion
	seen := map[string]bool{}
	for _, ver := range s.Versions {
		r := release.Release{Name: "r-" + ver, Version: v(ver), Track: s.Track}
		if kv, ok := s.K8s[ver]; ok {
			r.Components = []release.ComponentRef{{Name: k8s, Version: v(kv)}}
			if !seen[kv] {
				seen[kv] = true
				comps = append(comps, release.ComponentVersion{Name: k8s, Version: v(kv), Type: release.TypeInline, Handler: k8s})
			}
		}
		rels = append(rels, r)
	}
	paths := []release.UpgradePath{{Name: "paths", Track: s.Track, Rules: s.Rules, Versions: s.Infos}}
	return release.NewCatalog(rels, comps, paths)
}

type ruleOpt func(*release.Rule)

func rule(from, to string, opts ...ruleOpt) release.Rule {
	r := release.Rule{From: release.MustParseConstraint(from), To: v(to)}
	for _, o := range opts {
		o(&r)
	}
	return r
}

func blocked(why string) ruleOpt    { return func(r *release.Rule) { r.Blocked = why } }
func deprecated(why string) ruleOpt { return func(r *release.Rule) { r.Deprecated = why } }
func risks(names ...string) ruleOpt {
	return func(r *release.Rule) {
		for _, n := range names {
			r.Risks = append(r.Risks, release.Risk{Name: n, Message: "beware of " + n})
		}
	}
}
func pre(names ...string) ruleOpt {
	return func(r *release.Rule) {
		for _, n := range names {
			r.PreChecks = append(r.PreChecks, release.Check{Name: n, Required: true})
		}
	}
}

func notInstallable(ver string) release.VersionInfo {
	f := false
	return release.VersionInfo{Version: v(ver), Installable: &f}
}

// hopsOf returns the versions a route passes through, From first.
func hopsOf(r *path.Route) []string {
	if r == nil {
		return nil
	}
	return strs(r.Versions())
}

func noRoute(t testing.TB, err error) *path.NoRouteError {
	t.Helper()
	require.ErrorIs(t, err, path.ErrNoRoute)
	var nr *path.NoRouteError
	require.True(t, errors.As(err, &nr), "error %T is not a *NoRouteError", err)
	return nr
}

// ---------------------------------------------------------------------------
// An independent reference model of the graph, written from the package
// documentation without the Index: rules expanded by checking every version,
// and the routes found by other algorithms (plain BFS, backward dynamic
// programming, brute-force enumeration).

type refEdge struct {
	rule      release.Rule // first non-blocked rule in catalog order
	blocked   bool
	usable    bool
	overrides []string
}

type refGraph struct {
	versions []release.Version
	vdep     []bool // deprecated versions
	costTo   map[int][]refCost
	edges    map[[2]int]*refEdge
	adj      [][]int // usable edges, targets ascending
	radj     [][]int
}

type refOpts struct {
	channel     string
	prereleases bool
	track       string
	accept      map[string]bool
	guards      []path.Guard
	overrides   map[string]bool
}

func (o refOpts) options() []path.Option {
	var out []path.Option
	if o.track != "" {
		out = append(out, path.WithTrack(o.track))
	}
	var acc, ovr []string
	for k := range o.accept {
		acc = append(acc, k)
	}
	for k := range o.overrides {
		ovr = append(ovr, k)
	}
	slices.Sort(acc)
	slices.Sort(ovr)
	if len(acc) > 0 {
		out = append(out, path.AcceptRisks(acc...))
	}
	if len(o.guards) > 0 {
		out = append(out, path.WithGuards(o.guards...))
	}
	if len(ovr) > 0 {
		out = append(out, path.OverrideGuards(ovr...))
	}
	if o.channel != "" {
		out = append(out, path.WithChannel(o.channel))
	}
	if o.prereleases {
		out = append(out, path.AllowPrereleases())
	}
	return out
}

// refGraphs are the reference graphs of one catalog and options: all, and
// when the prerelease rule applies, GA without prerelease intermediates.
type refGraphs struct{ all, ga *refGraph }

func newRefGraphs(c *release.Catalog, o refOpts) refGraphs {
	gs := refGraphs{all: newRefGraph(c, o, false)}
	if o.channel == "" && !o.prereleases {
		gs.ga = newRefGraph(c, o, true)
	}
	return gs
}

// pick is the graph a route from src to dst searches: between two GA
// versions, prereleases are left out.
func (gs refGraphs) pick(src, dst int) *refGraph {
	if gs.ga != nil && gs.all.versions[src].Prerelease() == "" && gs.all.versions[dst].Prerelease() == "" {
		return gs.ga
	}
	return gs.all
}

// newRefGraph builds the reference graph; an edge into a version outside
// o.channel, or (gaOnly) into a prerelease, is not usable.
func newRefGraph(c *release.Catalog, o refOpts, gaOnly bool) *refGraph {
	g := &refGraph{versions: c.TrackVersions(o.track), edges: map[[2]int]*refEdge{}}
	n := len(g.versions)
	g.expand(c.Rules(o.track))
	g.vdep = make([]bool, n)
	for i, x := range g.versions {
		if vi, ok := c.VersionInfo(o.track, x); ok && vi.Deprecated != "" {
			g.vdep[i] = true
		}
	}
	g.adj = make([][]int, n)
	g.radj = make([][]int, n)
	for k, e := range g.edges {
		f, to := k[0], k[1]
		if e.usable = g.open(c, o, gaOnly, e, f, to); e.usable {
			g.adj[f] = append(g.adj[f], to)
			g.radj[to] = append(g.radj[to], f)
		}
	}
	for i := range g.adj {
		slices.Sort(g.adj[i])
		slices.Sort(g.radj[i])
	}
	return g
}

// expand gives every rule's edges by checking every version: the first
// rule of an edge is recorded, a blocked one blocks it, and only an exact
// from allows a downgrade (a blocked range blocks one whatever the order
// of the rules).
func (g *refGraph) expand(rules []release.Rule) {
	var downBlocks [][2]int // downgrades blocked by a range
	for _, r := range rules {
		to := g.index(r.To)
		_, exact := r.From.Exact()
		for f := range g.versions {
			match := r.From.Check(g.versions[f])
			if r.Blocked != "" {
				match = r.From.Covers(g.versions[f]) // prereleases included
			}
			if f == to || !match {
				continue
			}
			if g.versions[to].Less(g.versions[f]) && !exact {
				if r.Blocked != "" {
					downBlocks = append(downBlocks, [2]int{f, to})
				}
				continue
			}
			e := g.edges[[2]int{f, to}]
			if e == nil {
				e = &refEdge{rule: r}
				g.edges[[2]int{f, to}] = e
			}
			if r.Blocked != "" {
				e.blocked = true
			}
		}
	}
	for _, k := range downBlocks {
		if e := g.edges[k]; e != nil {
			e.blocked = true
		}
	}
}

// open reports whether the edge e from f to to is usable with o, and
// records on e the guards o overrides on it.
func (g *refGraph) open(c *release.Catalog, o refOpts, gaOnly bool, e *refEdge, f, to int) bool {
	usable := !e.blocked
	vi, ok := c.VersionInfo(o.track, g.versions[to])
	if ok && !vi.IsInstallable() {
		usable = false
	}
	if o.channel != "" && (!ok || !vi.InChannel(o.channel)) {
		usable = false
	}
	if gaOnly && g.versions[to].Prerelease() != "" {
		usable = false
	}
	for _, r := range e.rule.Risks {
		if !o.accept[r.Name] {
			usable = false
		}
	}
	rf, _ := c.ReleaseOn(o.track, g.versions[f])
	rt, _ := c.ReleaseOn(o.track, g.versions[to])
	for _, gd := range o.guards {
		if !refViolates(gd, rf, rt) {
			continue
		}
		if !gd.Overridable || !o.overrides[gd.Name] {
			usable = false
		} else {
			e.overrides = append(e.overrides, gd.Name)
		}
	}
	return usable
}

// refViolates reports whether the hop from rf to rt moves gd's component
// across a major version or more minor versions than gd allows.
func refViolates(gd path.Guard, rf, rt *release.Release) bool {
	a, ok1 := rf.Ships(gd.Component)
	b, ok2 := rt.Ships(gd.Component)
	if !ok1 || !ok2 {
		return false
	}
	d := int(a.Minor()) - int(b.Minor())
	if d < 0 {
		d = -d
	}
	return a.Major() != b.Major() || d > gd.MaxMinorSkew
}

func (g *refGraph) index(x release.Version) int {
	return slices.IndexFunc(g.versions, func(y release.Version) bool { return y.Equal(x) })
}

// bfs returns hop distances from src over adj (-1: unreachable).
func bfs(adj [][]int, src int) []int {
	dist := make([]int, len(adj))
	for i := range dist {
		dist[i] = -1
	}
	dist[src] = 0
	q := []int{src}
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		for _, y := range adj[x] {
			if dist[y] < 0 {
				dist[y] = dist[x] + 1
				q = append(q, y)
			}
		}
	}
	return dist
}

// dep is the deprecation an edge adds: its rule's, and its target's.
func (g *refGraph) dep(f, t int) int {
	d := 0
	if g.edges[[2]int{f, t}].rule.Deprecated != "" {
		d++
	}
	if g.vdep[t] {
		d++
	}
	return d
}

// refCost is (deprecated, hops), compared in that order.
type refCost struct{ dep, hops int }

func (a refCost) less(b refCost) bool { return a.dep < b.dep || a.dep == b.dep && a.hops < b.hops }

// costOf is the cost of a route given as nodes.
func (g *refGraph) costOf(route []int) refCost {
	c := refCost{hops: len(route) - 1}
	for i := 1; i < len(route); i++ {
		c.dep += g.dep(route[i-1], route[i])
	}
	return c
}

// best returns the best route from src to dst by the documented order,
// computed backwards: the cheapest (deprecated, hops) cost to dst from every
// node by Bellman-Ford, then greedily the highest next version over an edge
// that keeps the cost optimal. nil: no route.
func (g *refGraph) best(src, dst int) []int {
	cost := g.costs(dst)
	inf := refCost{1 << 30, 1 << 30}
	if cost[src] == inf {
		return nil
	}
	route := []int{src}
	for x := src; x != dst; {
		next := -1
		for _, y := range g.adj[x] { // ascending: the last fit is the highest
			if cost[y] != inf && (refCost{cost[y].dep + g.dep(x, y), cost[y].hops + 1}) == cost[x] {
				next = y
			}
		}
		route = append(route, next)
		x = next
	}
	return route
}

// costs returns the cheapest cost from every node to dst (Bellman-Ford,
// cached per dst).
func (g *refGraph) costs(dst int) []refCost {
	if c, ok := g.costTo[dst]; ok {
		return c
	}
	n := len(g.versions)
	inf := refCost{1 << 30, 1 << 30}
	cost := make([]refCost, n)
	for i := range cost {
		cost[i] = inf
	}
	cost[dst] = refCost{}
	for range n {
		changed := false
		for x := range n {
			for _, y := range g.adj[x] {
				if cost[y] == inf {
					continue
				}
				if c := (refCost{cost[y].dep + g.dep(x, y), cost[y].hops + 1}); c.less(cost[x]) {
					cost[x], changed = c, true
				}
			}
		}
		if !changed {
			break
		}
	}
	if g.costTo == nil {
		g.costTo = map[int][]refCost{}
	}
	g.costTo[dst] = cost
	return cost
}

// bruteBest enumerates every simple route (a cheapest route never repeats a
// version: every hop costs) and picks the best by the documented order. Only
// for small graphs.
func (g *refGraph) bruteBest(src, dst int) []int {
	var best []int
	seen := make([]bool, len(g.versions))
	var walk func(route []int)
	walk = func(route []int) {
		x := route[len(route)-1]
		if x == dst {
			if best == nil {
				best = slices.Clone(route)
				return
			}
			c, b := g.costOf(route), g.costOf(best)
			if c.less(b) || c == b && slices.CompareFunc(route, best, func(a, b int) int {
				return g.versions[b].Compare(g.versions[a]) // higher first
			}) < 0 {
				best = slices.Clone(route)
			}
			return
		}
		seen[x] = true
		for _, y := range g.adj[x] {
			if !seen[y] {
				walk(append(route, y))
			}
		}
		seen[x] = false
	}
	walk([]int{src})
	return best
}

// checkRoute verifies a route edge by edge against the reference model.
func (g *refGraph) checkRoute(t testing.TB, r *path.Route, track string, from, to release.Version) {
	t.Helper()
	require.NotNil(t, r)
	require.True(t, r.From.Equal(from), "route starts at %s, want %s", r.From, from)
	require.True(t, r.To.Equal(to), "route ends at %s, want %s", r.To, to)
	require.Equal(t, track, r.Track)
	at := r.From
	for i, h := range r.Hops {
		require.True(t, h.From.Equal(at), "hop %d starts at %s, want %s", i, h.From, at)
		f, tt := g.index(h.From), g.index(h.To)
		require.True(t, f >= 0 && tt >= 0, "hop %d: unknown version", i)
		e := g.edges[[2]int{f, tt}]
		require.NotNil(t, e, "hop %d: no rule gives %s -> %s", i, h.From, h.To)
		require.True(t, e.usable, "hop %d: edge %s -> %s is not usable", i, h.From, h.To)
		require.Equal(t, e.rule.From.String(), h.Rule.From.String(), "hop %d records another rule", i)
		require.Equal(t, e.rule.Deprecated, h.Deprecated)
		require.Equal(t, e.rule.Risks, h.Risks)
		require.Equal(t, e.rule.PreChecks, h.PreChecks)
		require.Equal(t, e.rule.PostChecks, h.PostChecks)
		require.Equal(t, e.overrides, h.Overrides)
		at = h.To
	}
	require.True(t, at.Equal(to), "route ends at %s, want %s", at, to)
}

// nodes is the route as nodes of g.
func (g *refGraph) nodes(r *path.Route) []int {
	out := []int{g.index(r.From)}
	for _, h := range r.Hops {
		out = append(out, g.index(h.To))
	}
	return out
}

func (g *refGraph) names(route []int) []string {
	out := make([]string, len(route))
	for i, x := range route {
		out[i] = g.versions[x].String()
	}
	return out
}

func describe(c *release.Catalog, track string) string {
	s := fmt.Sprintf("versions: %v\n", strs(c.TrackVersions(track)))
	for _, r := range c.Rules(track) {
		s += fmt.Sprintf("  %q -> %s blocked=%q deprecated=%q risks=%v\n", r.From, r.To, r.Blocked, r.Deprecated, r.Risks)
	}
	for _, p := range c.Paths {
		for _, vi := range p.Versions {
			s += fmt.Sprintf("  version %s installable=%v\n", vi.Version, vi.IsInstallable())
		}
	}
	return s
}

// at is the state of a one-track system at v on the default track.
func at(v release.Version) path.State { return path.State{"": v} }
