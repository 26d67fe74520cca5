package dag

import (
	"fmt"
	"testing"
	"time"
)

// treeCycle is a complete binary tree of n components in which each
// depends on its two children and each leaf on the root: one strongly
// connected component whose report walks down to every leaf and back.
// Names sort in heap order.
func treeCycle(n int) []Node {
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i].Name = fmt.Sprintf("t%06d", i)
	}
	for i := range nodes {
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < n {
				nodes[i].Deps = append(nodes[i].Deps, nodes[c].Name)
			}
		}
		if 2*i+1 >= n {
			nodes[i].Deps = append(nodes[i].Deps, nodes[0].Name)
		}
	}
	return nodes
}

// BenchmarkNewTreeCycle times New on tree-shaped cycles of 4,096, 16,384
// and 65,536 components in each iteration and reports ns per node at each
// size and the ratio of 64k's to 4k's: about 1 is linear (the walk's
// length grows as n log n here, so about 1.3), 16 would be quadratic.
// Target: 64k under 0.5 s (ns/node-64k under 7,600). Run:
//
//	go test -run '^$' -bench NewTreeCycle -benchtime 3x ./dag
func BenchmarkNewTreeCycle(b *testing.B) {
	sizes := []int{4096, 16384, 65536}
	graphs := make([][]Node, len(sizes))
	for i, n := range sizes {
		graphs[i] = treeCycle(n)
	}
	spent := make([]time.Duration, len(sizes))
	b.ReportAllocs()
	for b.Loop() {
		for i, nodes := range graphs {
			start := time.Now()
			_, err := New(nodes)
			spent[i] += time.Since(start)
			if _, ok := err.(*CycleError); !ok {
				b.Fatalf("New(tree cycle of %d) = %v, want a *CycleError", sizes[i], err)
			}
		}
	}
	per := make([]float64, len(sizes))
	for i, n := range sizes {
		per[i] = float64(spent[i].Nanoseconds()) / float64(b.N) / float64(n)
		b.ReportMetric(per[i], fmt.Sprintf("ns/node-%dk", n/1024))
	}
	b.ReportMetric(per[len(per)-1]/per[0], "ratio-64k/4k")
}
