package runner_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// ContinueIndependent: dependents of a failed component are Skipped with a
// reason naming it, independent branches finish.
func TestContinueIndependent(t *testing.T) {
	p := planOf(
		hop{g: graphOf(t, c("a"), c("b", "a"), c("c", "b"), c("d"), c("e", "d"), c("x", "a", "d"))},
		hop{g: graphOf(t, c("later"))},
	)
	fake := runnertest.New().Script("a", runnertest.Script{FailAlways: true})
	st, err := runner.New(fake).Execute(context.Background(), p, nil)

	require.ErrorIs(t, err, runner.ErrRunFailed)
	require.ErrorIs(t, err, runnertest.ErrScripted)
	var ce *runner.ComponentError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, runner.ComponentError{Hop: 0, Component: "a", Version: "v1.1.0", Attempt: 1, Code: record.CodeComponentFailed, Err: ce.Err}, *ce)

	want := map[string]record.Phase{"a": record.Failed, "b": record.Skipped, "c": record.Skipped, "d": record.Succeeded, "e": record.Succeeded, "x": record.Skipped}
	assert.Equal(t, want, phases(st, 0), "phases")
	for _, n := range []string{"b", "c", "x"} {
		cs := compStatus(t, st, 0, n)
		assert.Equal(t, record.CodeDependencyFailed, cs.Code, "%s code", n)
		assert.Equal(t, "dependency a failed", cs.Reason, "%s reason", n)
		assert.Zero(t, cs.Attempts, "%s attempts", n)
	}
	assert.Equal(t, record.Failed, st.Phase, "Status.Phase")
	assert.Equal(t, record.CodeComponentFailed, st.Code, "Status.Code")
	assert.Equal(t, record.Failed, st.Hops[0].Phase, "hop 1 phase")
	assert.Equal(t, record.CodeComponentFailed, st.Hops[0].Code, "hop 1 code")
	assert.True(t, strings.HasPrefix(st.Hops[0].Message, "component a failed: "), "hop 1 message = %q", st.Hops[0].Message)
	assert.Equal(t, record.Pending, st.Hops[1].Phase, "a hop after a failed hop does not start")
	assert.Equal(t, record.Progress{Done: 2, Total: 7}, st.Progress, "Status.Progress")
	require.NotNil(t, st.LastFailure)
	assert.Equal(t, record.Failure{Hop: 0, Component: "a", Version: "v1.1.0", Attempt: 1, Code: record.CodeComponentFailed,
		Error: "a attempt 1: runnertest: scripted failure", Time: st.LastFailure.Time}, *st.LastFailure)
	assert.Len(t, fake.Records(), 3, "runner calls: a, d, e")
}

func TestFailurePolicies(t *testing.T) {
	tests := []struct {
		policy runner.FailurePolicy
		want   map[string]record.Phase
	}{
		{runner.ContinueIndependent, map[string]record.Phase{"f1": record.Failed, "f2": record.Failed, "f3": record.Failed, "z": record.Succeeded}},
		{runner.MaxFailures(0), map[string]record.Phase{"f1": record.Failed, "f2": record.Failed, "f3": record.Failed, "z": record.Succeeded}},
		{runner.FailFast, map[string]record.Phase{"f1": record.Failed, "f2": record.Cancelled, "f3": record.Cancelled, "z": record.Cancelled}},
		{runner.MaxFailures(2), map[string]record.Phase{"f1": record.Failed, "f2": record.Failed, "f3": record.Cancelled, "z": record.Cancelled}},
		{runner.MaxFailures(3), map[string]record.Phase{"f1": record.Failed, "f2": record.Failed, "f3": record.Failed, "z": record.Cancelled}},
	}
	for _, tt := range tests {
		t.Run(tt.policy.String(), func(t *testing.T) {
			fake := runnertest.New()
			for _, n := range []string{"f1", "f2", "f3"} {
				fake.Script(n, runnertest.Script{FailAlways: true})
			}
			// One at a time, in name order: f1, f2, f3, z.
			e := runner.New(fake, runner.WithMaxParallel(1), runner.WithFailurePolicy(tt.policy))
			st, err := e.Execute(context.Background(), plan1(t, c("f1"), c("f2"), c("f3"), c("z")), nil)
			require.ErrorIs(t, err, runner.ErrRunFailed)
			assert.Equal(t, tt.want, phases(st, 0), "phases under %s", tt.policy)
			failed, calls := 0, len(fake.Records())
			for n, ph := range tt.want {
				switch ph {
				case record.Failed:
					failed++
				case record.Cancelled:
					cs := compStatus(t, st, 0, n)
					assert.Equal(t, record.CodeCancelled, cs.Code, "%s code", n)
					assert.Contains(t, cs.Reason, "not started: stopped by the "+tt.policy.String()+" policy", "%s reason", n)
				}
			}
			wantCalls := failed
			if tt.want["z"] == record.Succeeded {
				wantCalls++
			}
			assert.Equal(t, wantCalls, calls, "runner calls")
			var errs []*runner.ComponentError
			for _, e := range unwrapAll(err) {
				if ce, ok := e.(*runner.ComponentError); ok {
					errs = append(errs, ce)
				}
			}
			assert.Len(t, errs, failed, "component errors joined in the Execute error")
		})
	}
}

