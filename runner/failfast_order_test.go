package runner_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// orderWait bounds every wait of these tests for something the executor
// should do at once: past it the test fails rather than hangs.
const orderWait = 10 * time.Second

// gapCall is what the Checkpointer saw in one call.
type gapCall struct {
	skipped   int  // dependents recorded Skipped behind the failure
	rootFail  bool // root recorded Failed
	cancelled bool // the sibling's ctx was done when the call began
	saw       bool // the sibling's runner saw ctx.Done() while the call ran
}

// FailFast cancels the running siblings first and records the skipped
// dependents in one checkpoint: when the checkpoint that records them is
// written, the sibling's ctx is already done, and the sibling's runner
// sees it without waiting for that checkpoint to return.
func TestFailFastCancelsSiblingsFirst(t *testing.T) {
	const deps = 10
	nodes := []comp{c("root"), c("sibling")}
	for i := range deps {
		nodes = append(nodes, c(fmt.Sprintf("dep%02d", i), "root"))
	}
	var (
		mu         sync.Mutex
		siblingCtx context.Context
	)
	sibStarted, sibSaw := make(chan struct{}), make(chan struct{})
	rn := runner.RunnerFunc(func(ctx context.Context, task runner.Task) error {
		switch task.Component {
		case "sibling":
			mu.Lock()
			siblingCtx = ctx
			mu.Unlock()
			close(sibStarted)
			<-ctx.Done()
			close(sibSaw)
			return fmt.Errorf("sibling stopped: %w", ctx.Err())
		case "root":
			select {
			case <-sibStarted:
			case <-time.After(orderWait):
			}
			return runner.Permanent(errors.New("root: scripted failure"))
		}
		return nil
	})
	var calls []gapCall // written by the coordinator only; read after Execute
	cp := runner.CheckpointFunc(func(_ context.Context, s *record.Status) error {
		mu.Lock()
		sctx := siblingCtx
		mu.Unlock()
		var call gapCall
		call.cancelled = sctx != nil && sctx.Err() != nil
		for _, cs := range s.Hops[0].Components {
			switch {
			case cs.Name == "root":
				call.rootFail = cs.Phase == record.Failed
			case cs.Phase == record.Skipped && cs.Code == record.CodeDependencyFailed:
				call.skipped++
			}
		}
		if call.skipped > 0 && !slices.ContainsFunc(calls, func(k gapCall) bool { return k.skipped > 0 }) {
			// The first checkpoint of the skipped dependents: the sibling
			// must see its ctx done while it is being written.
			select {
			case <-sibSaw:
				call.saw = true
			case <-time.After(orderWait):
			}
		}
		calls = append(calls, call)
		return nil
	})
	st, err := runner.New(rn, runner.WithFailurePolicy(runner.FailFast), runner.WithCheckpointer(cp)).
		Execute(context.Background(), plan1(t, nodes...), nil)

	require.ErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, record.Failed, compStatus(t, st, 0, "root").Phase, "root phase")
	assert.Equal(t, record.Cancelled, compStatus(t, st, 0, "sibling").Phase, "sibling phase")
	first := slices.IndexFunc(calls, func(k gapCall) bool { return k.skipped > 0 })
	require.GreaterOrEqual(t, first, 0, "no checkpoint recorded the skipped dependents (calls %+v)", calls)
	got := calls[first]
	assert.Equal(t, gapCall{skipped: deps, rootFail: true, cancelled: true, saw: true}, got,
		"checkpoint %d, the first that records skipped dependents: want all %d with root's failure, after the sibling's ctx was cancelled, the sibling seeing it while the checkpoint was written", first+1, deps)
	for i, k := range calls[:first] {
		assert.False(t, k.rootFail, "checkpoint %d records root's failure without its skipped dependents", i+1)
	}
}

