package path

import (
	"fmt"
	"slices"

	"github.com/hopdag/hopdag/release"
)

// The search orders routes by cost, then by versions:
//
//   - cost is (deprecated, hops): deprecated counts the deprecated edges of
//     the route plus the deprecated versions it enters, hops its length.
//     Costs compare deprecated first, so a clean route beats a shorter one
//     that uses a deprecated edge or version.
//   - among routes of equal cost, the one whose versions are highest,
//     compared hop by hop from the first, wins.
//
// walk settles nodes in increasing cost: level d holds the nodes whose
// cheapest route has d deprecated edges or versions, and inside a level
// nodes are settled by hop count, breadth first over the arcs that add no
// deprecation. An arc that adds k > 0 leaves a seed in level d+k. Costs add
// up along a route and every arc adds a hop, so the prefix of a cheapest
// route is a cheapest route: a node's cost is final when it is first
// reached.

// seed is an arc into w, out of u (settled with hops h-1), that adds
// deprecation: it is tried when its level is searched.
type seed struct{ w, u, a, h int32 }

// scratch is the per-query state of a search, pooled.
type scratch struct {
	stamp uint32   // gen[v] == stamp: v settled by the current search
	gen   []uint32 //
	mark  []uint32 // mark[v] == stamp: v is on a best route to dst
	dist  []int32  // hops from the source
	dep   []int32  // deprecated edges and versions from the source
	pred  []int32  // predecessor on the best route
	arc   []int32  // arc from pred on the best route
	rank  []int32  // rank of the best route among those of its hop count; 0 is best

	levels levels[seed] // seeds by deprecation level
	byHops [][]int32    // settled nodes by hop count (ranked walks)
	upto   int          // byHops[:upto] hold current ranks
	cur    []int32
	next   []int32
	keys   []int64
}

