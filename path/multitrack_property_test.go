package path_test

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// Property test of Resolve across tracks against an independent model: every state
// of generated two- and three-track catalogs (deprecated edges and versions,
// prereleases, blocked rules, a channel on some tracks, prereleases allowed
// or not) enumerated, the moves between allowed states found from each
// track's reference graph (blocked ranges closing every version they cover,
// prereleases included; the prerelease rule chosen per track and query),
// the cheapest (deprecated, hops) cost to the target states by
// Bellman-Ford, and the documented preference (smallest change,
// constraining track, highest version) applied greedily over the moves that
// keep the cost optimal.

type mtCase struct {
	c      *release.Catalog
	tracks []string // in the documented order
	gs     []*refGraph
	// The reference graphs per track: full, and when the prerelease rule
	// can apply to the track (no channel on it, prereleases not allowed),
	// ga, which enters no prerelease (nil otherwise). gs holds the ones a
	// query searches (forQuery).
	full, ga []*refGraph
}

// genMultiTrack generates a catalog of two or three tracks: GA versions,
// patches and release candidates (v1.2-rc.1 before v1.2), allowing rules
// (exact, ranges, some deprecated) and blocked rules (exact, and ranges,
// `< v1.2` or `>= v1.0, < v1.2`, which cover the release candidates inside
// them that no allowing range admits), a channel on every track but the
// first, and supports constraints from each track to the next.
func genMultiTrack(rng *rand.Rand) (*release.Catalog, error) {
	names := []string{"a", "b", "c"}[:2+rng.IntN(2)]
	var paths []release.UpgradePath
	pools := map[string][]string{}
	for ti, tr := range names {
		pool := genTrackVersions(rng, 2+rng.IntN(4))
		pools[tr] = pool
		rules := genTrackRules(rng, pool)
		var infos []release.VersionInfo
		for _, ver := range pool {
			vi := release.VersionInfo{Version: v(ver)}
			if rng.IntN(8) == 0 {
				vi.Deprecated = "cve"
			}
			if ti > 0 && rng.IntN(3) > 0 { // the first track has no channels
				vi.Channels = []string{"stable"}
			}
			infos = append(infos, vi)
		}
		paths = append(paths, release.UpgradePath{Name: tr, Track: tr, Rules: rules, Versions: infos})
	}
	var rels []release.Release
	for ti, tr := range names {
		for _, ver := range pools[tr] {
			r := release.Release{Name: tr + ver, Version: v(ver), Track: tr}
			// A track constrains the next one, sometimes.
			if ti+1 < len(names) && rng.IntN(3) > 0 {
				r.Supports = map[string]release.Constraint{names[ti+1]: genSupports(rng, pools[names[ti+1]])}
			}
			rels = append(rels, r)
		}
	}
	return release.NewCatalog(rels, nil, paths)
}

// genTrackVersions returns n versions of a track, ascending: releases,
// release candidates and patch releases.
func genTrackVersions(rng *rand.Rand, n int) []string {
	var pool []string
	for m := 0; len(pool) < n; m++ {
		if rng.IntN(2) == 0 {
			pool = append(pool, fmt.Sprintf("v%d.%d-rc.1", 1+m/3, m%3))
			if len(pool) == n {
				break
			}
		}
		pool = append(pool, fmt.Sprintf("v%d.%d", 1+m/3, m%3))
		if rng.IntN(4) == 0 && len(pool) < n {
			pool = append(pool, fmt.Sprintf("v%d.%d.1", 1+m/3, m%3))
		}
	}
	return pool
}

