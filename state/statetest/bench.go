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
	"github.com/hopdag/hopdag/record"
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
func bigStatus() *record.Status {
	s := Sample(2)
	for len(s.Hops) < 3 {
		s.Hops = append(s.Hops, s.Hops[0])
	}
	for h := range s.Hops {
		s.Hops[h].Components = append([]record.ComponentStatus(nil), s.Hops[h].Components...)
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
// DAG with MaxParallel 64, run without a store (Execute) and with one
// (state.Run: the lock acquired and kept, the empty status loaded, every
// round checkpointed, the lock released) in the same iteration. It reports overhead-us/component,
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
				cs := &countingStore{Store: be}
				before := d.Written(be)
				start = time.Now()
				if _, err := state.Run(b.Context(), cs, be, runner.New(noop, runner.WithMaxParallel(64)), p, state.WithHolder("bench"), state.WithTTL(time.Hour)); err != nil {
					b.Fatalf("state.Run = %v", err)
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

func (c *countingStore) Commit(ctx context.Context, token uint64, s *record.Status, changed []record.Ref) error {
	c.records += int64(len(changed))
	return c.Store.Commit(ctx, token, s, changed)
}

// Chain returns a plan of n hops, v1.0 -> v1.1 -> ... -> v1.n, each
// upgrading one component of its own (c000, c001, ...).
func Chain(n int) *runner.Plan {
	v := func(minor int) release.Version { return release.MustParseVersion(fmt.Sprintf("v1.%d", minor)) }
	route := &path.Route{From: v(0), To: v(n)}
	p := &runner.Plan{Route: route}
	for i := range n {
		ph := path.Hop{From: v(i), To: v(i + 1)}
		route.Hops = append(route.Hops, ph)
		name := fmt.Sprintf("c%03d", i)
		g, err := dag.New([]dag.Node{{Name: name,
			From: &release.ComponentVersion{Name: name, Version: release.MustParseVersion(fmt.Sprintf("v1.%d.0", i))},
			To:   &release.ComponentVersion{Name: name, Version: release.MustParseVersion(fmt.Sprintf("v1.%d.0", i+1)), Type: release.TypeInline, Handler: name}}})
		if err != nil {
			panic(fmt.Sprintf("statetest: Chain(%d): %v", n, err))
		}
		p.Hops = append(p.Hops, &runner.HopPlan{Hop: ph, Graph: g})
	}
	return p
}

// BenchChainRun runs Chain(hops) for hops = 17 and 200 with a store
// (acquired, Checkpointer) and reports what its commits cost:
// bytes/commit, the status bytes written per Commit (a journal record,
// or now and then the snapshot a Commit turns into), p50-bytes/commit,
// the median of those (a journal record), and commits/run.
func BenchChainRun(b *testing.B, d DurableRun) {
	for _, hops := range []int{17, 200} {
		b.Run(fmt.Sprintf("hops=%d", hops), func(b *testing.B) {
			p := Chain(hops)
			noop := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
			var sizes []int64
			for b.Loop() {
				be := d.Open(b)
				l, err := be.Acquire(b.Context(), "bench", time.Hour)
				if err != nil {
					b.Fatalf("Acquire = %v", err)
				}
				cs := &sizingStore{Store: be, written: func() int64 { return d.Written(be) }}
				if _, err := runner.New(noop, runner.WithCheckpointer(state.Checkpointer(cs, l))).Execute(b.Context(), p, nil); err != nil {
					b.Fatalf("Execute = %v", err)
				}
				sizes = append(sizes, cs.sizes...)
			}
			if len(sizes) == 0 {
				b.Fatalf("the run made no Commit")
			}
			total := int64(0)
			for _, n := range sizes {
				total += n
			}
			slices.Sort(sizes)
			b.ReportMetric(float64(total)/float64(len(sizes)), "bytes/commit")
			b.ReportMetric(float64(sizes[len(sizes)/2]), "p50-bytes/commit")
			b.ReportMetric(float64(len(sizes))/float64(b.N), "commits/run")
		})
	}
}

// sizingStore records the status bytes each Commit wrote.
type sizingStore struct {
	state.Store
	written func() int64
	sizes   []int64
}

func (c *sizingStore) Commit(ctx context.Context, token uint64, s *record.Status, changed []record.Ref) error {
	before := c.written()
	err := c.Store.Commit(ctx, token, s, changed)
	c.sizes = append(c.sizes, c.written()-before)
	return err
}
