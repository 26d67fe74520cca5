package cycles_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hopdag/hopdag/internal/cycles"
)

// graph builds the compressed form of succ (successors per node).
func graph(succ [][]int) (off, adj []int) {
	off = []int{0}
	for _, s := range succ {
		s = slices.Clone(s)
		slices.Sort(s)
		adj = append(adj, slices.Compact(s)...)
		off = append(off, len(adj))
	}
	return off, adj
}

func TestFind(t *testing.T) {
	tests := []struct {
		name      string
		succ      [][]int
		candidate []bool
		want      [][]int
	}{
		{"no edges", [][]int{{}, {}}, nil, nil},
		{"chain", [][]int{{1}, {2}, {}}, nil, nil},
		{"two-node cycle", [][]int{{1}, {0}}, nil, [][]int{{0, 1, 0}}},
		{"chain into a dead end", [][]int{{}, {}, {3}, {1}}, nil, nil},
		{"three-node cycle from its smallest node", [][]int{{2}, {0}, {1}}, nil, [][]int{{0, 2, 1, 0}}},
		{"two cycles, sorted", [][]int{{}, {}, {3}, {2}, {5}, {6}, {4}}, nil, [][]int{{2, 3, 2}, {4, 5, 6, 4}}},
		{"overlapping cycles as one walk", [][]int{{1, 2}, {0}, {0}}, nil, [][]int{{0, 1, 0, 2, 0}}},
		{"candidates only", [][]int{{1}, {0}, {3}, {2}}, []bool{false, false, true, true}, [][]int{{2, 3, 2}}},
		// Stuck at a leaf, the walk goes home and out by shortest paths
		// to the first unvisited node in breadth-first order.
		{"tree whose leaves lead home", [][]int{{1, 2}, {3, 4}, {5, 6}, {0}, {0}, {0}, {0}}, nil,
			[][]int{{0, 1, 3, 0, 2, 5, 0, 1, 4, 0, 2, 6, 0}}},
		{"out past visited nodes", [][]int{{1}, {2, 3}, {0}, {1}}, nil, [][]int{{0, 1, 2, 0, 1, 3, 1, 2, 0}}},
		{"home by the shortest path", [][]int{{1}, {2}, {0, 3}, {4}, {2}}, nil, [][]int{{0, 1, 2, 3, 4, 2, 0}}},
		{"turn off on the way home", [][]int{{1, 3}, {2}, {0}, {4}, {1}}, nil, [][]int{{0, 1, 2, 0, 3, 4, 1, 2, 0}}},
		{"turn off before home", [][]int{{1}, {0, 2, 3}, {1}, {0}}, nil, [][]int{{0, 1, 2, 1, 3, 0}}},
		{"out by the first in breadth-first order", [][]int{{1}, {2}, {3, 4}, {0}, {2}}, nil, [][]int{{0, 1, 2, 3, 0, 1, 2, 4, 2, 3, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			off, adj := graph(tt.succ)
			assert.Equal(t, tt.want, cycles.Find(off, adj, tt.candidate), "Find(%v)", tt.succ)
		})
	}
}

// TestFindProperties: on random graphs (some restricted to candidates)
// every walk is closed, starts at its smallest node, follows edges, and
// visits exactly the members of one strongly connected component of more
// than one node (by brute-force reachability); every such component has a
// walk; a component that is a simple cycle is walked once around; and no
// walk is longer than members x (hops home + hops out + 1), hops measured
// from the walk's start, so it cannot grow quadratically on a shallow
// component.
func TestFindProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	walks, simple := 0, 0
	for i := range 2000 {
		g := randomGraph(rng, i%3 == 0)
		got := cycles.Find(g.off, g.adj, g.candidate)
		onWalk := map[int]bool{}
		for _, walk := range got {
			walks++
			members := g.checkWalk(t, walk)
			for _, v := range members {
				if onWalk[v] {
					t.Fatalf("node %d is on two walks of %v", v, g.succ)
				}
				onWalk[v] = true
			}
			if g.checkSimple(t, walk, members) {
				simple++
			}
			g.checkLength(t, walk, members)
		}
		for v := range g.n {
			if g.in(v) && g.reach[v][v] && !onWalk[v] {
				t.Fatalf("node %d of %v (candidates %v) is on a cycle but on no walk: %v", v, g.succ, g.candidate, got)
			}
		}
	}
	if walks < 1000 || simple < 100 {
		t.Fatalf("%d walks, %d simple cycles: want at least 1000 and 100 for the test to mean something", walks, simple)
	}
}

// propGraph is a random graph of TestFindProperties, with what the checks
// of its walks need.
type propGraph struct {
	n         int
	succ      [][]int
	candidate []bool // nil: every node
	off, adj  []int
	// reach[a][b]: a path from a to b of at least one edge, through
	// candidates only.
	reach [][]bool
}

