package runner_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	hdag "github.com/heimdalr/dag"
	"golang.org/x/sync/errgroup"

	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/runner"
)

// Benchmarks of the executor, each with its baselines measured in the same
// run and reported as ratios, so that a noisy machine moves both sides
// (figures are medians over the iterations; run at least -benchtime 5x):
//
//	go test -run '^$' -bench . -benchtime 10x ./runner
//
// BenchmarkOverhead: 10,000 no-op components on a layered DAG (20 layers of
// 500, each node depending on 1-4 nodes of the previous layer within two
// positions of its own, seeded), MaxParallel 64, against
// heimdalr/dag's DescendantsFlow from one added root on the same graph and
// a naive errgroup-per-level loop (SetLimit 64). Target: the executor at
// most 10 µs per component and faster than both (ratios < 1).
//
// BenchmarkMakespan: 200 components with simulated durations of 1-20 ms
// (fixed seed), unlimited parallelism. Target: Eager makespan / critical
// path <= 1.10; Batch's ratio beside it is the price of barriers.

const (
	overheadN      = 10000
	overheadWidth  = 500
	overheadWindow = 2
	overheadLimit  = 64
)

func overheadGraph(b *testing.B) (*dag.Graph, *runner.Plan) {
	b.Helper()
	g, err := dag.New(layered(overheadN, overheadWidth, overheadWindow, 42, nil))
	if err != nil {
		b.Fatal(err)
	}
	return g, planOf(hop{g: g})
}

// heimdalrOf builds g as a heimdalr DAG, plus a root vertex before every
// node without dependencies, so that one DescendantsFlow reaches the whole
// graph. (Setup, not measured. heimdalr maintains ancestor and descendant
// sets on every AddEdge, so its build cost follows the transitive closure:
// this graph's local dependencies keep it near a second, where 100 layers
// of 100 with dependencies anywhere in the previous layer take minutes.)
func heimdalrOf(b testing.TB, g *dag.Graph) *hdag.DAG {
	b.Helper()
	d := hdag.NewDAG()
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(d.AddVertexByID("root", "root"))
	type edge struct{ from, to string }
	var edges []edge
	for i := 0; i < g.Len(); i++ {
		must(d.AddVertexByID(g.Node(i).Name, g.Node(i)))
		if len(g.Deps(i)) == 0 {
			edges = append(edges, edge{"root", g.Node(i).Name})
		}
		for _, dep := range g.Deps(i) {
			edges = append(edges, edge{g.Node(dep).Name, g.Node(i).Name})
		}
	}
	for _, e := range edges {
		must(d.AddEdge(e.from, e.to))
	}
	return d
}

func noop(context.Context, runner.Task) error { return nil }

// runExecutor is one Execute of the plan with a no-op runner.
func runExecutor(b *testing.B, e *runner.Executor, p *runner.Plan) {
	st, err := e.Execute(context.Background(), p, nil)
	if err != nil || st.Progress.Done != overheadN {
		b.Fatalf("Execute = %v, %d done, want nil, %d", err, st.Progress.Done, overheadN)
	}
}

// runHeimdalr is one DescendantsFlow from the root with a no-op callback.
func runHeimdalr(b *testing.B, d *hdag.DAG) {
	res, err := d.DescendantsFlow("root", nil, func(*hdag.DAG, string, []hdag.FlowResult) (any, error) { return nil, nil })
	if err != nil || len(res) == 0 {
		b.Fatalf("DescendantsFlow = %d results, %v", len(res), err)
	}
}

// runErrgroup runs each level in an errgroup limited to 64, with a barrier
// between levels: the naive loop a user would write.
func runErrgroup(b *testing.B, g *dag.Graph) {
	ctx := context.Background()
	done := 0
	for _, level := range g.Levels() {
		eg, ectx := errgroup.WithContext(ctx)
		eg.SetLimit(overheadLimit)
		for _, i := range level {
			task := runner.Task{Component: g.Node(i).Name, To: g.Node(i).To}
			eg.Go(func() error { return noop(ectx, task) })
		}
		if err := eg.Wait(); err != nil {
			b.Fatal(err)
		}
		done += len(level)
	}
	if done != overheadN {
		b.Fatalf("errgroup ran %d, want %d", done, overheadN)
	}
}

