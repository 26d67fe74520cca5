package path

import (
	"cmp"
	"maps"
	"slices"
	"sync"

	"github.com/hopdag/hopdag/release"
)

// Resolve is Resolve of one track on a built index, its states the
// versions of the index's track. opts may accept more
// risks and override more guards, in addition to those given to NewIndex.
// The track and the guards are the index's: WithGuards, and WithTrack naming
// another track, are refused (ErrInvalidOption).
func (ix *Index) Resolve(current, target release.Version, opts ...Option) (*Route, error) {
	q, err := ix.newQuery(opts)
	if err != nil {
		return nil, err
	}
	src, err := ix.lookup(current, "current")
	if err != nil {
		return nil, err
	}
	dst, err := ix.lookup(target, "target")
	if err != nil {
		return nil, err
	}
	if src == dst {
		return &Route{Track: ix.track, From: ix.versions[src], To: ix.versions[dst], Hops: []Hop{}}, nil
	}
	q = ix.prereleaseRule(q, src, dst)
	s := ix.getScratch()
	defer ix.pool.Put(s)
	if ix.walk(s, src, dst, q, false) {
		return ix.bestRoute(s, src, dst, q), nil
	}
	return nil, ix.noRoute(s, src, dst, q)
}

// Targets is Targets of one track on a built index, its state the
// version of the index's track; opts are as for Index.Resolve.
//
// It costs one search over the reachable versions, time and memory linear
// in the versions and edges it visits (plus a sort per hop count when
// routes tie); the routes are built only when [Target.Route] is called.
func (ix *Index) Targets(current release.Version, opts ...Option) ([]Target, error) {
	q, err := ix.newQuery(opts)
	if err != nil {
		return nil, err
	}
	src, err := ix.lookup(current, "current")
	if err != nil {
		return nil, err
	}
	s := ix.getScratch()
	defer ix.pool.Put(s)
	var out []Target
	if ga := ix.prereleaseRule(q, src, -1); ga != q {
		// From a GA version: the GA targets by routes that enter no
		// prerelease, the prerelease targets by any route.
		ix.walk(s, src, -1, ga, true)
		out = ix.collect(s, src, func(v int32) bool { return !ix.pre[v] }, out)
		s.restamp()
		ix.walk(s, src, -1, q, true)
		out = ix.collect(s, src, func(v int32) bool { return ix.pre[v] }, out)
		slices.SortFunc(out, func(a, b Target) int { return cmp.Compare(a.node, b.node) })
	} else {
		ix.walk(s, src, -1, q, true)
		out = ix.collect(s, src, nil, out)
	}
	if len(out) == 0 {
		return nil, ix.noRoute(s, src, -1, q)
	}
	return out, nil
}

// collect appends the targets the last walk reached (keep: those it keeps;
// nil: all), sharing one copy of the walk's predecessor tree.
func (ix *Index) collect(s *scratch, src int32, keep func(int32) bool, out []Target) []Target {
	n := int32(len(ix.versions))
	kept := func(v int32) bool { return s.gen[v] == s.stamp && v != src && (keep == nil || keep(v)) }
	// Count first: out and the tree's nodes are allocated once, at their
	// size, not grown by doubling.
	k := 0
	for v := range n {
		if kept(v) {
			k++
		}
	}
	if k == 0 {
		return out
	}
	t := &tree{ix: ix, src: src, pred: slices.Clone(s.pred), arc: slices.Clone(s.arc), dep: slices.Clone(s.dep), nodes: make([]int32, 0, k)}
	out = slices.Grow(out, k)
	for v := range n {
		if !kept(v) {
			continue
		}
		t.nodes = append(t.nodes, v)
		out = append(out, Target{Version: ix.versions[v], Hops: int(s.dist[v]), Deprecated: int(s.dep[v]), tree: t, node: v})
	}
	return out
}

// tree is the predecessor tree of one Targets call: the best route to a
// node is the route to its predecessor, then the arc.
type tree struct {
	ix             *Index
	src            int32
	pred, arc, dep []int32
	nodes          []int32 // the targets' nodes

	firstOnce sync.Once
	first     []int32 // first[v]: the node the route to v enters first
}