// randomGraph returns a graph of 1 to 30 nodes of up to 3 successors
// each, restricted to about three quarters of its nodes when restrict is
// set.
func randomGraph(rng *rand.Rand, restrict bool) *propGraph {
	n := 1 + rng.IntN(30)
	g := &propGraph{n: n, succ: make([][]int, n)}
	for v := range g.succ {
		for range rng.IntN(4) {
			if w := rng.IntN(n); w != v {
				g.succ[v] = append(g.succ[v], w)
			}
		}
	}
	if restrict {
		g.candidate = make([]bool, n)
		for v := range g.candidate {
			g.candidate[v] = rng.IntN(4) > 0
		}
	}
	g.off, g.adj = graph(g.succ)
	g.reach = make([][]bool, n)
	for a := range g.reach {
		g.reach[a] = g.reachable(a)
	}
	return g
}

func (g *propGraph) in(v int) bool { return g.candidate == nil || g.candidate[v] }

func (g *propGraph) next(v int) []int { return g.adj[g.off[v]:g.off[v+1]] }

// reachable returns the candidates a path of at least one edge through
// candidates leads to from a (none when a is not a candidate).
func (g *propGraph) reachable(a int) []bool {
	reach := make([]bool, g.n)
	if !g.in(a) {
		return reach
	}
	stack := []int{a}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range g.next(v) {
			if g.in(w) && !reach[w] {
				reach[w] = true
				stack = append(stack, w)
			}
		}
	}
	return reach
}

// checkWalk checks that walk is closed, starts at its smallest node,
// follows edges, and visits exactly the members of its start's strongly
// connected component, which it returns.
func (g *propGraph) checkWalk(t *testing.T, walk []int) (members []int) {
	t.Helper()
	if walk[0] != walk[len(walk)-1] || len(walk) < 3 {
		t.Fatalf("walk %v of %v is not closed", walk, g.succ)
	}
	if walk[0] != slices.Min(walk) {
		t.Fatalf("walk %v of %v does not start at its smallest node", walk, g.succ)
	}
	for i := 1; i < len(walk); i++ {
		if !slices.Contains(g.next(walk[i-1]), walk[i]) {
			t.Fatalf("walk %v of %v takes %d -> %d, not an edge", walk, g.succ, walk[i-1], walk[i])
		}
	}
	home := walk[0]
	for v := range g.n {
		if v == home || g.reach[home][v] && g.reach[v][home] {
			members = append(members, v)
		}
	}
	visited := slices.Sorted(maps.Keys(setOf(walk)))
	if !slices.Equal(members, visited) {
		t.Fatalf("walk %v of %v (candidates %v) visits %v, want its component %v", walk, g.succ, g.candidate, visited, members)
	}
	return members
}

// checkSimple reports whether the component members is a simple cycle
// (every member has one successor in it), and checks that walk then goes
// once around.
func (g *propGraph) checkSimple(t *testing.T, walk, members []int) bool {
	t.Helper()
	inComp := setOf(members)
	deg := 0
	for _, v := range members {
		for _, w := range g.next(v) {
			if inComp[w] {
				deg++
			}
		}
	}
	if deg != len(members) {
		return false
	}
	if len(walk) != len(members)+1 {
		t.Fatalf("walk %v of the simple cycle %v of %v is not once around", walk, members, g.succ)
	}
	return true
}

// checkLength checks that walk is no longer than members x (hops home +
// hops out + 1), hops measured from the walk's start.
func (g *propGraph) checkLength(t *testing.T, walk, members []int) {
	t.Helper()
	inComp, home := setOf(members), walk[0]
	hopsOut := distances(g.n, g.next, inComp, home)
	hopsHome := distances(g.n, func(v int) []int {
		var pred []int
		for u := range g.n {
			if slices.Contains(g.next(u), v) {
				pred = append(pred, u)
			}
		}
		return pred
	}, inComp, home)
	if bound := len(members) * (slices.Max(hopsOut) + slices.Max(hopsHome) + 1); len(walk)-1 > bound {
		t.Fatalf("walk %v of %v takes %d steps, want at most %d", walk, g.succ, len(walk)-1, bound)
	}
}

func setOf(xs []int) map[int]bool {
	m := map[int]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// distances returns the hops from src to each node of comp along next.
func distances(n int, next func(int) []int, comp map[int]bool, src int) []int {
	dist := slices.Repeat([]int{-1}, n)
	dist[src] = 0
	queue := []int{src}
	for h := 0; h < len(queue); h++ {
		for _, w := range next(queue[h]) {
			if comp[w] && dist[w] < 0 {
				dist[w] = dist[queue[h]] + 1
				queue = append(queue, w)
			}
		}
	}
	return dist
}

func ExampleFind() {
	// a -> b -> c -> a, and x -> y -> x; nodes numbered in name order.
	names := []string{"a", "b", "c", "ok", "x", "y"}
	off := []int{0, 1, 2, 3, 4, 5, 6}
	adj := []int{1, 2, 0, 4, 5, 4}
	for _, walk := range cycles.Find(off, adj, nil) {
		for i, v := range walk {
			if i > 0 {
				fmt.Print(" -> ")
			}
			fmt.Print(names[v])
		}
		fmt.Println()
	}
	// Output:
	// a -> b -> c -> a
	// x -> y -> x
}
