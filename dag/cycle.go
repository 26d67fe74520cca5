package dag

import (
	"slices"
	"strconv"
	"strings"
)

// CycleError reports every dependency cycle of a graph at once.
//
// There is one entry per strongly connected component, sorted by its first
// name. Each entry is a closed path along "depends on" edges that starts and
// ends at the component's smallest name and visits each of its members: a
// simple cycle a -> b -> c -> a is reported exactly so; a component made of
// several overlapping cycles is reported as one walk that may pass a node
// more than once (a -> b -> a -> c -> a). Removing any one dependency of a
// simple cycle breaks it.
//
// In Build, a changed `before: all` component counts as a dependency of
// every other changed component, so one that depends (even through
// unchanged components) on a component it must precede is reported as a
// cycle through that dependency: app -> setup -> app.
type CycleError struct {
	Cycles [][]string
}

// Error is like "dag: 2 cycles: a -> b -> c -> a; x -> y -> x".
func (e *CycleError) Error() string {
	var b strings.Builder
	b.WriteString("dag: ")
	b.WriteString(strconv.Itoa(len(e.Cycles)))
	if len(e.Cycles) == 1 {
		b.WriteString(" cycle: ")
	} else {
		b.WriteString(" cycles: ")
	}
	for i, c := range e.Cycles {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strings.Join(c, " -> "))
	}
	return b.String()
}

// Is reports whether target is ErrCycle.
func (e *CycleError) Is(target error) bool { return target == ErrCycle }

// cycles runs Tarjan on the nodes Kahn could not order.
func (g *Graph) cycles() *CycleError {
	names := make([]string, len(g.nodes))
	candidate := make([]bool, len(g.nodes))
	for i := range g.nodes {
		names[i] = g.nodes[i].Name
		candidate[i] = g.level[i] < 0
	}
	return findCycles(names, g.depOff, g.deps, candidate)
}

// findCycles returns a *CycleError for the graph given in compressed form
// (the successors of v are adj[off[v]:off[v+1]], ascending), restricted to
// the nodes with candidate[v] set (nodes Kahn could not order; nil means
// all). names[v] is v's name; indexes are in name order. It returns nil
// when there is no cycle.
func findCycles(names []string, off, adj []int, candidate []bool) *CycleError {
	sccs := tarjan(len(names), off, adj, candidate)
	if len(sccs) == 0 {
		return nil
	}
	w := newWalker(len(names), off, adj)
	cycles := make([][]string, 0, len(sccs))
	for id, members := range sccs {
		walk := w.cover(members, int32(id+1))
		path := make([]string, len(walk))
		for i, v := range walk {
			path[i] = names[v]
		}
		cycles = append(cycles, path)
	}
	slices.SortFunc(cycles, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	return &CycleError{Cycles: cycles}
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
		panic("dag: internal error: strongly connected component is not strongly connected")
	}
	n := len(walk)
	for x := found; x != cur; x = w.parent[x] {
		walk = append(walk, x)
	}
	slices.Reverse(walk[n:])
	return walk
}