func newScratch(n int) *scratch {
	return &scratch{
		gen: make([]uint32, n), mark: make([]uint32, n), dist: make([]int32, n), dep: make([]int32, n),
		pred: make([]int32, n), arc: make([]int32, n), rank: make([]int32, n),
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

// weight is the deprecation an arc adds: 1 for a deprecated rule, 1 for a
// deprecated target version.
func weight(a *arc) int32 {
	return int32(a.flags&arcDeprecated) + int32(a.flags&arcDepTo)/arcDepTo
}

// usable reports whether q may take arc a.
func (ix *Index) usable(a *arc, q *query) bool {
	if q.exclude != nil && q.exclude[a.to] {
		return false
	}
	return a.flags&(arcRisky|arcGuarded) == 0 || ix.open(a, q)
}

// levels holds the seeds of a layered search by deprecation level; its
// storage is reused from one search to the next.
type levels[S any] struct{ at [][]S }

// reset empties every level, keeping their storage.
func (l *levels[S]) reset() {
	for i := range l.at {
		l.at[i] = l.at[i][:0]
	}
	l.at = l.at[:0]
}

// add leaves seed e in level d.
func (l *levels[S]) add(d int32, e S) {
	for int(d) >= len(l.at) {
		if len(l.at) < cap(l.at) {
			l.at = l.at[:len(l.at)+1] // emptied by reset
		} else {
			l.at = append(l.at, nil)
		}
	}
	l.at[d] = append(l.at[d], e)
}

// layered is the one layered search of both Index.walk (the nodes of one
// track) and multi.walk (the states of several), as the comment above
// says it: level by level in increasing deprecation d, and inside a level
// hop count by hop count h, breadth first. At each (d, h) step settles the
// seeds of lv's level d whose hop count is h, then expands layer (the
// nodes settled at d, h-1) into next, which it returns (it appends to the
// next it is given, empty); an arc that adds deprecation k > 0 becomes a
// seed of level d+k (lv.add). hOf is a seed's hop count. The search ends
// when step reports stop, or when every level is searched; layered reports
// whether step stopped it, and returns the two layer buffers for reuse.
// step is called once per layer, not per arc: the arcs are the caller's.
func layered[S any](lv *levels[S], hOf func(S) int32, layer, next []int32,
	step func(d, h int32, seeds []S, layer, next []int32) ([]int32, bool)) (bool, []int32, []int32) {
	for d := int32(0); d == 0 || int(d) < len(lv.at); d++ {
		var sd []S
		if int(d) < len(lv.at) {
			sd = lv.at[d]
			slices.SortStableFunc(sd, func(x, y S) int { return int(hOf(x) - hOf(y)) })
		}
		h := int32(1)
		if d > 0 {
			layer = layer[:0]
			if len(sd) == 0 {
				continue
			}
			h = hOf(sd[0])
		}
		for i := 0; len(layer) > 0 || i < len(sd); h++ {
			if len(layer) == 0 {
				h = hOf(sd[i])
			}
			j := i
			for j < len(sd) && hOf(sd[j]) == h {
				j++
			}
			var stop bool
			next, stop = step(d, h, sd[i:j], layer, next[:0])
			if stop {
				return true, layer, next
			}
			i = j
			layer, next = next, layer
		}
	}
	return false, layer, next
}

func seedHops(e seed) int32 { return e.h }

// walk settles the nodes reachable from src over the arcs q may use, in
// increasing cost (layered), recording each one's hops and deprecation.
// With dst >= 0 it stops as soon as dst is settled and reports it; every
// node cheaper than dst is then settled. With ranked, it also keeps for
// every node the predecessor of its best route (by the full order) and the
// rank of that route among the settled routes of the same hop count.
func (ix *Index) walk(s *scratch, src, dst int32, q *query, ranked bool) bool {
	gen, stamp := s.gen, s.stamp
	dist, dep, pred, parc, rank := s.dist, s.dep, s.pred, s.arc, s.rank
	gen[src], dist[src], dep[src], pred[src], parc[src], rank[src] = stamp, 0, 0, -1, -1, 0
	s.levels.reset()
	if ranked {
		if len(s.byHops) == 0 {
			s.byHops = make([][]int32, 1)
		}
		for i := range s.byHops {
			s.byHops[i] = s.byHops[i][:0]
		}
		s.byHops[0] = append(s.byHops[0], src)
		s.upto = 1
	}
	found, cur, next := layered(&s.levels, seedHops, append(s.cur[:0], src), s.next[:0],
		func(d, h int32, seeds []seed, layer, next []int32) ([]int32, bool) {
			if ranked {
				ix.ensureRanks(s, h-1)
			}
			// relax records the arc ai from u into w as a route of cost
			// (d, h), and reports whether it settled dst.
			relax := func(w, u, ai int32) bool {
				if gen[w] != stamp {
					gen[w], dist[w], dep[w], pred[w], parc[w] = stamp, h, d, u, ai
					next = append(next, w)
					return w == dst
				}
				if ranked && dist[w] == h && dep[w] == d && rank[u] < rank[pred[w]] {
					pred[w], parc[w] = u, ai
				}
				return false
			}
			for _, e := range seeds {
				if relax(e.w, e.u, e.a) {
					return next, true
				}
			}
			if ix.expand(s, q, d, h, layer, relax) {
				return next, true
			}
			if ranked && len(next) > 0 {
				for int(h) >= len(s.byHops) {
					s.byHops = append(s.byHops, nil)
				}
				s.byHops[h] = append(s.byHops[h], next...)
				s.upto = min(s.upto, int(h))
			}
			return next, false
		})
	s.cur, s.next = cur, next
	return found
}

// expand relaxes the arcs q may use out of layer, the nodes settled at
// cost (d, h-1): an arc that adds deprecation becomes a seed of its level,
// unless its node is settled; relax takes the others, and expand reports
// whether relax settled the target.
func (ix *Index) expand(s *scratch, q *query, d, h int32, layer []int32, relax func(w, u, ai int32) bool) bool {
	arcs, off, gen, stamp := ix.arcs, ix.off, s.gen, s.stamp
	for _, u := range layer {
		for ai := off[u]; ai < off[u+1]; ai++ {
			a := &arcs[ai]
			if !ix.usable(a, q) {
				continue
			}
			if k := weight(a); k > 0 {
				if gen[a.to] != stamp {
					s.levels.add(d+k, seed{a.to, u, ai, h})
				}
				continue
			}
			if relax(a.to, u, ai) {
				return true
			}
		}
	}
	return false
}

// ensureRanks brings the ranks of the settled routes of hop counts up to k
// up to date: the routes of hop count j are ordered by the rank of their
// predecessor's route, then by version, highest first. Routes to distinct
// nodes differ, so the ranks are distinct and a node's predecessor is the
// one of lowest rank.
func (ix *Index) ensureRanks(s *scratch, k int32) {
	n := int32(len(ix.versions))
	for j := s.upto; j <= int(k) && j < len(s.byHops); j++ {
		keys := s.keys[:0]
		for _, w := range s.byHops[j] {
			keys = append(keys, int64(s.rank[s.pred[w]])<<32|int64(n-1-w))
		}
		slices.Sort(keys)
		for i, key := range keys {
			w := n - 1 - int32(uint32(key))
			s.rank[w] = int32(i)
			s.byHops[j][i] = w
		}
		s.keys = keys
	}
	s.upto = max(s.upto, int(k)+1)
}

// bestRoute picks, after walk settled dst, the best route among the
// cheapest ones. It walks back from dst over the arcs into it whose cost is
// tight (the predecessor's cost plus the arc's is the node's), marking the
// nodes on a cheapest route; then from src it takes, hop by hop, the highest
// marked next version over a tight arc. Both walks touch only the cheapest
// routes and their neighbours.
func (ix *Index) bestRoute(s *scratch, src, dst int32, q *query) *Route {
	gen, mark, stamp, dist, dep := s.gen, s.mark, s.stamp, s.dist, s.dep
	arcs := ix.arcs
	d := dist[dst]
	mark[dst] = stamp
	layer, prev := append(s.next[:0], dst), s.cur[:0]
	for k := d - 1; k >= 0; k-- {
		prev = prev[:0]
		for _, w := range layer {
			for _, ai := range ix.revArcs[ix.revOff[w]:ix.revOff[w+1]] {
				u := ix.arcFrom[ai]
				a := &arcs[ai]
				if gen[u] != stamp || dist[u] != k || mark[u] == stamp || dep[u]+weight(a) != dep[w] || !ix.usable(a, q) {
					continue
				}
				mark[u] = stamp
				prev = append(prev, u)
			}
		}
		layer, prev = prev, layer
	}
	s.next, s.cur = layer, prev
	hops := make([]Hop, d)
	u := src
	for k := range d {
		best, bestArc := int32(-1), int32(-1)
		for ai := ix.off[u]; ai < ix.off[u+1]; ai++ {
			a := &arcs[ai]
			w := a.to
			if w <= best || mark[w] != stamp || dist[w] != k+1 || dep[u]+weight(a) != dep[w] || !ix.usable(a, q) {
				continue
			}
			best, bestArc = w, ai
		}
		hops[k] = ix.hop(u, bestArc)
		u = best
	}
	r := &Route{Track: ix.track, From: ix.versions[src], To: ix.versions[dst], Hops: hops}
	explainDeprecated(r, int(dep[dst]))
	return r
}

// explainDeprecated says on every deprecated edge and deprecated
// intermediate version of r why it was still used: every route has as many.
// The target's own deprecation is the caller's choice and is not explained.
func explainDeprecated(r *Route, deprecated int) {
	last := len(r.Hops) - 1
	if last < 0 {
		return
	}
	why := deprecatedWhy(r.From, r.To, deprecated, r.Hops[last].ToDeprecated != "")
	for i := range r.Hops {
		r.Hops[i].explain(why, i == last)
	}
}

// deprecatedWhy is the Why of the deprecated hops of a route from from to
// to with deprecated deprecated edges and versions, the target's own
// included when toDeprecated; "" when the route needs no explaining.
func deprecatedWhy(from, to release.Version, deprecated int, toDeprecated bool) string {
	if toDeprecated {
		deprecated--
	}
	if deprecated <= 0 {
		return ""
	}
	what := "edges or intermediate versions"
	if deprecated == 1 {
		what = "edge or intermediate version"
	}
	return fmt.Sprintf("every route from %s to %s uses %d deprecated %s", from, to, deprecated, what)
}

// explain sets h.Why to why when h takes a deprecated edge, or enters a
// deprecated version that is not the route's target (last: h is the
// route's last hop).
func (h *Hop) explain(why string, last bool) {
	if h.Deprecated != "" || h.ToDeprecated != "" && !last {
		h.Why = why
	}
}