// unwrapAll flattens an error tree.
func unwrapAll(err error) []error {
	out := []error{err}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, unwrapAll(e)...)
		}
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			out = append(out, unwrapAll(e)...)
		}
	}
	return out
}

// FailFast cancels the running components through their ctx and starts
// nothing new, on this hop or the next.
func TestFailFastCancelsRunning(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a-fails"), c("b-hangs"), c("c-waits"))}, hop{g: graphOf(t, c("later"))})
	fake := runnertest.New().
		Script("a-fails", runnertest.Script{FailAlways: true}).
		Script("b-hangs", runnertest.Script{Hang: true})
	bStarted := make(chan struct{})
	var once sync.Once
	fake.OnStart = func(task runner.Task) {
		switch task.Component {
		case "b-hangs":
			once.Do(func() { close(bStarted) })
		case "a-fails":
			<-bStarted // fail only once b runs
		}
	}
	e := runner.New(fake, runner.WithMaxParallel(2), runner.WithFailurePolicy(runner.FailFast))
	res := wait(t, start(context.Background(), e, p, nil))
	require.ErrorIs(t, res.err, runner.ErrRunFailed)
	st := res.st

	assert.Equal(t, map[string]record.Phase{"a-fails": record.Failed, "b-hangs": record.Cancelled, "c-waits": record.Cancelled}, phases(st, 0))
	b := compStatus(t, st, 0, "b-hangs")
	assert.Equal(t, record.CodeCancelled, b.Code, "b code")
	assert.Equal(t, "cancelled: stopped by the fail-fast policy after a-fails failed", b.Reason, "b reason")
	assert.ErrorIs(t, recordOf(t, fake.Records(), "b-hangs").Err, context.Canceled, "b's runner saw its ctx cancelled")
	cw := compStatus(t, st, 0, "c-waits")
	assert.Equal(t, "not started: stopped by the fail-fast policy after a-fails failed", cw.Reason, "c reason")
	assert.Zero(t, cw.Attempts, "c attempts")
	assert.Len(t, fake.Records(), 2, "runner calls: c-waits and later never start")
	assert.Equal(t, record.Pending, st.Hops[1].Phase, "hop 2 phase")
	assert.Equal(t, record.Failed, st.Phase, "Status.Phase")
	assert.Equal(t, record.CodeComponentFailed, st.Code, "Status.Code")
	assert.False(t, errors.Is(res.err, context.Canceled), "the caller did not cancel: the error is the failure")
}

// A fail-fast stop also ends a backoff wait: the waiting component is
// Cancelled, not retried.
func TestFailFastStopsBackoff(t *testing.T) {
	clock := fakeClock()
	fake := runnertest.New().
		Script("a", runnertest.Script{FailAlways: true, Permanent: true}).
		Script("b", runnertest.Script{FailFirst: 1})
	aGo := make(chan struct{})
	fake.OnStart = func(task runner.Task) {
		if task.Component == "a" {
			<-aGo
		}
	}
	e := runner.New(fake, runner.WithClock(clock), runner.WithFailurePolicy(runner.FailFast))
	done := start(context.Background(), e, plan1(t, c("a"), c("b").with(retries(3, time.Hour, 0))), nil)
	require.True(t, clock.WaitForTimers(1, 10*time.Second), "b never waited to retry")
	close(aGo)
	res := wait(t, done)
	b := compStatus(t, res.st, 0, "b")
	assert.Equal(t, record.Cancelled, b.Phase, "b phase")
	assert.Contains(t, b.Reason, "cancelled while waiting to retry: stopped by the fail-fast policy after a failed", "b reason")
	assert.Equal(t, 1, fake.Attempts("b"), "b runner calls")
}
