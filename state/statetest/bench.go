package statetest

import (
	"testing"
	"time"

	"github.com/hopdag/hopdag/runner"
)

// BenchSave measures one checkpoint on b: a Save under a current lease of
// a status the size of the sample catalog's three-hop run (19
// components, about 6 KB of JSON).
func BenchSave(tb *testing.B, b Backend) {
	l, err := b.Acquire(tb.Context(), "bench", time.Hour)
	if err != nil {
		tb.Fatalf("Acquire = %v, want nil", err)
	}
	st := bigStatus()
	tb.ReportAllocs()
	for i := 0; tb.Loop(); i++ {
		st.Runs = i
		if err := b.Save(tb.Context(), l.Token, st); err != nil {
			tb.Fatalf("Save = %v, want nil", err)
		}
	}
}

// bigStatus is a run of 3 hops of 7 components each.
func bigStatus() *runner.Status {
	s := Sample(2)
	for len(s.Hops) < 3 {
		s.Hops = append(s.Hops, s.Hops[0])
	}
	for h := range s.Hops {
		s.Hops[h].Components = append([]runner.ComponentStatus(nil), s.Hops[h].Components...)
		for len(s.Hops[h].Components) < 7 {
			s.Hops[h].Components = append(s.Hops[h].Components, s.Hops[h].Components[0])
		}
	}
	return s
}
