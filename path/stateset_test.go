package path

import (
	"math/rand/v2"
	"testing"
)

// stateSet agrees with a Go map on random keys, through growth, key 0
// included.
func TestStateSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 0))
	var s stateSet
	s.init(4)
	ref := map[uint64]int32{}
	for i := range 20_000 {
		k := rng.Uint64N(30_000)
		if i == 0 {
			k = 0
		}
		_, had := ref[k]
		if added := s.add(k, int32(i)); added == had {
			t.Fatalf("add(%d) = %v, want %v", k, added, !had)
		}
		if !had {
			ref[k] = int32(i)
		}
	}
	for k, want := range ref {
		if got, ok := s.get(k); !ok || got != want {
			t.Fatalf("get(%d) = %d, %v; want %d, true", k, got, ok, want)
		}
	}
	for k := uint64(30_000); k < 31_000; k++ {
		if _, ok := s.get(k); ok {
			t.Fatalf("get(%d) found a key never added", k)
		}
	}
	if s.n != len(ref) {
		t.Fatalf("n = %d, want %d", s.n, len(ref))
	}
}
