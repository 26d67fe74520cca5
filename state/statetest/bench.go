package statetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
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

// Layered returns a one-hop plan of n no-op-able components on a layered
// DAG: layers of n/20 nodes (at least 1), each node depending on 1-4
// distinct nodes of the previous layer within two positions of its own,
// seeded (the runner's BenchmarkOverhead graph).
func Layered(_ testing.TB, n int) *runner.Plan {
	width := max(n/20, 1)
	rnd := rand.New(rand.NewPCG(42, 1))
	v0, v1 := release.MustParseVersion("v1.0.0"), release.MustParseVersion("v1.1.0")
	nodes := make([]dag.Node, n)
	for i := range nodes {
		name := fmt.Sprintf("c%05d", i)
		nodes[i] = dag.Node{Name: name,
			From: &release.ComponentVersion{Name: name, Version: v0},
			To:   &release.ComponentVersion{Name: name, Version: v1, Type: release.TypeInline, Handler: name}}
		layer, pos := i/width, i%width
		if layer == 0 {
			continue
		}
		lo, hi := max(pos-2, 0), min(pos+3, width)
		k := min(1+rnd.IntN(4), hi-lo)
		for _, j := range rnd.Perm(hi - lo)[:k] {
			nodes[i].Deps = append(nodes[i].Deps, nodes[(layer-1)*width+lo+j].Name)
		}
		slices.Sort(nodes[i].Deps)
		nodes[i].To.Dependencies = nodes[i].Deps
	}
	g, err := dag.New(nodes)
	if err != nil {
		// The graph is generated acyclic: only a bug gets here.
		panic(fmt.Sprintf("statetest: Layered(%d): %v", n, err))
	}
	v := func(s string) release.Version { return release.MustParseVersion(s) }
	ph := path.Hop{From: v("v1.0"), To: v("v1.1")}
	return &runner.Plan{Route: &path.Route{From: ph.From, To: ph.To, Hops: []path.Hop{ph}}, Hops: []*runner.HopPlan{{Hop: ph, Graph: g}}}
}

// DurableRun is what BenchDurableRun needs of a backend.
type DurableRun struct {
	// Open returns a fresh, empty backend.
	Open func(b *testing.B) Backend
	// Written returns the bytes the backend wrote for the status so far.
	Written func(Backend) int64
	// Report, when not nil, reports more metrics after the runs.
	Report func(b *testing.B)
}

// BenchDurableRun is BenchmarkDurableRun's body for one backend: for
// n = 1000, 3000 and 10000, one hop of no-op components on the Layered
// DAG with MaxParallel 64, run without a store and with one (acquired,
// Checkpointer) in the same iteration. It reports overhead-us/component,
// ((with - without) / n), and bytes/transition (status bytes written per
// component record the executor checkpointed).
func BenchDurableRun(b *testing.B, d DurableRun) {
	for _, n := range []int{1000, 3000, 10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			p := Layered(b, n)
			noop := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
			var with, without time.Duration
			var written, transitions int64
			for b.Loop() {
				start := time.Now()
				if _, err := runner.New(noop, runner.WithMaxParallel(64)).Execute(b.Context(), p, nil); err != nil {
					b.Fatalf("Execute without a store = %v", err)
				}
				without += time.Since(start)

				be := d.Open(b)
				l, err := be.Acquire(b.Context(), "bench", time.Hour)
				if err != nil {
					b.Fatalf("Acquire = %v", err)
				}
				cs := &countingStore{Store: be}
				before := d.Written(be)
				start = time.Now()
				if _, err := runner.New(noop, runner.WithMaxParallel(64), runner.WithCheckpointer(state.Checkpointer(cs, l))).Execute(b.Context(), p, nil); err != nil {
					b.Fatalf("Execute with a store = %v", err)
				}
				with += time.Since(start)
				written += d.Written(be) - before
				transitions += cs.records
			}
			b.ReportMetric(float64((with-without).Microseconds())/float64(b.N*n), "overhead-us/component")
			b.ReportMetric(float64(written)/float64(max(transitions, 1)), "bytes/transition")
			if d.Report != nil {
				d.Report(b)
			}
		})
	}
}

// countingStore counts the component records committed.
type countingStore struct {
	state.Store
	records int64
}

func (c *countingStore) Commit(ctx context.Context, token uint64, s *runner.Status, changed []runner.Ref) error {
	c.records += int64(len(changed))
	return c.Store.Commit(ctx, token, s, changed)
}
