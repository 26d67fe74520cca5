package path

import (
	"cmp"
	"slices"

	"github.com/hopdag/hopdag/release"
)

// Resolve returns the route from current to target on the track chosen with
// WithTrack (see the package documentation for how edges are made and which
// route is chosen). It builds an Index on each call; to ask many questions of
// one catalog, build one with NewIndex.
//
// target equal to current gives a route with no hops. An unknown version
// gives an *UnknownVersionError, no route an *NoRouteError.
func Resolve(c *release.Catalog, current, target release.Version, opts ...Option) (*Route, error) {
	ix, err := NewIndex(c, opts...)
	if err != nil {
		return nil, err
	}
	return ix.Resolve(current, target)
}

// Targets returns every version reachable from current, sorted by version,
// each with its hop count and the route Resolve would return to it. It builds
// an Index on each call.
//
// When no version is reachable it returns an *NoRouteError (errors.Is
// ErrNoRoute) whose Closed edges, Risks and Overrides say why.
func Targets(c *release.Catalog, current release.Version, opts ...Option) ([]Target, error) {
	ix, err := NewIndex(c, opts...)
	if err != nil {
		return nil, err
	}
	return ix.Targets(current)
}

// Resolve is the package Resolve on a built index. opts may accept more
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
	s := ix.getScratch()
	defer ix.pool.Put(s)
	if ix.bfs(s, src, dst, q) {
		return ix.bestRoute(s, src, dst, q), nil
	}
	return nil, ix.noRoute(s, src, dst, q)
}

// Targets is the package Targets on a built index; opts are as for
// Index.Resolve.
//
// The Routes of one result share the slices of the hops they have in
// common: treat them as read-only, or Clone one before changing it.
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
	ix.search(s, src, q)

	// Reached nodes by hop count (a counting sort), so that each route
	// extends its predecessor's.
	n := int32(len(ix.versions))
	var maxDist int32
	count := 0
	for v := int32(0); v < n; v++ {
		if s.gen[v] == s.stamp && v != src {
			count++
			maxDist = max(maxDist, s.dist[v])
		}
	}
	if count == 0 {
		return nil, ix.noRoute(s, src, -1, q)
	}
	start := make([]int32, maxDist+2)
	for v := int32(0); v < n; v++ {
		if s.gen[v] == s.stamp && v != src {
			start[s.dist[v]+1]++
		}
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	order := make([]int32, count)
	for v := int32(0); v < n; v++ {
		if s.gen[v] == s.stamp && v != src {
			d := s.dist[v]
			order[start[d]] = v
			start[d]++
		}
	}
	// One allocation for every hop and one for every route.
	total := 0
	for _, v := range order {
		total += int(s.dist[v])
	}
	slab := make([]Hop, total)
	rs := make([]Route, count)
	routes := make([]*Route, n)
	for i, v := range order {
		d := int(s.dist[v])
		hops := slab[:d:d]
		slab = slab[d:]
		if p := s.pred[v]; p != src {
			copy(hops, routes[p].Hops)
		}
		hops[d-1] = ix.hop(s.pred[v], s.arc[v])
		rs[i] = Route{Track: ix.track, From: ix.versions[src], To: ix.versions[v], Hops: hops}
		routes[v] = &rs[i]
	}
	out := make([]Target, 0, count)
	for v := int32(0); v < n; v++ {
		if r := routes[v]; r != nil {
			out = append(out, Target{Version: ix.versions[v], Hops: len(r.Hops), Route: r})
		}
	}
	return out, nil
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
	return -1, &UnknownVersionError{Version: v, Nearest: near, Track: ix.track, Role: role}
}

// scratch is the per-query state of a search, pooled.
type scratch struct {
	stamp uint32   // gen[v] == stamp: v reached by the current search
	gen   []uint32 //
	mark  []uint32 // mark[v] == stamp: v is on a shortest route to dst
	dist  []int32  // hops from the source
	pred  []int32  // predecessor on the best route
	arc   []int32  // arc from pred on the best route
	dep   []int32  // deprecated edges on the best route (to dst, in bestRoute)
	rank  []int32  // rank of the best route within its layer; 0 is best
	cur   []int32
	next  []int32
	buf   []int32
	keys  []int64
}

func newScratch(n int) *scratch {
	return &scratch{
		gen: make([]uint32, n), mark: make([]uint32, n), dist: make([]int32, n), pred: make([]int32, n),
		arc: make([]int32, n), dep: make([]int32, n), rank: make([]int32, n),
	}
}

func (ix *Index) getScratch() *scratch {
	s := ix.pool.Get().(*scratch)
	s.restamp()
	return s
}

// restamp forgets the marks of the previous search.
func (s *scratch) restamp() {
	s.stamp++
	if s.stamp == 0 { // wrapped: forget every old mark
		clear(s.gen)
		clear(s.mark)
		s.stamp = 1
	}
}

