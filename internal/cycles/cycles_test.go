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
		n := 1 + rng.IntN(30)
		succ := make([][]int, n)
		for v := range succ {
			for range rng.IntN(4) {
				if w := rng.IntN(n); w != v {
					succ[v] = append(succ[v], w)
				}
			}
		}
		var candidate []bool
		if i%3 == 0 {
			candidate = make([]bool, n)
			for v := range candidate {
				candidate[v] = rng.IntN(4) > 0
			}
		}
		in := func(v int) bool { return candidate == nil || candidate[v] }
		off, adj := graph(succ)
		// reach[a][b]: a path from a to b of at least one edge, through
		// candidates only.
		reach := make([][]bool, n)
		for a := range reach {
			reach[a] = make([]bool, n)
			if !in(a) {
				continue
			}
			stack := []int{a}
			for len(stack) > 0 {
				v := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				for _, w := range adj[off[v]:off[v+1]] {
					if in(w) && !reach[a][w] {
						reach[a][w] = true
						stack = append(stack, w)
					}
				}
			}
		}
		got := cycles.Find(off, adj, candidate)
		onWalk := map[int]bool{}
		for _, walk := range got {
			walks++
			if walk[0] != walk[len(walk)-1] || len(walk) < 3 {
				t.Fatalf("walk %v of %v is not closed", walk, succ)
			}
			if walk[0] != slices.Min(walk) {
				t.Fatalf("walk %v of %v does not start at its smallest node", walk, succ)
			}
			for i := 1; i < len(walk); i++ {
				if !slices.Contains(adj[off[walk[i-1]]:off[walk[i-1]+1]], walk[i]) {
					t.Fatalf("walk %v of %v takes %d -> %d, not an edge", walk, succ, walk[i-1], walk[i])
				}
			}
			home := walk[0]
			var members []int
			for v := range n {
				if v == home || reach[home][v] && reach[v][home] {
					members = append(members, v)
				}
			}
			visited := slices.Sorted(maps.Keys(setOf(walk)))
			if !slices.Equal(members, visited) {
				t.Fatalf("walk %v of %v (candidates %v) visits %v, want its component %v", walk, succ, candidate, visited, members)
			}
			for _, v := range members {
				if onWalk[v] {
					t.Fatalf("node %d is on two walks of %v", v, succ)
				}
				onWalk[v] = true
			}
			// A simple cycle: every member has one successor in the component.
			inComp := setOf(members)
			deg := 0
			for _, v := range members {
				for _, w := range adj[off[v]:off[v+1]] {
					if inComp[w] {
						deg++
					}
				}
			}
			if deg == len(members) {
				simple++
				if len(walk) != len(members)+1 {
					t.Fatalf("walk %v of the simple cycle %v of %v is not once around", walk, members, succ)
				}
			}
			hopsOut := distances(n, func(v int) []int { return adj[off[v]:off[v+1]] }, inComp, home)
			hopsHome := distances(n, func(v int) []int {
				var pred []int
				for u := range n {
					if slices.Contains(adj[off[u]:off[u+1]], v) {
						pred = append(pred, u)
					}
				}
				return pred
			}, inComp, home)
			if bound := len(members) * (slices.Max(hopsOut) + slices.Max(hopsHome) + 1); len(walk)-1 > bound {
				t.Fatalf("walk %v of %v takes %d steps, want at most %d", walk, succ, len(walk)-1, bound)
			}
		}
		for v := range n {
			if in(v) && reach[v][v] && !onWalk[v] {
				t.Fatalf("node %d of %v (candidates %v) is on a cycle but on no walk: %v", v, succ, candidate, got)
			}
		}
	}
	if walks < 1000 || simple < 100 {
		t.Fatalf("%d walks, %d simple cycles: want at least 1000 and 100 for the test to mean something", walks, simple)
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
