package cycles_test

import (
	"fmt"
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			off, adj := graph(tt.succ)
			assert.Equal(t, tt.want, cycles.Find(off, adj, tt.candidate), "Find(%v)", tt.succ)
		})
	}
}

// TestFindProperties: on random graphs every walk is closed, starts at its
// smallest node, follows edges, and the walks cover disjoint node sets.
func TestFindProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		n := 1 + rng.IntN(30)
		succ := make([][]int, n)
		for v := range succ {
			for range rng.IntN(3) {
				if w := rng.IntN(n); w != v {
					succ[v] = append(succ[v], w)
				}
			}
		}
		off, adj := graph(succ)
		seen := map[int]bool{}
		for _, walk := range cycles.Find(off, adj, nil) {
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
			members := map[int]bool{}
			for _, v := range walk {
				members[v] = true
			}
			for v := range members {
				if seen[v] {
					t.Fatalf("node %d is on two walks of %v", v, succ)
				}
				seen[v] = true
			}
		}
	}
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
