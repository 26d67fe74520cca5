// Package cycles finds the dependency cycles of a graph and reports each
// as one closed walk in a canonical rotation. It is the one implementation
// that the dag package (plans) and the release package (catalog
// validation) share, so that both report a cycle the same way.
//
// A graph is given in compressed form: the successors of node v are
// adj[off[v]:off[v+1]], ascending; nodes are numbered in the order their
// names sort. Cost: linear in nodes plus edges (Tarjan, iterative, so deep
// graphs cannot overflow the stack, and two breadth-first searches per
// component) plus the length of the walks returned. A walk takes at most
// members x (out+back+1) steps, out the most hops from the component's
// smallest node to a member and back the most hops from a member to it:
// once around a simple cycle; on a tree-shaped component, down to each
// leaf and back.
package cycles

import "slices"

// Find returns the strongly connected components with more than one node,
// restricted to the nodes with candidate[v] set (nil means all), each as a
// closed walk of node numbers: it starts and ends at the component's
// smallest node (home) and visits every member, going to the smallest
// unvisited successor while there is one. Stuck, it heads home by a
// shortest path (each node's smallest successor one hop nearer) and turns
// off at the first node on the way with an unvisited successor; at home
// with none, it goes by a shortest path to the first unvisited member in
// breadth-first order from home (successors in ascending order). On a
// simple cycle that is the cycle itself, rotated to start at its smallest
// node (a -> b -> c -> a). Walks are sorted by their first node. Find
// returns nil when there is no cycle.
func Find(off, adj []int, candidate []bool) [][]int {
	n := len(off) - 1
	sccs := tarjan(n, off, adj, candidate)
	if len(sccs) == 0 {
		return nil
	}
	w := newWalker(n, off, adj)
	walks := make([][]int, 0, len(sccs))
	for id, members := range sccs {
		walks = append(walks, w.cover(members, int32(id+1)))
	}
	slices.SortFunc(walks, func(a, b []int) int { return a[0] - b[0] })
	return walks
}

// tarjan returns the strongly connected components with more than one node
// (self-loops are never edges here), each sorted ascending. It is
// iterative: the explicit stack holds (node, next edge) pairs, so deep graphs
// cannot overflow the goroutine stack.
func tarjan(n int, off, adj []int, candidate []bool) [][]int {
	const unvisited = -1
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = unvisited
	}
	var (
		stack []int // Tarjan's node stack
		call  []frame
		next  int
		sccs  [][]int
	)
	in := func(v int) bool { return candidate == nil || candidate[v] }
	for root := 0; root < n; root++ {
		if index[root] != unvisited || !in(root) {
			continue
		}
		call = append(call, frame{root, off[root]})
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.v
			if f.e < off[v+1] {
				w := adj[f.e]
				f.e++
				if !in(w) {
					continue
				}
				if index[w] == unvisited {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, off[w]})
				} else if onStack[w] && index[w] < low[v] {
					low[v] = index[w]
				}
				continue
			}
			// v is done.
			call = call[:len(call)-1]
			if len(call) > 0 {
				if p := call[len(call)-1].v; low[v] < low[p] {
					low[p] = low[v]
				}
			}
			if low[v] != index[v] {
				continue
			}
			i := len(stack) - 1
			for stack[i] != v {
				i--
			}
			members := stack[i:]
			for _, m := range members {
				onStack[m] = false
			}
			if len(members) > 1 {
				scc := slices.Clone(members)
				slices.Sort(scc)
				sccs = append(sccs, scc)
			}
			stack = stack[:i]
		}
	}
	return sccs
}

type frame struct{ v, e int }

// walker builds, for one strongly connected component, a closed walk from
// its smallest member (home) that visits every member. It goes to the
// smallest unvisited successor while there is one. When it is stuck it
// heads home by a shortest path, and turns off at the first node on the way
// that has an unvisited successor; at home with none, it goes by a shortest
// path to the first unvisited member in breadth-first order from home
// (successors in name order). On a simple cycle that is the cycle itself.
//
// Two trees make each step cost only what it appends: toward home, a
// node's next hop is its smallest successor one step nearer (a backward
// breadth-first search from home); from home, the path to a member is the
// one a forward breadth-first search found. A cursor per node skips
// successors already visited, so a hub that the walk passes again and
// again is not rescanned, and the next member to go to is the first of the
// forward search's order not yet visited, found by a cursor too. Arrays
// are stamped, not cleared, so one walker serves every component.
type walker struct {
	off, adj   []int
	roff, radj []int   // predecessors: radj[roff[v]:roff[v+1]]
	comp       []int32 // stamp: the component being walked
	seen       []int32 // stamp: visited by the walk
	back, fwd  []int32 // stamp: reached by the backward, forward search
	cursor     []int   // adj position before which every successor is visited or outside
	dist       []int   // hops to home
	toward     []int   // next hop toward home
	parent     []int   // previous hop from home
	order      []int   // members in breadth-first order from home
}