// genTrackRules returns the rules of a track of versions pool: steps to
// the next version, random rules (some deprecated) whose exact ends are
// release candidates more often than their share, and blocked rules
// anywhere in catalog order.
func genTrackRules(rng *rand.Rand, pool []string) []release.Rule {
	n := len(pool)
	pick := func() string { return pool[rng.IntN(n)] }
	var rcs []string
	for _, x := range pool {
		if strings.Contains(x, "-rc.") {
			rcs = append(rcs, x)
		}
	}
	// An exact end is a release candidate more often than its share: a
	// route through one is what the prerelease rule forbids.
	end := func() string {
		if len(rcs) > 0 && rng.IntN(2) == 0 {
			return rcs[rng.IntN(len(rcs))]
		}
		return pick()
	}
	var rules []release.Rule
	// Steps to the next version, some: chains that pass through the
	// release candidates.
	for i := 1; i < n; i++ {
		if rng.IntN(2) == 0 {
			rules = append(rules, rule(pool[i-1], pool[i]))
		}
	}
	for range rng.IntN(3 * n) {
		from := end()
		if rng.IntN(3) == 0 {
			from = ">= " + pick() + ", < " + pick()
		}
		r := rule(from, end())
		if rng.IntN(5) == 0 {
			r.Deprecated = "old"
		}
		rules = append(rules, r)
	}
	for range rng.IntN(4) {
		var from string
		switch rng.IntN(3) {
		case 0:
			from = pick()
		case 1:
			from = "< " + pick()
		default:
			from = ">= " + pick() + ", < " + pick()
		}
		r := rule(from, pick(), blocked("blocked"))
		// Anywhere in catalog order: a blocked rule closes its edges
		// wherever it comes.
		rules = slices.Insert(rules, rng.IntN(len(rules)+1), r)
	}
	return rules
}

// genSupports is a supports constraint on the versions other of the next
// track: a range, sometimes empty, that admits only the release
// candidates it names; sometimes it names the others too, so that routes
// through them are allowed.
func genSupports(rng *rand.Rand, other []string) release.Constraint {
	i, j := rng.IntN(len(other)), rng.IntN(len(other))
	if i > j && rng.IntN(4) > 0 { // an empty range, sometimes
		i, j = j, i
	}
	cons := ">= " + other[i] + ", <= " + other[j]
	for _, x := range other {
		if strings.Contains(x, "-rc.") && rng.IntN(2) == 0 {
			cons += " || " + x
		}
	}
	return release.MustParseConstraint(cons)
}