// Execute's error lists the failures in the documented order, not the
// order they happened in: here, components of one hop failing in 20
// different orders, forced (each fails only once the executor has
// handled the failure before it) and checked, give the same error every
// time, by component name.
//
// A run cannot have failures in two hops, nor a failed required check
// with failed components: a hop with a failed component fails and later
// hops do not start (FailurePolicy), a failed required pre-check stops
// the hop before its components, and post-checks run only once every
// component is done. So the cases are a failing first hop (the second
// never starts) and a failing second hop, after a first one whose
// optional post-check failed (a warning, not in the error).
func TestExecuteErrorOrderIsFixed(t *testing.T) {
	failing := []string{"f1", "f2", "f3", "f4", "f5"}
	tests := []struct {
		name   string
		hop    int // the hop whose components fail, from 0
		policy runner.FailurePolicy
	}{
		{"first hop, ContinueIndependent", 0, runner.ContinueIndependent},
		{"second hop, ContinueIndependent", 1, runner.ContinueIndependent},
		{"second hop, MaxFailures(9)", 1, runner.MaxFailures(9)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wantParts []string
			for _, f := range failing {
				// Said once: the package, and the component (the runner's
				// error "f1: boom" names it too).
				wantParts = append(wantParts, fmt.Sprintf("hop %d: %s v1.1.0 failed on attempt 1 (COMPONENT_FAILED): boom", tt.hop+1, f))
			}
			want := "runner: run failed: " + strings.Join(wantParts, "\n")
			orders := map[string]bool{}
			for k := range 20 {
				order := slices.Clone(failing)
				rand.New(rand.NewPCG(uint64(k), 7)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				handled, st, err := runInOrder(t, tt.hop, tt.policy, order)
				require.Equal(t, order, handled, "run %d: failures handled in this order, want the forced one", k)
				orders[strings.Join(handled, " ")] = true
				require.Error(t, err, "run %d", k)
				assert.Equal(t, want, err.Error(), "run %d, failures in order %v: Execute's error", k, order)
				if tt.hop == 0 {
					assert.Equal(t, record.Pending, st.Hops[1].Phase, "run %d: hop 2 after a failed hop", k)
				} else {
					assert.Equal(t, []string{"post-check smoke failed: not smoke-tested"}, st.Hops[0].Warnings, "run %d: hop 1 warnings", k)
				}
			}
			assert.Greater(t, len(orders), 10, "distinct orders of failure over 20 runs")
		})
	}
}

// runInOrder runs a two-hop plan whose hop failHop has components
// failing in order (each waits until the executor has handled the one
// before it) beside one that succeeds and one skipped behind a failure.
// It returns the order the executor handled the failures in.
func runInOrder(t *testing.T, failHop int, policy runner.FailurePolicy, order []string) ([]string, *record.Status, error) {
	t.Helper()
	var (
		mu      sync.Mutex
		handled []string
	)
	failed := map[string]chan struct{}{}
	before := map[string]string{} // component -> the one that fails before it
	for i, f := range order {
		failed[f] = make(chan struct{})
		if i > 0 {
			before[f] = order[i-1]
		}
	}
	rn := runner.RunnerFunc(func(_ context.Context, task runner.Task) error {
		if _, ok := failed[task.Component]; !ok || task.HopIndex != failHop {
			return nil
		}
		if prev := before[task.Component]; prev != "" {
			select {
			case <-failed[prev]:
			case <-time.After(orderWait):
				// The order check reports it.
			}
		}
		return runner.Permanent(fmt.Errorf("%s: boom", task.Component))
	})
	obs := runner.ObserverFunc(func(ev runner.Event) {
		if ev.Type != runner.ComponentFailed {
			return
		}
		mu.Lock()
		handled = append(handled, ev.Component)
		mu.Unlock()
		close(failed[ev.Component])
	})
	nodes := []comp{c("ok"), c("after", "f3")}
	for _, f := range slices.Sorted(slices.Values(order)) {
		nodes = append(nodes, c(f))
	}
	h1 := hop{g: graphOf(t, c("ok")), post: []release.Check{{Name: "smoke"}}}
	h2 := hop{g: graphOf(t, c("later"))}
	if failHop == 0 {
		h1.g = graphOf(t, nodes...)
	} else {
		h2.g = graphOf(t, nodes...)
	}
	smoke := func(context.Context, runner.CheckTask) error { return errors.New("not smoke-tested") }
	st, err := runner.New(rn, runner.WithFailurePolicy(policy), runner.WithObserver(obs), runner.WithCheck("smoke", smoke)).
		Execute(context.Background(), planOf(h1, h2), nil)
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(handled), st, err
}
