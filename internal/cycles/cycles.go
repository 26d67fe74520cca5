// Package cycles finds the dependency cycles of a graph and reports each
// as one closed walk in a canonical rotation. It is the one implementation
// that the dag package (plans) and the release package (catalog
// validation) share, so that both report a cycle the same way.
//
// A graph is given in compressed form: the successors of node v are
// adj[off[v]:off[v+1]], ascending; nodes are numbered in the order their
// names sort. Cost: linear in nodes plus edges (Tarjan, iterative, so deep
// graphs cannot overflow the stack), plus a breadth-first search per step
// that the walk cannot take directly.
package cycles

import "slices"

// Find returns the strongly connected components with more than one node,
// restricted to the nodes with candidate[v] set (nil means all), each as a
// closed walk of node numbers: it starts and ends at the component's
// smallest node and visits every member, going to the smallest unvisited
// successor while there is one, else by the shortest path to the nearest
// member with an unvisited successor. On a simple cycle that is the cycle
// itself, rotated to start at its smallest node (a -> b -> c -> a). Walks
// are sorted by their first node. Find returns nil when there is no cycle.
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
// its smallest member that visits every member. It goes to the smallest
// unvisited successor while there is one, and otherwise breadth-first to the
// nearest node that has an unvisited successor (successors in name order),
// then back home; on a simple cycle that is the cycle itself. Arrays are
// stamped, not cleared, so one walker serves every component, and a cursor
// per node skips successors already visited, so a hub that the walk passes
// again and again is not rescanned each time.
type walker struct {
	off, adj []int
	comp     []int32 // stamp: the component being walked
	seen     []int32 // stamp: visited by the walk
	mark     []int32 // stamp: reached by the current BFS
	cursor   []int   // adj position before which every successor is visited or outside
	parent   []int
	queue    []int
	bfsID    int32
}

func newWalker(n int, off, adj []int) *walker {
	return &walker{off: off, adj: adj, comp: make([]int32, n), seen: make([]int32, n), mark: make([]int32, n),
		cursor: make([]int, n), parent: make([]int, n)}
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
	start := members[0]
	walk := []int{start}
	w.seen[start] = id
	cur := start
	for left := len(members) - 1; left > 0; left-- {
		if next := w.unvisited(cur, id); next >= 0 {
			walk = append(walk, next)
			cur = next
		} else {
			walk = w.bfs(walk, cur, id, -1)
			cur = walk[len(walk)-1]
		}
		w.seen[cur] = id
	}
	return w.bfs(walk, cur, id, start)
}

// bfs appends to walk the shortest path (within component id) from cur to
// goal, or, when goal is -1, to the nearest member not yet visited;
// cur itself is not appended.
func (w *walker) bfs(walk []int, cur int, id int32, goal int) []int {
	w.bfsID++
	b := w.bfsID
	w.queue = append(w.queue[:0], cur)
	w.mark[cur] = b
	found := -1
	for h := 0; h < len(w.queue) && found < 0; h++ {
		v := w.queue[h]
		if goal < 0 {
			if s := w.unvisited(v, id); s >= 0 {
				w.parent[s] = v
				found = s
				break
			}
		}
		for _, s := range w.adj[w.off[v]:w.off[v+1]] {
			if w.comp[s] != id || w.mark[s] == b {
				continue
			}
			w.mark[s] = b
			w.parent[s] = v
			if s == goal {
				found = s
				break
			}
			w.queue = append(w.queue, s)
		}
	}
	if found < 0 {
		panic("cycles: internal error: strongly connected component is not strongly connected")
	}
	n := len(walk)
	for x := found; x != cur; x = w.parent[x] {
		walk = append(walk, x)
	}
	slices.Reverse(walk[n:])
	return walk
}