func newMTCase(c *release.Catalog, channel string, prereleases bool) *mtCase {
	m := &mtCase{c: c, tracks: c.Tracks()}
	constrains := func(t string) bool {
		for _, r := range c.Releases {
			if r.Track == t && len(r.Supports) > 0 {
				return true
			}
		}
		return false
	}
	slices.SortStableFunc(m.tracks, func(a, b string) int {
		if ca, cb := constrains(a), constrains(b); ca != cb {
			if ca {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	for _, t := range m.tracks {
		o := refOpts{track: t, prereleases: prereleases}
		if slices.Contains(c.Channels(t), channel) {
			o.channel = channel // a channel applies to the tracks that have it
		}
		gs := newRefGraphs(c, o) // ga only without a channel and prereleases
		m.full, m.ga = append(m.full, gs.all), append(m.ga, gs.ga)
	}
	m.gs = m.full
	return m
}

// forQuery returns the case a query from src to dst (-1: free) searches:
// the prerelease rule applies per track, so a track with no channel, when
// prereleases are not allowed, that starts on a GA version and is not
// targeted at a prerelease enters no prerelease; the others may enter any.
// It reports whether the rule applies to some track.
func (m *mtCase) forQuery(src mtState, dst []int) (*mtCase, bool) {
	q := *m
	q.gs = slices.Clone(m.full)
	applies := false
	for t, ga := range m.ga {
		versions := m.full[t].versions
		if ga == nil || versions[src[t]].Prerelease() != "" || dst[t] >= 0 && versions[dst[t]].Prerelease() != "" {
			continue
		}
		if slices.ContainsFunc(versions, func(x release.Version) bool { return x.Prerelease() != "" }) {
			q.gs[t], applies = ga, true
		}
	}
	return &q, applies
}

// coversOnly counts the edges from a prerelease that a blocked range closes
// though it does not admit that prerelease (Covers, not Check), and that an
// allowing rule gives: the edges a blocked range would leave open if it
// matched as allowing ranges do.
func coversOnly(c *release.Catalog, track string) int {
	n := 0
	rules := c.Rules(track)
	for _, x := range c.TrackVersions(track) {
		if x.Prerelease() == "" {
			continue
		}
		for _, b := range rules {
			if b.Blocked == "" || !b.From.Covers(x) || b.From.Check(x) || !x.Less(b.To) {
				continue
			}
			if slices.ContainsFunc(rules, func(r release.Rule) bool {
				return r.Blocked == "" && r.To.Equal(b.To) && r.From.Check(x)
			}) {
				n++
			}
		}
	}
	return n
}

type mtState []int // node per track, in m.tracks order

// key numbers the states in the order all lists them.
func (m *mtCase) key(s mtState) int {
	k := 0
	for t, g := range m.gs {
		k = k*len(g.versions) + s[t]
	}
	return k
}

func (m *mtCase) allowed(s mtState) bool {
	for t, tr := range m.tracks {
		r, _ := m.c.ReleaseOn(tr, m.gs[t].versions[s[t]])
		for u, other := range m.tracks {
			if cons, ok := r.Supports[other]; ok && !cons.Check(m.gs[u].versions[s[u]]) {
				return false
			}
		}
	}
	return true
}

type mtMove struct {
	t, to int
	next  mtState
	dep   int
}

func (m *mtCase) moves(s mtState) []mtMove {
	var out []mtMove
	for t, g := range m.gs {
		for _, y := range g.adj[s[t]] {
			n := slices.Clone(s)
			n[t] = y
			if m.allowed(n) {
				out = append(out, mtMove{t, y, n, g.dep(s[t], y)})
			}
		}
	}
	return out
}

func (m *mtCase) all() []mtState {
	out := []mtState{{}}
	for _, g := range m.gs {
		var next []mtState
		for _, s := range out {
			for i := range g.versions {
				next = append(next, append(slices.Clone(s), i))
			}
		}
		out = next
	}
	return out
}

// best returns the reference route (as "track version" steps) from src to
// the target (-1: free), or nil.
func (m *mtCase) best(src mtState, dst []int) []string {
	states := m.all()
	inf := refCost{1 << 30, 1 << 30}
	cost := make([]refCost, len(states))
	moves := make([][]mtMove, len(states)) // by key; states are in key order
	isTarget := func(s mtState) bool {
		for t, d := range dst {
			if d >= 0 && s[t] != d {
				return false
			}
		}
		return true
	}
	for k, s := range states {
		cost[k] = inf
		if isTarget(s) && (m.allowed(s) || k == m.key(src)) {
			cost[k] = refCost{}
		}
		moves[k] = m.moves(s)
	}
	for range len(states) {
		changed := false
		for k := range states {
			for _, mv := range moves[k] {
				cn := cost[m.key(mv.next)]
				if cn == inf {
					continue
				}
				if c := (refCost{cn.dep + mv.dep, cn.hops + 1}); c.less(cost[k]) {
					cost[k], changed = c, true
				}
			}
		}
		if !changed {
			break
		}
	}
	if cost[m.key(src)] == inf {
		return nil
	}
	out := []string{}
	for s := src; cost[m.key(s)].hops > 0; {
		// Per track the highest tight move, then between tracks the
		// smallest change, then the first track.
		best := map[int]mtMove{}
		for _, mv := range moves[m.key(s)] {
			cn := cost[m.key(mv.next)]
			if cn == inf || (refCost{cn.dep + mv.dep, cn.hops + 1}) != cost[m.key(s)] {
				continue
			}
			if b, ok := best[mv.t]; !ok || mv.to > b.to {
				best[mv.t] = mv
			}
		}
		var pick *mtMove
		for t := range m.tracks {
			if mv, ok := best[t]; ok && (pick == nil || m.size(s, mv) < m.size(s, *pick)) {
				pick = &mv
			}
		}
		out = append(out, m.tracks[pick.t]+" "+m.gs[pick.t].versions[pick.to].String())
		s = pick.next
	}
	return out
}

// size is the change a move makes to its track: 0 prerelease, 1 patch, 2
// minor, 3 major.
func (m *mtCase) size(s mtState, mv mtMove) int {
	x, y := m.gs[mv.t].versions[s[mv.t]], m.gs[mv.t].versions[mv.to]
	switch {
	case x.Major() != y.Major():
		return 3
	case x.Minor() != y.Minor():
		return 2
	case x.Patch() != y.Patch():
		return 1
	}
	return 0
}

func TestPropertyResolveState(t *testing.T) {
	// What the generated cases exercise, checked at the end so that the
	// property cannot hold vacuously.
	var routes, preRoutes, gaRuleQueries, gaRuleChanged, covered, statics int
	seeds := iterations(t, 300, 60)
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 0x57a7e))
		c, err := genMultiTrack(rng)
		require.NoError(t, err, "seed %d", seed)
		channel := ""
		var opts []path.Option
		prereleases := rng.IntN(2) == 0
		if prereleases {
			opts = append(opts, path.AllowPrereleases())
		}
		if len(c.Channels("b")) > 0 && rng.IntN(2) == 0 {
			channel = "stable"
			opts = append(opts, path.WithChannel(channel))
		}
		m := newMTCase(c, channel, prereleases)
		var desc strings.Builder
		for _, tr := range m.tracks {
			fmt.Fprintf(&desc, "track %s: %s", tr, describe(c, tr))
			covered += coversOnly(c, tr)
		}
		states := m.all()
		for range 20 {
			src := states[rng.IntN(len(states))]
			dst := make([]int, len(m.tracks))
			to := path.State{}
			for i := range dst {
				dst[i] = -1
				if n := len(m.gs[i].versions); rng.IntN(3) > 0 {
					dst[i] = rng.IntN(n)
					if rng.IntN(2) == 0 { // an upgrade or none, more often
						dst[i] = src[i] + rng.IntN(n-src[i])
					}
					to[m.tracks[i]] = m.gs[i].versions[dst[i]]
				}
			}
			from := path.State{}
			for i, n := range src {
				from[m.tracks[i]] = m.gs[i].versions[n]
			}
			msg := fmt.Sprintf("seed %d: %s -> %s channel %q prereleases %v\n%s", seed, from, to, channel, prereleases, desc.String())
			q, gaRule := m.forQuery(src, dst)
			want := q.best(src, dst)
			if gaRule {
				gaRuleQueries++
				if !slices.Equal(want, m.best(src, dst)) {
					gaRuleChanged++
				}
			}
			r, err := path.Resolve(c, from, to, opts...)
			if want == nil {
				require.ErrorIs(t, err, path.ErrNoRoute, msg)
				var se *path.NoRouteError
				require.True(t, errors.As(err, &se), msg)
				if se.Static != "" {
					statics++
				}
				continue
			}
			require.NoError(t, err, msg)
			routes++
			require.Equal(t, want, steps(r), msg)
			// Every hop is a usable edge of its track, every state entered
			// allowed (checked independently of the reference's moves), and
			// a track the prerelease rule applies to enters no prerelease.
			at := slices.Clone(src)
			enters := false
			for _, h := range r.Hops {
				ti := slices.Index(m.tracks, h.Track)
				g := q.gs[ti]
				e := g.edges[[2]int{at[ti], g.index(h.To)}]
				require.True(t, e != nil && e.usable, "%s: hop %s is not a usable edge", msg, h)
				require.False(t, e.blocked, "%s: hop %s takes a blocked edge", msg, h)
				at[ti] = g.index(h.To)
				require.True(t, q.allowed(at), "%s: hop %s enters a state that is not allowed", msg, h)
				if h.To.Prerelease() != "" {
					enters = true
					require.False(t, q.gs[ti] == m.ga[ti], "%s: hop %s enters a prerelease between GA versions", msg, h)
				}
			}
			if enters {
				preRoutes++
			}
			require.Equal(t, strings.Join(want, ";"), strings.Join(steps(r), ";"), msg)
		}
	}
	t.Logf("%d routes, %d entering a prerelease; the prerelease rule applied to %d queries and changed %d answers; %d prerelease edges closed by a blocked range only through Covers; %d no-routes found before the search (the model agrees)",
		routes, preRoutes, gaRuleQueries, gaRuleChanged, covered, statics)
	require.Greater(t, routes, seeds, "routes found (the generator should make many)")
	require.Greater(t, preRoutes, seeds/10, "routes entering a prerelease")
	require.GreaterOrEqual(t, gaRuleChanged, seeds/30, "answers the prerelease rule changes")
	require.Greater(t, covered, seeds/15, "prerelease edges blocked by a range that does not admit them")
	require.Greater(t, statics, seeds/10, "no-routes found before the search")
}

// With one track, the search across tracks finds the route the one-track
// search finds.
func TestPropertyResolveAcrossOneTrack(t *testing.T) {
	for seed := range uint64(iterations(t, 60, 15)) {
		rng := rand.New(rand.NewPCG(seed, 0x1))
		n := 2 + rng.IntN(10)
		s, o := genSpec(rng, n, 4*n)
		c, err := s.build()
		require.NoError(t, err)
		for _, a := range c.Versions() {
			for _, b := range c.Versions() {
				want, werr := path.Resolve(c, at(a), at(b), o.options()...)
				got, gerr := path.ResolveAcross(c, path.State{"": a}, path.State{"": b}, o.options()...)
				msg := fmt.Sprintf("seed %d: %s -> %s", seed, a, b)
				if werr != nil {
					require.ErrorIs(t, gerr, path.ErrNoRoute, msg)
					require.ErrorIs(t, werr, path.ErrNoRoute, msg)
					continue
				}
				require.NoError(t, gerr, msg)
				require.Equal(t, hopsOf(want), hopsOf(got), msg)
			}
		}
	}
}

// TestPropertyStateRelaxations: on generated multi-track catalogs with
// risks on some rules, whenever accepting every risk gives a route and
// accepting none does not, the error names risks that give a route (its
// Relaxed route) and each is needed; when accepting every risk gives none,
// it names none.
func TestPropertyStateRelaxations(t *testing.T) {
	var needed, none int
	seeds := iterations(t, 300, 60)
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 0x7e1a))
		c, err := genMultiTrack(rng)
		require.NoError(t, err, "seed %d", seed)
		names := []string{"r1", "r2", "r3"}
		for pi := range c.Paths {
			for ri := range c.Paths[pi].Rules {
				if rng.IntN(3) == 0 {
					c.Paths[pi].Rules[ri].Risks = []release.Risk{{Name: names[rng.IntN(len(names))]}}
				}
			}
		}
		m := newMTCase(c, "", true)
		states := m.all()
		for range 20 {
			src := states[rng.IntN(len(states))]
			from, to := path.State{}, path.State{}
			for i, n := range src {
				from[m.tracks[i]] = m.gs[i].versions[n]
				if rng.IntN(2) == 0 {
					to[m.tracks[i]] = m.gs[i].versions[rng.IntN(len(m.gs[i].versions))]
				}
			}
			msg := fmt.Sprintf("seed %d: %s -> %s\n%s", seed, from, to, describeRisks(c))
			opts := []path.Option{path.AllowPrereleases()}
			_, err := path.Resolve(c, from, to, opts...)
			if err == nil {
				continue
			}
			var se *path.NoRouteError
			require.True(t, errors.As(err, &se), "%v\n%s", err, msg)
			_, errAll := path.Resolve(c, from, to, append(opts, path.AcceptRisks(names...))...)
			if errAll != nil {
				none++
				require.Empty(t, se.Relaxations, "no risk gives a route, yet: %v\n%s", err, msg)
				continue
			}
			needed++
			require.NotEmpty(t, se.Risks, "accepting every risk gives a route, but the error names none: %v\n%s", err, msg)
			r, err := path.Resolve(c, from, to, append(opts, path.AcceptRisks(se.Risks...))...)
			require.NoError(t, err, "accepting %v\n%s", se.Risks, msg)
			require.Equal(t, steps(r), steps(se.Relaxed), "the route the relaxations give\n%s", msg)
			for i := range se.Risks {
				fewer := slices.Delete(slices.Clone(se.Risks), i, i+1)
				_, err := path.Resolve(c, from, to, append(opts, path.AcceptRisks(fewer...))...)
				require.ErrorIs(t, err, path.ErrNoRoute, "accepting %v only still gives a route: %v is not needed\n%s", fewer, se.Risks[i], msg)
			}
		}
	}
	t.Logf("%d no-routes that risks mend, %d that none does", needed, none)
	require.Greater(t, needed, seeds/5, "no-routes that risks mend")
	require.Greater(t, none, seeds/5, "no-routes that no risk mends")
}

// describeRisks lists the rules of c that have risks.
func describeRisks(c *release.Catalog) string {
	var b strings.Builder
	for _, p := range c.Paths {
		for _, r := range p.Rules {
			if len(r.Risks) > 0 {
				fmt.Fprintf(&b, "track %s: %s -> %s risk %s\n", p.Track, r.From, r.To, r.Risks[0].Name)
			}
		}
	}
	return b.String()
}