// firsts returns, per target node, the node its route enters first,
// computed once for all targets (Target.Next may be called concurrently):
// each node is visited once, its first node being that of its predecessor.
func (t *tree) firsts() []int32 {
	t.firstOnce.Do(func() {
		t.first = make([]int32, len(t.pred))
		for i := range t.first {
			t.first[i] = -1
		}
		var up []int32
		for _, v := range t.nodes {
			u := v
			for ; t.first[u] < 0 && t.pred[u] != t.src; u = t.pred[u] {
				up = append(up, u)
			}
			f := t.first[u]
			if f < 0 {
				f = u
				t.first[u] = u
			}
			for _, w := range up {
				t.first[w] = f
			}
			up = up[:0]
		}
	})
	return t.first
}

// route builds the route to node v.
func (t *tree) route(v int32) *Route {
	ix := t.ix
	d := 0
	for u := v; u != t.src; u = t.pred[u] {
		d++
	}
	hops := make([]Hop, d)
	for u := v; u != t.src; u = t.pred[u] {
		d--
		hops[d] = ix.hop(t.pred[u], t.arc[u])
	}
	r := &Route{Track: ix.track, From: ix.versions[t.src], To: ix.versions[v], Hops: hops}
	explainDeprecated(r, int(t.dep[v]))
	return r
}

// lookup returns the node of v or an *UnknownVersionError.
func (ix *Index) lookup(v release.Version, role string) (int32, error) {
	if i := ix.find(v); i >= 0 {
		return i, nil
	}
	p := int(ix.lowerBound(v))
	if v.IsZero() {
		p = 0
	}
	near := slices.Clone(ix.versions[max(0, p-2):min(len(ix.versions), p+2)])
	e := &UnknownVersionError{Version: v, Nearest: near, Track: ix.track, Role: role}
	if len(near) == 0 {
		e.Tracks = ix.tracks
	}
	for _, t := range ix.tracks {
		if t != "" && t != ix.track && slices.ContainsFunc(ix.catalog.TrackVersions(t), v.Equal) {
			e.OnTracks = append(e.OnTracks, t)
		}
	}
	return -1, e
}

// hop builds the hop of arc ai out of from. Every violation on a usable
// guarded arc has been overridden (mandatory ones close the edge).
func (ix *Index) hop(from, ai int32) Hop {
	a := &ix.arcs[ai]
	var r release.Rule
	ix.rules[a.rule].DeepCopyInto(&r)
	h := Hop{
		From: ix.versions[from], To: ix.versions[a.to], Rule: r,
		PreChecks: r.PreChecks, PostChecks: r.PostChecks, Risks: r.Risks,
		Deprecated: r.Deprecated, ToDeprecated: ix.vdep[a.to],
	}
	if a.flags&arcGuarded != 0 {
		for _, v := range ix.viols[a.viol] {
			h.Overrides = append(h.Overrides, v.Guard)
		}
	}
	return h
}

// noRoute explains a failed search from src to dst (dst < 0: from Targets).
// s holds the search's marks.
func (ix *Index) noRoute(s *scratch, src, dst int32, q *query) *NoRouteError {
	e := &NoRouteError{Track: ix.track, From: ix.versions[src], Reachable: []release.Version{}, Reaching: []release.Version{}}
	fwd := ix.reached(s, e, src)
	bwd := ix.reaching(e, dst, q)
	ix.closedBetween(e, fwd, bwd, q)
	if dst >= 0 {
		ix.relax(s, e, src, dst, q)
		ix.exclusion(s, e, src, dst, q)
	} else {
		targetsRelaxations(e)
	}
	return e
}