// bfs marks the nodes reachable from src over the arcs q may use, with their
// hop counts, and stops as soon as it reaches dst (dst < 0: never). It
// reports whether it reached dst. Every node of a layer before dst's is then
// marked with its final hop count.
func (ix *Index) bfs(s *scratch, src, dst int32, q *query) bool {
	gen, stamp, dist := s.gen, s.stamp, s.dist
	arcs, off := ix.arcs, ix.off
	gen[src], dist[src] = stamp, 0
	queue := append(s.cur[:0], src)
	defer func() { s.cur = queue }()
	for h := 0; h < len(queue); h++ {
		v := queue[h]
		dw := dist[v] + 1
		for ai := off[v]; ai < off[v+1]; ai++ {
			a := &arcs[ai]
			w := a.to
			if gen[w] == stamp || a.flags&(arcRisky|arcGuarded) != 0 && !ix.open(a, q) {
				continue
			}
			gen[w], dist[w] = stamp, dw
			if w == dst {
				return true
			}
			queue = append(queue, w)
		}
	}
	return false
}

// bestRoute picks, after bfs reached dst, the best route by the package's
// order among the shortest ones. It walks back from dst over the arcs into
// it, keeping the nodes one layer closer to src each step: those are the
// nodes on a shortest route, and for each the fewest deprecated edges from
// it to dst. Then from src it takes, hop by hop, the highest next version
// that keeps the route shortest with the fewest deprecated edges. Both
// walks touch only the shortest routes and their neighbours.
func (ix *Index) bestRoute(s *scratch, src, dst int32, q *query) *Route {
	gen, mark, stamp, dist, depT := s.gen, s.mark, s.stamp, s.dist, s.dep
	arcs := ix.arcs
	d := dist[dst]
	mark[dst], depT[dst] = stamp, 0
	layer, prev := append(s.next[:0], dst), s.buf[:0]
	for k := d - 1; k >= 0; k-- {
		prev = prev[:0]
		for _, w := range layer {
			for _, ai := range ix.revArcs[ix.revOff[w]:ix.revOff[w+1]] {
				u := ix.arcFrom[ai]
				if gen[u] != stamp || dist[u] != k {
					continue
				}
				a := &arcs[ai]
				if a.flags&(arcRisky|arcGuarded) != 0 && !ix.open(a, q) {
					continue
				}
				nd := depT[w] + int32(a.flags&arcDeprecated)
				if mark[u] != stamp {
					mark[u], depT[u] = stamp, nd
					prev = append(prev, u)
				} else if nd < depT[u] {
					depT[u] = nd
				}
			}
		}
		layer, prev = prev, layer
	}
	s.next, s.buf = layer, prev
	hops := make([]Hop, d)
	u := src
	for k := range d {
		best, bestArc := int32(-1), int32(-1)
		for ai := ix.off[u]; ai < ix.off[u+1]; ai++ {
			a := &arcs[ai]
			w := a.to
			if w <= best || mark[w] != stamp || dist[w] != k+1 || depT[w]+int32(a.flags&arcDeprecated) != depT[u] {
				continue
			}
			if a.flags&(arcRisky|arcGuarded) != 0 && !ix.open(a, q) {
				continue
			}
			best, bestArc = w, ai
		}
		hops[k] = ix.hop(u, bestArc)
		u = best
	}
	return &Route{Track: ix.track, From: ix.versions[src], To: ix.versions[dst], Hops: hops}
}

