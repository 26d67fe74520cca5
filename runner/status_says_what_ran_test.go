package runner_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// The status says exactly what ran, whatever stopped the run: a lost
// checkpoint, fail-fast, a cancel or a failed check.

// The checkpoint that would record the last success fails: the store still
// says Running, so the run must not report success.
func TestLostFinalCheckpointFailsTheRun(t *testing.T) {
	p := plan1(t, c("a"))
	var saved *record.Status
	ck := runner.CheckpointFunc(func(ctx context.Context, s *record.Status) error {
		if cs, _ := s.Component(0, "a"); cs.Phase == record.Succeeded {
			return errors.New("disk full")
		}
		saved = s.DeepCopy()
		return nil
	})
	e := runner.New(runner.RunnerFunc(func(context.Context, runner.Task) error { return nil }), runner.WithCheckpointer(ck))
	st, err := e.Execute(context.Background(), p, nil)
	require.Error(t, err, "Execute must fail when a transition could not be recorded")
	assert.ErrorContains(t, err, "disk full")
	assert.Equal(t, record.Failed, st.Phase)
	assert.Equal(t, record.CodeCheckpointFailed, st.Code)
	assert.Equal(t, record.Failed, st.Hops[0].Phase, "hop phase")
	cs, _ := saved.Component(0, "a")
	assert.Equal(t, record.Running, cs.Phase, "the store kept the write-ahead Running, so a resume re-runs a")
}

// Two independent components fail by themselves at the same moment under
// FailFast: both are failures, neither is hidden as cancelled.
func TestFailFastKeepsConcurrentFailures(t *testing.T) {
	for range 5 {
		p := plan1(t, c("a"), c("b"))
		var wg sync.WaitGroup
		wg.Add(2)
		rn := runner.RunnerFunc(func(ctx context.Context, tk runner.Task) error {
			wg.Done()
			wg.Wait() // both are running
			return errors.New(tk.Component + " broke on its own")
		})
		st, err := runner.New(rn, runner.WithFailurePolicy(runner.FailFast)).Execute(context.Background(), p, nil)
		require.ErrorIs(t, err, runner.ErrRunFailed)
		for _, cs := range st.Hops[0].Components {
			assert.Equal(t, record.Failed, cs.Phase, "%s failed by itself before any cancellation", cs.Name)
			assert.Equal(t, cs.Name+" broke on its own", cs.Error)
			assert.ErrorContains(t, err, cs.Name+" broke on its own", "the returned error joins every failure")
		}
	}
}

// Cancelled while a passing pre-check runs: the hop's components never
// started, and say so.
func TestCancelDuringPassingPreCheck(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"), c("b", "a")), pre: []release.Check{{Name: "healthy", Required: true}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := runner.New(runner.RunnerFunc(func(context.Context, runner.Task) error { return nil }),
		runner.WithCheck("healthy", func(context.Context, runner.CheckTask) error { cancel(); return nil }))
	st, err := e.Execute(ctx, p, nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, record.Cancelled, st.Phase)
	assert.Equal(t, record.Cancelled, st.Hops[0].Phase)
	for _, cs := range st.Hops[0].Components {
		assert.Equal(t, record.Cancelled, cs.Phase, "%s phase", cs.Name)
		assert.Equal(t, record.CodeCancelled, cs.Code, "%s code", cs.Name)
		assert.Contains(t, cs.Reason, "not started: cancelled", "%s reason", cs.Name)
		assert.Zero(t, cs.Attempts, "%s attempts", cs.Name)
	}
}

// A required pre-check fails: the hop's components never started, and say why.
func TestFailedPreCheckExplainsUnstarted(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a")), pre: []release.Check{{Name: "healthy", Required: true}}})
	e := runner.New(runner.RunnerFunc(func(context.Context, runner.Task) error { return nil }),
		runner.WithCheck("healthy", func(context.Context, runner.CheckTask) error { return errors.New("node-3 NotReady") }))
	st, err := e.Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	cs, _ := st.Component(0, "a")
	assert.Equal(t, record.Cancelled, cs.Phase)
	assert.Equal(t, "not started: required pre-check healthy failed: node-3 NotReady", cs.Reason)
}

// The checkpoint of a retry's start fails: the first attempt's error stays
// in the status, and the retry is said not to have started.
func TestCheckpointFailsOnRetry(t *testing.T) {
	p := plan1(t, c("a").with(retries(3, time.Millisecond, 0)))
	calls := 0
	rn := runner.RunnerFunc(func(ctx context.Context, tk runner.Task) error {
		calls++
		return errors.New("etcd unreachable")
	})
	ck := runner.CheckpointFunc(func(ctx context.Context, s *record.Status) error {
		if cs, _ := s.Component(0, "a"); cs.Phase == record.Running && cs.Attempts == 2 {
			return errors.New("disk full")
		}
		return nil
	})
	st, err := runner.New(rn, runner.WithCheckpointer(ck), runner.WithJitter(0, 1)).Execute(context.Background(), p, nil)
	require.Error(t, err)
	cs, _ := st.Component(0, "a")
	assert.Equal(t, 1, calls, "the runner ran once")
	assert.Equal(t, 1, cs.Attempts, "attempts in the status")
	assert.Equal(t, record.Cancelled, cs.Phase)
	assert.Equal(t, record.CodeCheckpointFailed, cs.Code)
	assert.Equal(t, "retry not started: checkpoint failed", cs.Reason)
	assert.Equal(t, "etcd unreachable", cs.Error, "the first attempt's error is kept")
	assert.False(t, cs.StartedAt.IsZero(), "the first attempt started")
}