// reached marks the nodes the failed search settled (s's marks) and lists
// them but src in e.Reachable, furthest first: the versions nearest the
// target matter most.
func (ix *Index) reached(s *scratch, e *NoRouteError, src int32) []bool {
	fwd := make([]bool, len(ix.versions))
	for v := range fwd {
		if s.gen[v] == s.stamp {
			fwd[v] = true
			if int32(v) != src {
				e.Reachable = append(e.Reachable, ix.versions[v])
			}
		}
	}
	slices.Reverse(e.Reachable)
	return fwd
}

// reaching marks the nodes from which dst is reachable over the arcs q
// may use, lists them but dst in e.Reaching, and says in e whether dst is
// a downgrade or not installable. For Targets (dst < 0) every node counts.
func (ix *Index) reaching(e *NoRouteError, dst int32, q *query) []bool {
	bwd := make([]bool, len(ix.versions))
	if dst < 0 {
		for v := range bwd {
			bwd[v] = true
		}
		return bwd
	}
	src := ix.find(e.From)
	e.To = ix.versions[dst]
	e.Downgrade = dst < src
	e.NotInstallable = !ix.installable[dst]
	if e.NotInstallable {
		e.NotInstallableReason = ix.vdep[dst]
	}
	bwd[dst] = true
	queue := []int32{dst}
	for len(queue) > 0 {
		w := queue[0]
		queue = queue[1:]
		for _, ai := range ix.revArcs[ix.revOff[w]:ix.revOff[w+1]] {
			if v := ix.arcFrom[ai]; !bwd[v] && ix.usable(&ix.arcs[ai], q) {
				bwd[v] = true
				queue = append(queue, v)
			}
		}
	}
	for v, ok := range bwd {
		if ok && int32(v) != dst {
			e.Reaching = append(e.Reaching, ix.versions[v])
		}
	}
	return bwd
}

// closedBetween lists in e.Closed, sorted by From then To, the edges from
// a node of fwd to a node of bwd that q may not take: closed whatever the
// options, behind risks or guards q does not relax, or into a version q
// excludes.
func (ix *Index) closedBetween(e *NoRouteError, fwd, bwd []bool, q *query) {
	for _, ca := range ix.closed {
		if fwd[ca.from] && bwd[ca.to] {
			e.Closed = append(e.Closed, ix.closedEdge(ca, q))
		}
	}
	for _, ai := range ix.cond {
		a := &ix.arcs[ai]
		from := ix.arcFrom[ai]
		if !fwd[from] || !bwd[a.to] || ix.open(a, q) {
			continue
		}
		r := ix.rules[a.rule].DeepCopy()
		ce := ClosedEdge{From: ix.versions[from], To: ix.versions[a.to], Rule: *r, Risks: unaccepted(r.Risks, q)}
		if a.flags&arcGuarded != 0 {
			ce.Guards = notOverridden(ix.viols[a.viol], q, true)
		}
		e.Closed = append(e.Closed, ce)
	}
	if q.exclude != nil {
		for ai := range ix.arcs {
			a := &ix.arcs[ai]
			if from := ix.arcFrom[ai]; fwd[from] && bwd[a.to] && q.exclude[a.to] {
				ce := ClosedEdge{From: ix.versions[from], To: ix.versions[a.to], Rule: *ix.rules[a.rule].DeepCopy(), Excluded: q.excludeWhy}
				e.Closed = append(e.Closed, ce)
			}
		}
	}
	slices.SortFunc(e.Closed, func(a, b ClosedEdge) int {
		return cmp.Or(a.From.Compare(b.From), a.To.Compare(b.To))
	})
}

// closedEdge is the ClosedEdge of an edge closed whatever the options.
func (ix *Index) closedEdge(ca closedArc, q *query) ClosedEdge {
	r := ix.rules[ca.rule].DeepCopy()
	ce := ClosedEdge{From: ix.versions[ca.from], To: ix.versions[ca.to], Rule: *r, NotInstallable: ca.notInstallable}
	switch {
	case ca.blocked:
		ce.Blocked = r.Blocked
	case !ca.notInstallable:
		ce.Risks = unaccepted(r.Risks, q)
		ce.Guards = notOverridden(ca.viols, q, false)
	}
	return ce
}