func BenchmarkOverhead(b *testing.B) {
	g, p := overheadGraph(b)
	d := heimdalrOf(b, g)
	e := runner.New(runner.RunnerFunc(noop), runner.WithMaxParallel(overheadLimit))
	contenders := []struct {
		name string
		run  func()
		took []time.Duration
	}{
		{name: "hopdag", run: func() { runExecutor(b, e, p) }},
		{name: "heimdalr", run: func() { runHeimdalr(b, d) }},
		{name: "errgroup", run: func() { runErrgroup(b, g) }},
	}
	for _, c := range contenders {
		c.run() // warm up: first-run page faults and stack growth
	}
	b.ReportAllocs()
	for b.Loop() {
		// Interleaved, so that noise falls on all three alike; each starts
		// after a collection, so that none pays for another's garbage.
		for i := range contenders {
			runtime.GC()
			t := time.Now()
			contenders[i].run()
			contenders[i].took = append(contenders[i].took, time.Since(t))
		}
	}
	// Medians per component: a noisy neighbour spoils a run, not the figure.
	per := make([]float64, len(contenders))
	for i, c := range contenders {
		slices.Sort(c.took)
		per[i] = float64(c.took[len(c.took)/2].Nanoseconds()) / overheadN
	}
	b.ReportMetric(per[0], "ns/component")
	b.ReportMetric(per[1], "heimdalr-ns/component")
	b.ReportMetric(per[2], "errgroup-ns/component")
	b.ReportMetric(per[0]/per[1], "x-heimdalr")
	b.ReportMetric(per[0]/per[2], "x-errgroup")
	if per[0] > 10_000 {
		b.Errorf("executor overhead %.0f ns/component, want <= 10000", per[0])
	}
}

// BenchmarkExecutor is the executor alone on the overhead graph, for
// profiling (-cpuprofile).
func BenchmarkExecutor(b *testing.B) {
	for _, mode := range []runner.Mode{runner.Eager, runner.Batch} {
		b.Run(mode.String(), func(b *testing.B) {
			_, p := overheadGraph(b)
			e := runner.New(runner.RunnerFunc(noop), runner.WithMaxParallel(overheadLimit), runner.WithMode(mode))
			b.ReportAllocs()
			for b.Loop() {
				runExecutor(b, e, p)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/overheadN, "ns/component")
		})
	}
}

// sleepRunner waits out each component's expected duration, or ctx.
func sleepRunner(g *dag.Graph) runner.Runner {
	return runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		i, _ := g.Index(t.Component)
		tm := time.NewTimer(g.Node(i).Duration)
		defer tm.Stop()
		select {
		case <-tm.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

func BenchmarkMakespan(b *testing.B) {
	nodes := layered(200, 10, 0, 7, func(r *rand.Rand) time.Duration { return time.Duration(1+r.IntN(20)) * time.Millisecond })
	g, err := dag.New(nodes)
	if err != nil {
		b.Fatal(err)
	}
	_, cp := g.CriticalPath()
	p := planOf(hop{g: g})
	eager := runner.New(sleepRunner(g))
	batch := runner.New(sleepRunner(g), runner.WithMode(runner.Batch))
	var batchBound time.Duration // sum of each level's longest component
	for _, level := range g.Levels() {
		var m time.Duration
		for _, i := range level {
			m = max(m, g.Node(i).Duration)
		}
		batchBound += m
	}
	b.ReportAllocs()
	var tEager, tBatch time.Duration
	for b.Loop() {
		for _, x := range []struct {
			e   *runner.Executor
			sum *time.Duration
		}{{eager, &tEager}, {batch, &tBatch}} {
			t := time.Now()
			if _, err := x.e.Execute(context.Background(), p, nil); err != nil {
				b.Fatal(err)
			}
			*x.sum += time.Since(t)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(cp.Milliseconds()), "critical-path-ms")
	b.ReportMetric(float64(tEager.Milliseconds())/n, "eager-ms")
	b.ReportMetric(float64(tBatch.Milliseconds())/n, "batch-ms")
	b.ReportMetric(float64(tEager)/n/float64(cp), "eager/critical-path")
	b.ReportMetric(float64(tBatch)/n/float64(cp), "batch/critical-path")
	b.ReportMetric(float64(batchBound)/float64(cp), "batch-bound/critical-path")
	if r := float64(tEager) / n / float64(cp); r > 1.10 {
		b.Errorf("Eager makespan / critical path = %.3f, want <= 1.10", r)
	}
}
