package components

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestInventoryProperties checks, over random inventories, the rules prune
// relies on: stale(prev, next) holds exactly the identities of prev that
// next lacks, each once, and a version change alone is no identity change;
// union holds every identity of both, once, sorted.
func TestInventoryProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ref := func() Ref {
		return Ref{Group: []string{"", "apps", "example.com"}[rng.IntN(3)], Version: []string{"v1", "v2"}[rng.IntN(2)],
			Kind: []string{"ConfigMap", "Deployment"}[rng.IntN(2)], Namespace: []string{"", "a", "b"}[rng.IntN(3)],
			Name: fmt.Sprint(rng.IntN(4))}
	}
	refs := func() []Ref {
		m := map[objectKey]Ref{}
		for range rng.IntN(12) {
			r := ref()
			m[r.key()] = r
		}
		out := make([]Ref, 0, len(m))
		for _, r := range m {
			out = append(out, r)
		}
		slices.SortFunc(out, compareRefs)
		return out
	}
	for i := range 2000 {
		prev, next := refs(), refs()
		inNext := map[objectKey]bool{}
		for _, r := range next {
			inNext[r.key()] = true
		}
		var want []Ref
		for _, r := range slices.Backward(prev) {
			if !inNext[r.key()] {
				want = append(want, r)
			}
		}
		if got := stale(prev, next); !slices.Equal(got, want) {
			t.Fatalf("case %d: stale(%v, %v) = %v, want %v", i, prev, next, got, want)
		}
		u := union(prev, next)
		if !slices.IsSortedFunc(u, compareRefs) {
			t.Fatalf("case %d: union %v is not sorted", i, u)
		}
		seen := map[objectKey]bool{}
		for _, r := range u {
			if seen[r.key()] {
				t.Fatalf("case %d: union %v holds %v twice", i, u, r)
			}
			seen[r.key()] = true
		}
		for _, r := range slices.Concat(prev, next) {
			if !seen[r.key()] {
				t.Fatalf("case %d: union %v lacks %v", i, u, r)
			}
		}
		moved := slices.Clone(prev)
		for j := range moved {
			moved[j].Version = "v9"
		}
		if got := stale(prev, moved); len(got) != 0 {
			t.Fatalf("case %d: a new version of the same objects prunes %v", i, got)
		}
	}
}