// notOverridden are the violations of vs q does not override: the
// overridable ones it does not name, and (unless overridable says every
// one is) the mandatory ones.
func notOverridden(vs []GuardViolation, q *query, overridable bool) []GuardViolation {
	var out []GuardViolation
	for _, v := range vs {
		if (v.Overridable || overridable) && q.overridden != nil && q.overridden[v.guard] {
			continue
		}
		out = append(out, v)
	}
	return out
}

// targetsRelaxations says, for Targets, what accepting the risks (and
// overriding the guards) of any closed edge out of current that has only
// such obstacles gives: a target.
func targetsRelaxations(e *NoRouteError) {
	for _, ce := range e.Closed {
		if ce.Blocked != "" || ce.NotInstallable || ce.Excluded != "" || slices.ContainsFunc(ce.Guards, func(v GuardViolation) bool { return !v.Overridable }) {
			continue
		}
		for _, r := range ce.Risks {
			e.addRelaxation(Relaxation{Kind: AcceptRisk, Name: r.Name})
		}
		for _, v := range ce.Guards {
			e.addRelaxation(Relaxation{Kind: OverrideGuard, Name: v.Guard})
		}
	}
}

// relax finds a minimal set of relaxations that gives a route from src to
// dst: it takes the risks and overridable guards of the best route when
// every risk is accepted and every overridable guard overridden, then drops,
// in route order, each one without which a route still exists. What is left
// is needed as a whole: dropping any one of them gives no route. When at
// most maxRelaxSearch relaxations are in play on the whole track, a smaller
// set that gives another route is preferred: the set is then the smallest.
// e.Relaxed is the route the set gives.
func (ix *Index) relax(s *scratch, e *NoRouteError, src, dst int32, q *query) {
	all := &query{acceptAll: true, overrideAll: true, exclude: q.exclude, excludeWhy: q.excludeWhy}
	s.restamp()
	if !ix.walk(s, src, dst, all, false) {
		return
	}
	var set []Relaxation
	add := func(r Relaxation) {
		if !slices.Contains(set, r) {
			set = append(set, r)
		}
	}
	for _, h := range ix.bestRoute(s, src, dst, all).Hops {
		for _, r := range unaccepted(h.Risks, q) {
			add(Relaxation{Kind: AcceptRisk, Name: r.Name})
		}
		for _, g := range h.Overrides {
			if i := slices.IndexFunc(ix.guards, func(x Guard) bool { return x.Name == g }); q.overridden == nil || !q.overridden[i] {
				add(Relaxation{Kind: OverrideGuard, Name: g})
			}
		}
	}
	with := func(set []Relaxation) *query {
		w := &query{accepted: maps.Clone(q.accepted), acceptAll: q.acceptAll, overridden: slices.Clone(q.overridden), exclude: q.exclude, excludeWhy: q.excludeWhy}
		if w.accepted == nil {
			w.accepted = map[string]bool{}
		}
		if w.overridden == nil {
			w.overridden = make([]bool, len(ix.guards))
		}
		for _, r := range set {
			if r.Kind == AcceptRisk {
				w.accepted[r.Name] = true
			} else {
				w.overridden[slices.IndexFunc(ix.guards, func(x Guard) bool { return x.Name == r.Name })] = true
			}
		}
		return w
	}
	for i := 0; i < len(set); {
		fewer := slices.Delete(slices.Clone(set), i, i+1)
		s.restamp()
		if ix.walk(s, src, dst, with(fewer), false) {
			set = fewer
		} else {
			i++
		}
	}
	// Another route may need fewer: when few relaxations are in play, try
	// every smaller set, smallest first.
	if cands := ix.relaxations(q); len(set) > 1 && len(cands) <= maxRelaxSearch {
	smaller:
		for k := 1; k < len(set); k++ {
			for _, sub := range subsets(cands, k) {
				s.restamp()
				if ix.walk(s, src, dst, with(sub), false) {
					set = sub
					break smaller
				}
			}
		}
	}
	wq := with(set)
	s.restamp()
	ix.walk(s, src, dst, wq, false)
	e.Relaxed = ix.bestRoute(s, src, dst, wq)
	for _, r := range set {
		e.addRelaxation(r)
	}
}

