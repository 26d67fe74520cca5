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

// Property test of ResolveState against an independent model: every state
// of generated two- and three-track catalogs (deprecated edges and versions,
// and a channel on some tracks) enumerated, the moves between allowed states
// found from each track's reference graph, the cheapest
// (deprecated, hops) cost to the target states by Bellman-Ford, and the
// documented preference (smallest change, constraining track, highest
// version) applied greedily over the moves that keep the cost optimal.

type mtCase struct {
	c      *release.Catalog
	tracks []string // in the documented order
	gs     []*refGraph
}

func genMultiTrack(rng *rand.Rand) (*release.Catalog, error) {
	names := []string{"a", "b", "c"}[:2+rng.IntN(2)]
	var rels []release.Release
	var paths []release.UpgradePath
	pools := map[string][]string{}
	for ti, tr := range names {
		n := 2 + rng.IntN(4)
		var pool []string
		for m := 0; len(pool) < n; m++ {
			pool = append(pool, fmt.Sprintf("v%d.%d", 1+m/3, m%3))
			if rng.IntN(4) == 0 && len(pool) < n {
				pool = append(pool, fmt.Sprintf("v%d.%d.1", 1+m/3, m%3))
			}
		}
		pools[tr] = pool
		var rules []release.Rule
		for range rng.IntN(3 * n) {
			from := pool[rng.IntN(n)]
			if rng.IntN(3) == 0 {
				from = ">= " + pool[rng.IntN(n)] + ", < " + pool[rng.IntN(n)]
			}
			r := rule(from, pool[rng.IntN(n)])
			if rng.IntN(5) == 0 {
				r.Deprecated = "old"
			}
			rules = append(rules, r)
		}
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
		_ = ti
	}
	for ti, tr := range names {
		for _, ver := range pools[tr] {
			r := release.Release{Name: tr + ver, Version: v(ver), Track: tr}
			// A track constrains the next one, sometimes.
			if ti+1 < len(names) && rng.IntN(3) > 0 {
				other := pools[names[ti+1]]
				lo, hi := other[rng.IntN(len(other))], other[rng.IntN(len(other))]
				r.Supports = map[string]release.Constraint{names[ti+1]: release.MustParseConstraint(">= " + lo + ", <= " + hi)}
			}
			rels = append(rels, r)
		}
	}
	return release.NewCatalog(rels, nil, paths)
}

func newMTCase(c *release.Catalog, channel string) *mtCase {
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
		o := refOpts{track: t, prereleases: true}
		if slices.Contains(c.Channels(t), channel) {
			o.channel = channel // a channel applies to the tracks that have it
		}
		m.gs = append(m.gs, newRefGraph(c, o, false))
	}
	return m
}

type mtState []int // node per track, in m.tracks order

func (m *mtCase) key(s mtState) string { return fmt.Sprint([]int(s)) }

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
	cost := map[string]refCost{}
	isTarget := func(s mtState) bool {
		for t, d := range dst {
			if d >= 0 && s[t] != d {
				return false
			}
		}
		return true
	}
	for _, s := range states {
		cost[m.key(s)] = inf
		if isTarget(s) && (m.allowed(s) || m.key(s) == m.key(src)) {
			cost[m.key(s)] = refCost{}
		}
	}
	for range len(states) {
		changed := false
		for _, s := range states {
			for _, mv := range m.moves(s) {
				cn := cost[m.key(mv.next)]
				if cn == inf {
					continue
				}
				if c := (refCost{cn.dep + mv.dep, cn.hops + 1}); c.less(cost[m.key(s)]) {
					cost[m.key(s)], changed = c, true
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
		for _, mv := range m.moves(s) {
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
	routes := 0
	for seed := range uint64(iterations(t, 300, 60)) {
		rng := rand.New(rand.NewPCG(seed, 0x57a7e))
		c, err := genMultiTrack(rng)
		require.NoError(t, err, "seed %d", seed)
		channel := ""
		opts := []path.Option{path.AllowPrereleases()}
		if len(c.Channels("b")) > 0 && rng.IntN(2) == 0 {
			channel = "stable"
			opts = append(opts, path.WithChannel(channel))
		}
		m := newMTCase(c, channel)
		states := m.all()
		for range 20 {
			src := states[rng.IntN(len(states))]
			dst := make([]int, len(m.tracks))
			to := path.State{}
			for i := range dst {
				dst[i] = -1
				if rng.IntN(3) > 0 {
					dst[i] = rng.IntN(len(m.gs[i].versions))
					to[m.tracks[i]] = m.gs[i].versions[dst[i]]
				}
			}
			from := path.State{}
			for i, n := range src {
				from[m.tracks[i]] = m.gs[i].versions[n]
			}
			msg := fmt.Sprintf("seed %d: %s -> %s channel %q", seed, from, to, channel)
			want := m.best(src, dst)
			r, err := path.ResolveState(c, from, to, opts...)
			if want == nil {
				require.ErrorIs(t, err, path.ErrNoRoute, msg)
				var se *path.StateNoRouteError
				require.True(t, errors.As(err, &se), msg)
				continue
			}
			require.NoError(t, err, msg)
			routes++
			require.Equal(t, want, steps(r), msg)
			// Every hop is a usable edge of its track, every state entered
			// allowed (checked independently of the reference's moves).
			at := slices.Clone(src)
			for _, h := range r.Hops {
				ti := slices.Index(m.tracks, h.Track)
				g := m.gs[ti]
				e := g.edges[[2]int{at[ti], g.index(h.To)}]
				require.True(t, e != nil && e.usable, "%s: hop %s is not a usable edge", msg, h)
				at[ti] = g.index(h.To)
				require.True(t, m.allowed(at), "%s: hop %s enters a state that is not allowed", msg, h)
			}
			require.Equal(t, strings.Join(want, ";"), strings.Join(steps(r), ";"), msg)
		}
	}
	require.Greater(t, routes, 100, "routes found (the generator should make many)")
}

// With one track, ResolveState finds the route Resolve finds.
func TestPropertyResolveStateOneTrack(t *testing.T) {
	for seed := range uint64(iterations(t, 60, 15)) {
		rng := rand.New(rand.NewPCG(seed, 0x1))
		n := 2 + rng.IntN(10)
		s, o := genSpec(rng, n, 4*n)
		c, err := s.build()
		require.NoError(t, err)
		for _, a := range c.Versions() {
			for _, b := range c.Versions() {
				want, werr := path.Resolve(c, a, b, o.options()...)
				got, gerr := path.ResolveState(c, path.State{"": a}, path.State{"": b}, o.options()...)
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