func newWalker(n int, off, adj []int) *walker {
	w := &walker{off: off, adj: adj, comp: make([]int32, n), seen: make([]int32, n),
		back: make([]int32, n), fwd: make([]int32, n),
		cursor: make([]int, n), dist: make([]int, n), toward: make([]int, n), parent: make([]int, n)}
	// Predecessors, by a counting sort of the edges on their head.
	w.roff = make([]int, n+1)
	for _, s := range adj {
		w.roff[s+1]++
	}
	for v := range n {
		w.roff[v+1] += w.roff[v]
	}
	next := slices.Clone(w.roff[:n])
	w.radj = make([]int, len(adj))
	for v := range n {
		for _, s := range adj[off[v]:off[v+1]] {
			w.radj[next[s]] = v
			next[s]++
		}
	}
	return w
}

// unvisited returns the smallest successor of v in component id that the
// walk has not visited, or -1.
func (w *walker) unvisited(v int, id int32) int {
	for ; w.cursor[v] < w.off[v+1]; w.cursor[v]++ {
		if s := w.adj[w.cursor[v]]; w.comp[s] == id && w.seen[s] != id {
			return s
		}
	}
	return -1
}

func (w *walker) cover(members []int, id int32) []int {
	for _, m := range members {
		w.comp[m] = id
		w.cursor[m] = w.off[m]
	}
	home := members[0]
	w.trees(home, id)
	walk := make([]int, 1, 2*len(members)+1)
	walk[0] = home
	w.seen[home] = id
	cur, next := home, 0 // next: position in order before which every member is visited
	for left := len(members) - 1; left > 0; left-- {
		s := w.unvisited(cur, id)
		for s < 0 && cur != home { // head home, turning off where we can
			cur = w.toward[cur]
			walk = append(walk, cur)
			s = w.unvisited(cur, id)
		}
		if s < 0 { // at home: go out to the first unvisited member
			for w.seen[w.order[next]] == id {
				next++
			}
			s = w.order[next]
			n := len(walk)
			for x := w.parent[s]; x != home; x = w.parent[x] {
				walk = append(walk, x)
			}
			slices.Reverse(walk[n:])
		}
		walk = append(walk, s)
		w.seen[s] = id
		cur = s
	}
	for cur != home {
		cur = w.toward[cur]
		walk = append(walk, cur)
	}
	return walk
}

// trees searches component id breadth-first from home, backward for each
// member's distance and next hop toward home, and forward for the order
// and the paths the walk goes out by.
func (w *walker) trees(home int, id int32) {
	// Backward; w.order serves as the queue.
	w.order = append(w.order[:0], home)
	w.back[home], w.dist[home] = id, 0
	for h := 0; h < len(w.order); h++ {
		v := w.order[h]
		for _, p := range w.radj[w.roff[v]:w.roff[v+1]] {
			if w.comp[p] == id && w.back[p] != id {
				w.back[p], w.dist[p] = id, w.dist[v]+1
				w.order = append(w.order, p)
			}
		}
	}
	for _, v := range w.order[1:] {
		for _, s := range w.adj[w.off[v]:w.off[v+1]] {
			if w.comp[s] == id && w.dist[s] == w.dist[v]-1 {
				w.toward[v] = s // the smallest: successors are ascending
				break
			}
		}
	}
	// Forward.
	w.order = append(w.order[:0], home)
	w.fwd[home] = id
	for h := 0; h < len(w.order); h++ {
		v := w.order[h]
		for _, s := range w.adj[w.off[v]:w.off[v+1]] {
			if w.comp[s] == id && w.fwd[s] != id {
				w.fwd[s], w.parent[s] = id, v
				w.order = append(w.order, s)
			}
		}
	}
}