// search runs a breadth-first search from src, layer by layer, keeping for
// each reached node its best route by the package's order: fewest hops, then
// fewest deprecated edges, then highest intermediate versions hop by hop.
// Targets uses it; Resolve uses bfs and bestRoute, which agree with it (the
// property tests check both against a reference).
//
// Every node of layer d+1 takes as predecessor the node of layer d that
// minimises (deprecated edges, rank), where rank orders the best routes of
// layer d by their versions compared hop by hop, highest first. Since routes
// to distinct nodes differ, ranks are distinct and the choice is unique. The
// ranks of layer d+1 then follow from sorting its nodes by (rank of
// predecessor, version descending).
func (ix *Index) search(s *scratch, src int32, q *query) {
	n := int32(len(ix.versions))
	gen, stamp := s.gen, s.stamp
	dist, pred, parc, dep, rank := s.dist, s.pred, s.arc, s.dep, s.rank
	gen[src], dist[src], pred[src], parc[src], dep[src], rank[src] = stamp, 0, -1, -1, 0, 0
	cur := append(s.cur[:0], src)
	next := s.next[:0]
	arcs, off := ix.arcs, ix.off
	for d := int32(1); len(cur) > 0; d++ {
		next = next[:0]
		for _, v := range cur {
			dv, rv := dep[v], rank[v]
			for ai := off[v]; ai < off[v+1]; ai++ {
				a := &arcs[ai]
				if a.flags&(arcRisky|arcGuarded) != 0 && !ix.open(a, q) {
					continue
				}
				w := a.to
				nd := dv + int32(a.flags&arcDeprecated)
				if gen[w] != stamp {
					gen[w], dist[w], pred[w], parc[w], dep[w] = stamp, d, v, ai, nd
					next = append(next, w)
					continue
				}
				if dist[w] == d && (nd < dep[w] || nd == dep[w] && rv < rank[pred[w]]) {
					pred[w], parc[w], dep[w] = v, ai, nd
				}
			}
		}
		keys := s.keys[:0]
		for _, w := range next {
			keys = append(keys, int64(rank[pred[w]])<<32|int64(n-1-w))
		}
		slices.Sort(keys)
		for i, k := range keys {
			w := n - 1 - int32(uint32(k))
			rank[w] = int32(i)
			next[i] = w
		}
		s.keys = keys
		cur, next = next, cur
	}
	s.cur, s.next = cur, next
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
	n := int32(len(ix.versions))
	e := &NoRouteError{Track: ix.track, From: ix.versions[src], Reachable: []release.Version{}, Reaching: []release.Version{}}
	fwd := make([]bool, n)
	for v := int32(0); v < n; v++ {
		if s.gen[v] == s.stamp {
			fwd[v] = true
			if v != src {
				e.Reachable = append(e.Reachable, ix.versions[v])
			}
		}
	}
	bwd := make([]bool, n)
	if dst >= 0 {
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
				a := &ix.arcs[ai]
				if a.flags&(arcRisky|arcGuarded) != 0 && !ix.open(a, q) {
					continue
				}
				if v := ix.arcFrom[ai]; !bwd[v] {
					bwd[v] = true
					queue = append(queue, v)
				}
			}
		}
		for v := int32(0); v < n; v++ {
			if bwd[v] && v != dst {
				e.Reaching = append(e.Reaching, ix.versions[v])
			}
		}
	} else {
		for v := range bwd {
			bwd[v] = true
		}
	}

	// Closed edges that would have joined the two sides.
	for _, ca := range ix.closed {
		if !fwd[ca.from] || !bwd[ca.to] {
			continue
		}
		r := ix.rules[ca.rule].DeepCopy()
		ce := ClosedEdge{From: ix.versions[ca.from], To: ix.versions[ca.to], Rule: *r, NotInstallable: ca.notInstallable}
		if ca.blocked {
			ce.Blocked = r.Blocked
		} else if !ca.notInstallable {
			ce.Risks = unaccepted(r.Risks, q)
			for _, v := range ca.viols {
				if v.Overridable && q.overridden != nil && q.overridden[v.guard] {
					continue
				}
				ce.Guards = append(ce.Guards, v)
			}
		}
		e.Closed = append(e.Closed, ce)
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
			for _, v := range ix.viols[a.viol] {
				if q.overridden == nil || !q.overridden[v.guard] {
					ce.Guards = append(ce.Guards, v)
				}
			}
		}
		e.Closed = append(e.Closed, ce)
	}
	slices.SortFunc(e.Closed, func(a, b ClosedEdge) int {
		return cmp.Or(a.From.Compare(b.From), a.To.Compare(b.To))
	})

	// What accepting every risk and overriding every overridable guard gives.
	addRisk := func(name string) {
		if !slices.Contains(e.Risks, name) {
			e.Risks = append(e.Risks, name)
		}
	}
	addOverride := func(name string) {
		if !slices.Contains(e.Overrides, name) {
			e.Overrides = append(e.Overrides, name)
		}
	}
	if dst >= 0 {
		s.restamp()
		if ix.bfs(s, src, dst, relaxed) {
			e.Relaxed = ix.bestRoute(s, src, dst, relaxed)
			for _, h := range e.Relaxed.Hops {
				for _, r := range unaccepted(h.Risks, q) {
					addRisk(r.Name)
				}
				for _, g := range h.Overrides {
					if i := slices.IndexFunc(ix.guards, func(x Guard) bool { return x.Name == g }); q.overridden == nil || !q.overridden[i] {
						addOverride(g)
					}
				}
			}
		}
	} else {
		// For Targets: accepting the risks (and overriding the guards) of
		// any closed edge out of current that has only such obstacles gives
		// a target.
		for _, ce := range e.Closed {
			if ce.Blocked != "" || ce.NotInstallable || slices.ContainsFunc(ce.Guards, func(v GuardViolation) bool { return !v.Overridable }) {
				continue
			}
			for _, r := range ce.Risks {
				addRisk(r.Name)
			}
			for _, v := range ce.Guards {
				addOverride(v.Guard)
			}
		}
	}
	return e
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
