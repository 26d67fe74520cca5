package dag

import (
	"errors"
	"strconv"
	"testing"
)

// FuzzNew builds graphs from random edges: New must never panic, and must
// return either a valid DAG or errors of the documented kinds only.
//
// data[0] picks the number of nodes (1-16); each following pair of bytes
// is an edge "a depends on b", where b may name a node that does not exist.
func FuzzNew(f *testing.F) {
	f.Add([]byte{3, 0, 1, 1, 2})             // a chain
	f.Add([]byte{3, 0, 1, 1, 2, 2, 0})       // a cycle
	f.Add([]byte{2, 0, 0})                   // a self-dependency
	f.Add([]byte{2, 0, 9})                   // a missing dependency
	f.Add([]byte{5, 0, 1, 1, 0, 2, 3, 3, 2}) // two cycles
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		n := int(data[0])%16 + 1
		name := func(b byte) string { return "n" + strconv.Itoa(int(b)%(n+2)) }
		nodes := make([]Node, n)
		for i := range nodes {
			nodes[i].Name = "n" + strconv.Itoa(i)
		}
		for k := 1; k+1 < len(data); k += 2 {
			a := int(data[k]) % n
			nodes[a].Deps = append(nodes[a].Deps, name(data[k+1]))
		}
		g, err := New(nodes)
		if err != nil {
			if g != nil {
				t.Fatal("a graph and an error")
			}
			checkErrors(t, err)
			return
		}
		if g.Len() != n {
			t.Fatalf("%d nodes, want %d", g.Len(), n)
		}
		count := 0
		for l, batch := range g.Levels() {
			for _, v := range batch {
				count++
				if g.Level(v) != l {
					t.Fatalf("node %d in batch %d has level %d", v, l, g.Level(v))
				}
				for _, d := range g.Deps(v) {
					if g.Level(d) >= l {
						t.Fatalf("edge %d -> %d does not go forward", d, v)
					}
				}
			}
		}
		if count != n {
			t.Fatalf("batches hold %d nodes, want %d", count, n)
		}
		g.CriticalPath()
		g.TransitiveReduction()
		_ = g.DOT() + g.Mermaid()
		if _, err := g.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
	})
}

// checkErrors fails unless every error err joins is a *CycleError or a
// *DependencyError.
func checkErrors(t *testing.T, err error) {
	t.Helper()
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			checkErrors(t, e)
		}
		return
	}
	var ce *CycleError
	var de *DependencyError
	switch {
	case errors.As(err, &ce):
		if len(ce.Cycles) == 0 {
			t.Fatal("a CycleError without cycles")
		}
		for _, c := range ce.Cycles {
			if len(c) < 3 || c[0] != c[len(c)-1] {
				t.Fatalf("cycle %v is not a closed path", c)
			}
			for _, x := range c {
				if x < c[0] {
					t.Fatalf("cycle %v does not start at its smallest name", c)
				}
			}
		}
	case errors.As(err, &de):
		if !errors.Is(err, ErrMissingDependency) && !errors.Is(err, ErrSelfDependency) {
			t.Fatalf("dependency error of unknown kind: %v", err)
		}
	default:
		t.Fatalf("unexpected error %T: %v", err, err)
	}
}
