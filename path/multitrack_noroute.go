package path

import (
	"cmp"
	"maps"
	"slices"
)

// noRoute explains a failed search: a track that cannot reach its target
// on its own, or the compatibility constraints that refused moves.
func (m *multi) noRoute() error {
	e := &NoRouteError{FromState: m.state(m.src), ToState: m.to, States: len(m.key)}
	for t, ix := range m.ix {
		if m.dst[t] < 0 || m.dst[t] == m.src[t] {
			continue
		}
		s := ix.getScratch()
		if !ix.walk(s, m.src[t], m.dst[t], m.q[t], false) {
			e.Track, e.Err = m.tracks[t], ix.noRoute(s, m.src[t], m.dst[t], m.q[t])
			ix.pool.Put(s)
			m.relax(e) // what the track needs may not be enough for the states
			return e
		}
		ix.pool.Put(s)
	}
	m.relax(e)
	// Search again, recording every refusal.
	m.diag = map[refusal]bool{}
	m.reset()
	m.walk()
	e.Blocks = m.blocks()
	return e
}

// reset forgets the states a search settled.
func (m *multi) reset() {
	m.key, m.dist, m.dep, m.targets, m.stopped = nil, nil, nil, nil, false
	m.levels.reset()
	m.ids.init(1024)
}

// search runs a new search with the queries qs (one per track) and returns
// the route it picks, nil when there is none.
func (m *multi) search(qs []*query) *Route {
	m.q = qs
	m.reachable()
	m.reset()
	return m.best()
}

// relax finds a set of relaxations (risks to accept, guards to override)
// that gives a route through the states: it takes those of the best route when every risk is
// accepted and every overridable guard overridden, then drops, in route
// order, each one without which a route still exists. What is left is
// needed as a whole. Unlike one track's, it does not look for a smaller
// set on another route (that would be up to 2^8 searches of the state
// product). e.Relaxed is the route the set gives.
func (m *multi) relax(e *NoRouteError) {
	base := m.q
	defer func() { m.q = base; m.reachable() }()
	any := false
	for t, ix := range m.ix {
		any = any || len(ix.relaxations(base[t])) > 0
	}
	if !any {
		return
	}
	all := make([]*query, len(base))
	for t, q := range base {
		w := *q
		w.acceptAll, w.overrideAll = true, true
		all[t] = &w
	}
	r := m.search(all)
	if r == nil {
		return
	}
	var set []Relaxation
	for _, h := range r.Hops {
		t := slices.Index(m.tracks, h.Track)
		for _, x := range unaccepted(h.Risks, base[t]) {
			if rx := (Relaxation{Kind: AcceptRisk, Name: x.Name}); !slices.Contains(set, rx) {
				set = append(set, rx)
			}
		}
		for _, g := range h.Overrides {
			i := slices.IndexFunc(m.ix[t].guards, func(x Guard) bool { return x.Name == g })
			if rx := (Relaxation{Kind: OverrideGuard, Name: g}); (base[t].overridden == nil || !base[t].overridden[i]) && !slices.Contains(set, rx) {
				set = append(set, rx)
			}
		}
	}
	for i := 0; i < len(set); {
		fewer := slices.Delete(slices.Clone(set), i, i+1)
		if m.search(m.with(base, fewer)) != nil {
			set = fewer
		} else {
			i++
		}
	}
	e.Relaxed = m.search(m.with(base, set))
	e.Relaxations = set
	for _, x := range set {
		if x.Kind == OverrideGuard {
			e.Overrides = append(e.Overrides, x.Name)
		} else {
			e.Risks = append(e.Risks, x.Name)
		}
	}
}

// with returns the queries base with the relaxations set applied.
func (m *multi) with(base []*query, set []Relaxation) []*query {
	out := make([]*query, len(base))
	for t, q := range base {
		w := *q
		w.accepted = maps.Clone(q.accepted)
		if w.accepted == nil {
			w.accepted = map[string]bool{}
		}
		w.overridden = slices.Clone(q.overridden)
		if w.overridden == nil {
			w.overridden = make([]bool, len(m.ix[t].guards))
		}
		for _, x := range set {
			if x.Kind == AcceptRisk {
				w.accepted[x.Name] = true
			} else if i := slices.IndexFunc(m.ix[t].guards, func(g Guard) bool { return g.Name == x.Name }); i >= 0 {
				w.overridden[i] = true
			}
		}
		out[t] = &w
	}
	return out
}

func (m *multi) blocks() []Incompatibility {
	out := make([]Incompatibility, 0, len(m.diag))
	for r := range m.diag {
		out = append(out, m.incompatibility(r))
	}
	sortIncompatibilities(out)
	return out
}

// current returns the constraints the current state breaks.
func (m *multi) current() []Incompatibility {
	var out []Incompatibility
	for t := range m.tracks {
		for u := range m.tracks {
			if s := m.sup[t][u]; u != t && s != nil && s[m.src[t]] != nil && !s[m.src[t]][m.src[u]] {
				out = append(out, m.incompatibility(refusal{int32(t), m.src[t], int32(u), m.src[u]}))
			}
		}
	}
	sortIncompatibilities(out)
	return out
}

func (m *multi) incompatibility(r refusal) Incompatibility {
	return Incompatibility{
		Track: m.tracks[r.t], Version: m.ix[r.t].versions[r.i], Other: m.tracks[r.u],
		Constraint: m.cons[r.t][r.u][r.i], Got: m.ix[r.u].versions[r.j],
	}
}

func sortIncompatibilities(bs []Incompatibility) {
	slices.SortFunc(bs, func(a, b Incompatibility) int {
		return cmp.Or(cmp.Compare(a.Track, b.Track), a.Version.Compare(b.Version), cmp.Compare(a.Other, b.Other), a.Got.Compare(b.Got))
	})
}