// exclusion records in e what q's exclusion (its channel, or the
// prerelease rule) keeps out when that is what stands in the way: dst
// itself, outside the channel; or, when no relaxation gives a route (the
// exclusion holds for relax too), the excluded versions of the best route
// without the exclusion, first with q's risks and guards, then with all
// of them accepted and overridden. Reaching and Closed stay as the
// search saw them, with the exclusion.
func (ix *Index) exclusion(s *scratch, e *NoRouteError, src, dst int32, q *query) {
	if q.exclude == nil || e.Relaxed != nil {
		return
	}
	if q.exclude[dst] {
		e.Excluded, e.Channel = []ExcludedVersion{ix.excludedVersion(dst, q)}, q.channel
		return
	}
	free := *q
	free.exclude, free.excludeWhy = nil, ""
	s.restamp()
	if !ix.walk(s, src, dst, &free, false) {
		free.acceptAll, free.overrideAll = true, true
		s.restamp()
		if !ix.walk(s, src, dst, &free, false) {
			return
		}
	}
	for _, h := range ix.bestRoute(s, src, dst, &free).Hops {
		if v := ix.find(h.To); q.exclude[v] {
			e.Excluded = append(e.Excluded, ix.excludedVersion(v, q))
		}
	}
	e.Channel = q.channel
}

// excludedVersion is node v as an ExcludedVersion of q.
func (ix *Index) excludedVersion(v int32, q *query) ExcludedVersion {
	ev := ExcludedVersion{Version: ix.versions[v]}
	if q.channel != "" {
		for _, ch := range slices.Sorted(maps.Keys(ix.channels)) {
			if !ix.channels[ch][v] {
				ev.Channels = append(ev.Channels, ch)
			}
		}
	}
	return ev
}

// maxRelaxSearch is how many relaxations may be in play for relax to look
// for the smallest set (2^8 searches at most).
const maxRelaxSearch = 8

// relaxations are the risks q does not accept and the overridable guards
// it does not override on the index's conditional edges: risks first, each
// kind sorted by name.
func (ix *Index) relaxations(q *query) []Relaxation {
	var risks, guards []string
	for _, ai := range ix.cond {
		a := &ix.arcs[ai]
		for _, r := range unaccepted(ix.rules[a.rule].Risks, q) {
			risks = append(risks, r.Name)
		}
		if a.flags&arcGuarded != 0 {
			for _, v := range ix.viols[a.viol] {
				if q.overridden == nil || !q.overridden[v.guard] {
					guards = append(guards, v.Guard)
				}
			}
		}
	}
	slices.Sort(risks)
	slices.Sort(guards)
	var out []Relaxation
	for _, r := range slices.Compact(risks) {
		out = append(out, Relaxation{Kind: AcceptRisk, Name: r})
	}
	for _, g := range slices.Compact(guards) {
		out = append(out, Relaxation{Kind: OverrideGuard, Name: g})
	}
	return out
}

// subsets returns the subsets of xs of size k, in lexicographic order of
// positions.
func subsets(xs []Relaxation, k int) [][]Relaxation {
	var out [][]Relaxation
	var pick func(from int, cur []Relaxation)
	pick = func(from int, cur []Relaxation) {
		if len(cur) == k {
			out = append(out, slices.Clone(cur))
			return
		}
		for i := from; i <= len(xs)-(k-len(cur)); i++ {
			pick(i+1, append(cur, xs[i]))
		}
	}
	pick(0, nil)
	return out
}

// unaccepted returns the risks q does not accept.
func unaccepted(risks []release.Risk, q *query) []release.Risk {
	if q.acceptAll {
		return nil
	}
	var out []release.Risk
	for _, r := range risks {
		if !q.accepted[r.Name] {
			out = append(out, r)
		}
	}
	return out
}
