package runner_test

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// BenchmarkRollback: the rollback of a hop of 1,000 components (50 layers
// of 20, each node depending on 1-4 nodes of the previous layer within two
// positions of its own, seeded), MaxParallel 64, no-op Rollback: the
// executor's cost per component rolled back, dependents first. Each
// iteration resumes the same status, whose hop is RollingBack with every
// component Succeeded, so that only the rollback is measured (and the
// copy of the status Execute makes). Figures are medians over the
// iterations (run at least -benchtime 5x):
//
//	go test -run '^$' -bench Rollback -benchtime 20x ./runner

const (
	rollbackN     = 1000
	rollbackWidth = 20
)

// noopUndoer runs and rolls back nothing.
type noopUndoer struct{}

func (noopUndoer) Run(context.Context, runner.Task) error      { return nil }
func (noopUndoer) Rollback(context.Context, runner.Task) error { return nil }

// rollbackBench is the plan and the status to resume: the hop failed its
// required post-check after every component succeeded, and its rollback
// had begun.
func rollbackBench(b *testing.B) (*runner.Plan, *record.Status) {
	b.Helper()
	nodes := layered(rollbackN, rollbackWidth, overheadWindow, 42, nil)
	for i := range nodes {
		nodes[i].From = &release.ComponentVersion{Name: nodes[i].Name, Version: release.MustParseVersion("v1.0.0")}
		nodes[i].To = &release.ComponentVersion{Name: nodes[i].Name, Version: release.MustParseVersion("v1.1.0"), Type: release.TypeInline, Handler: "noop"}
	}
	g, err := dag.New(nodes)
	if err != nil {
		b.Fatal(err)
	}
	p := planOf(hop{g: g})
	s := runner.NewStatus(p)
	s.Runs, s.Phase, s.FailurePolicy = 1, record.RollingBack, runner.Rollback.String()
	s.LastFailure = &record.Failure{Hop: 0, Check: "healthy", Code: record.CodeCheckFailed, Error: "not healthy"}
	hs := &s.Hops[0]
	hs.Phase, hs.Message = record.RollingBack, "rolling back after: required post-check healthy failed: not healthy"
	hs.Checks = []record.CheckStatus{{Name: "healthy", Stage: "post", Required: true, Phase: record.Failed, Error: "not healthy"}}
	for j := range hs.Components {
		hs.Components[j].Phase, hs.Components[j].Attempts = record.Succeeded, 1
	}
	s.Progress = record.Progress{Done: rollbackN, Total: rollbackN}
	return p, s
}

func BenchmarkRollback(b *testing.B) {
	p, prev := rollbackBench(b)
	e := runner.New(noopUndoer{}, runner.WithMaxParallel(overheadLimit))
	run := func() {
		st, err := e.Execute(context.Background(), p, prev)
		if st == nil || st.Phase != record.RolledBack {
			b.Fatalf("Execute = %v, %v, want a status RolledBack", st, err)
		}
		for _, c := range st.Hops[0].Components {
			if c.Phase != record.RolledBack {
				b.Fatalf("%s is %s, want RolledBack", c.Name, c.Phase)
			}
		}
	}
	run() // warm up
	b.ReportAllocs()
	var took []time.Duration
	for b.Loop() {
		runtime.GC()
		t := time.Now()
		run()
		took = append(took, time.Since(t))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/rollbackN, "ns/component")
}
