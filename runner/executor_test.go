package runner_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// record returns the only record of component, failing the test otherwise.
func recordOf(t testing.TB, recs []runnertest.Record, component string) runnertest.Record {
	t.Helper()
	var found []runnertest.Record
	for _, r := range recs {
		if r.Component == component {
			found = append(found, r)
		}
	}
	require.Lenf(t, found, 1, "records of %s", component)
	return found[0]
}

func TestExecuteSucceeds(t *testing.T) {
	p := plan1(t, c("a"), c("b", "a"), c("c", "b"), c("d"))
	fake := runnertest.New()
	st, err := runner.New(fake, runner.WithClock(fakeClock())).Execute(context.Background(), p, nil)
	require.NoError(t, err, "Execute(chain) error")

	assert.Equal(t, record.Succeeded, st.Phase, "Status.Phase")
	assert.Equal(t, record.Progress{Done: 4, Total: 4}, st.Progress, "Status.Progress")
	assert.Equal(t, 1, st.Runs, "Status.Runs")
	assert.Equal(t, "v1.0", st.From, "Status.From")
	assert.Equal(t, "v2.0", st.To, "Status.To")
	assert.Empty(t, st.Code, "Status.Code")
	assert.Nil(t, st.LastFailure, "Status.LastFailure")
	assert.Equal(t, t0, st.StartedAt, "Status.StartedAt")
	assert.Equal(t, t0, st.FinishedAt, "Status.FinishedAt")
	require.Len(t, st.Hops, 1)
	assert.Equal(t, record.Succeeded, st.Hops[0].Phase, "hop phase")
	for _, cs := range st.Hops[0].Components {
		assert.Equal(t, record.Succeeded, cs.Phase, "%s phase", cs.Name)
		assert.Equal(t, 1, cs.Attempts, "%s attempts", cs.Name)
		assert.Equal(t, "v1.0.0", cs.FromVersion, "%s from", cs.Name)
		assert.Equal(t, "v1.1.0", cs.ToVersion, "%s to", cs.Name)
		assert.Equal(t, t0, cs.StartedAt, "%s started", cs.Name)
	}
	recs := fake.Records()
	assert.Len(t, recs, 4, "runner calls")
	assert.NoError(t, runnertest.CheckOrder(p.Hops[0].Graph, 0, recs), "CheckOrder")
	assert.NoError(t, runnertest.CheckSucceededOnce(0, recs), "CheckSucceededOnce")
}

// The Task carries the hop, the component's versions, the attempt and a
// logger.
func TestExecuteTask(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"))}, hop{g: graphOf(t, c("b"))})
	var mu sync.Mutex
	var tasks []runner.Task
	rn := runner.RunnerFunc(func(_ context.Context, task runner.Task) error {
		mu.Lock()
		defer mu.Unlock()
		tasks = append(tasks, task)
		return nil
	})
	_, err := runner.New(rn).Execute(context.Background(), p, nil)
	require.NoError(t, err)
	require.Len(t, tasks, 2)
	for i, task := range tasks {
		assert.Equal(t, i, task.HopIndex, "Task.HopIndex")
		assert.Same(t, p.Hops[i], task.Hop, "Task.Hop")
		assert.Equal(t, 1, task.Attempt, "Task.Attempt")
		assert.NotNil(t, task.Logger, "Task.Logger")
		require.NotNil(t, task.From, "Task.From")
		require.NotNil(t, task.To, "Task.To")
		assert.Equal(t, "v1.0.0", task.From.Version.Original(), "Task.From.Version")
		assert.Equal(t, "v1.1.0", task.To.Version.Original(), "Task.To.Version")
	}
	assert.Equal(t, []string{"a", "b"}, []string{tasks[0].Component, tasks[1].Component}, "components in hop order")
}

// Eager starts a component as soon as its dependencies succeeded, while an
// unrelated slow component of an earlier level still runs; Batch waits for
// the whole level.
func TestExecuteEagerVsBatch(t *testing.T) {
	tests := []struct {
		mode      runner.Mode
		wantEarly bool // "after" starts before "slow" ends
	}{
		{runner.Eager, true},
		{runner.Batch, false},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			p := plan1(t, c("slow"), c("fast"), c("after", "fast"))
			fake := runnertest.New()
			afterStarted := make(chan struct{})
			var once sync.Once
			fake.OnStart = func(task runner.Task) {
				switch task.Component {
				case "after":
					once.Do(func() { close(afterStarted) })
				case "slow":
					// Eager: hold "slow" until "after" started. Batch:
					// "after" must not start, so this waits 100ms, enough
					// for a scheduler that ignored the barrier to be caught.
					select {
					case <-afterStarted:
					case <-time.After(100 * time.Millisecond):
					}
				}
			}
			_, err := runner.New(fake, runner.WithMode(tt.mode)).Execute(context.Background(), p, nil)
			require.NoError(t, err, "Execute(%s)", tt.mode)
			recs := fake.Records()
			slow, after := recordOf(t, recs, "slow"), recordOf(t, recs, "after")
			early := after.Start < slow.End
			assert.Equal(t, tt.wantEarly, early, "%s: after started (seq %d) before slow ended (seq %d) = %v, want %v",
				tt.mode, after.Start, slow.End, early, tt.wantEarly)
			assert.NoError(t, runnertest.CheckOrder(p.Hops[0].Graph, 0, recs), "CheckOrder")
		})
	}
	// Batch on a graph where a level is wide: nothing of level N+1 starts
	// before every component of level N has ended.
	t.Run("batch barrier", func(t *testing.T) {
		p := plan1(t, c("a1"), c("a2"), c("a3"), c("b1", "a1"), c("b2", "a2"), c("c1", "b1"), c("c2", "b1", "b2"))
		fake := runnertest.New()
		for _, n := range []string{"a1", "a2", "a3", "b1", "b2"} {
			fake.Script(n, runnertest.Script{Delay: time.Duration(len(n)) * time.Millisecond})
		}
		_, err := runner.New(fake, runner.WithMode(runner.Batch)).Execute(context.Background(), p, nil)
		require.NoError(t, err)
		recs := fake.Records()
		g := p.Hops[0].Graph
		for _, r := range recs {
			i, _ := g.Index(r.Component)
			for _, o := range recs {
				j, _ := g.Index(o.Component)
				if g.Level(j) < g.Level(i) {
					assert.Greater(t, r.Start, o.End, "%s (level %d) started before %s (level %d) ended", r.Component, g.Level(i), o.Component, g.Level(j))
				}
			}
		}
	})
}

// gate returns an OnStart function that holds the first n matching
// attempts until all n run at once (or 10s pass): an executor that ran
// fewer of them at once would be caught by the peak it leaves.
func gate(n int, match func(string) bool) func(runner.Task) {
	var mu sync.Mutex
	started := 0
	full := make(chan struct{})
	return func(task runner.Task) {
		if !match(task.Component) {
			return
		}
		mu.Lock()
		started++
		if started == n {
			close(full)
		}
		mu.Unlock()
		select {
		case <-full:
		case <-time.After(10 * time.Second):
		}
	}
}

func all(string) bool { return true }

func TestExecuteMaxParallel(t *testing.T) {
	var nodes []comp
	for _, n := range []string{"c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09", "c10", "c11", "c12"} {
		nodes = append(nodes, c(n))
	}
	for _, limit := range []int{1, 3, 5} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			p := plan1(t, nodes...)
			fake := runnertest.New()
			for _, n := range nodes {
				fake.Script(n.name, runnertest.Script{Delay: time.Millisecond})
			}
			fake.OnStart = gate(limit, all)
			_, err := runner.New(fake, runner.WithMaxParallel(limit)).Execute(context.Background(), p, nil)
			require.NoError(t, err, "Execute(MaxParallel %d)", limit)
			recs := fake.Records()
			require.Len(t, recs, len(nodes), "runner calls")
			assert.NoError(t, runnertest.CheckParallelism(recs, limit, nil), "CheckParallelism(%d)", limit)
			assert.Equal(t, limit, fake.Peak(), "peak parallelism with MaxParallel %d", limit)
		})
	}
}

func TestExecuteGroupLimit(t *testing.T) {
	isWorker := func(name string) bool { return strings.HasPrefix(name, "w") }
	tests := []struct {
		name        string
		maxParallel int
		groupLimit  int
	}{
		{"workers two at a time", 0, 2},
		{"workers one at a time", 0, 1},
		{"group limit under a global limit", 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nodes []comp
			for _, n := range []string{"w1", "w2", "w3", "w4", "w5", "w6"} {
				nodes = append(nodes, c(n).with(group("workers")))
			}
			// Other components: ungrouped, and a group without a limit.
			nodes = append(nodes, c("o1"), c("o2"), c("g1").with(group("free")), c("g2").with(group("free")))
			p := plan1(t, nodes...)
			fake := runnertest.New()
			for _, n := range nodes {
				fake.Script(n.name, runnertest.Script{Delay: time.Millisecond})
			}
			fake.OnStart = gate(tt.groupLimit, isWorker)
			opts := []runner.Option{runner.WithGroupLimit("workers", tt.groupLimit), runner.WithMaxParallel(tt.maxParallel)}
			st, err := runner.New(fake, opts...).Execute(context.Background(), p, nil)
			require.NoError(t, err)
			assert.Equal(t, record.Progress{Done: 10, Total: 10}, st.Progress)
			recs := fake.Records()
			match := func(r runnertest.Record) bool { return isWorker(r.Component) }
			assert.NoError(t, runnertest.CheckParallelism(recs, tt.groupLimit, match), "workers at once")
			if tt.maxParallel > 0 {
				assert.NoError(t, runnertest.CheckParallelism(recs, tt.maxParallel, nil), "all at once")
			}
			peak := peakOf(recs, match)
			assert.Equal(t, tt.groupLimit, peak, "peak of workers at once, want the group limit")
		})
	}
}

// peakOf is the most matching records that overlapped.
func peakOf(recs []runnertest.Record, match func(runnertest.Record) bool) int {
	for n := 1; ; n++ {
		if runnertest.CheckParallelism(recs, n, match) == nil {
			return n
		}
	}
}

// deadlineRunner records each attempt's deadline and blocks until ctx is
// done, on the attempts listed in hang (all when nil).
type deadlineRunner struct {
	mu        sync.Mutex
	deadlines map[string]time.Time
	hang      func(runner.Task) bool
}

func (d *deadlineRunner) Run(ctx context.Context, t runner.Task) error {
	dl, ok := ctx.Deadline()
	d.mu.Lock()
	if d.deadlines == nil {
		d.deadlines = map[string]time.Time{}
	}
	if ok {
		d.deadlines[t.Component] = dl
	}
	d.mu.Unlock()
	if d.hang != nil && !d.hang(t) {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func TestExecuteTimeout(t *testing.T) {
	tests := []struct {
		name         string
		node         comp
		def          time.Duration
		wantDeadline time.Duration
	}{
		{"component timeout", c("a").with(timeout(time.Minute)), 0, time.Minute},
		{"default timeout", c("a"), 30 * time.Second, 30 * time.Second},
		{"component timeout wins over default", c("a").with(timeout(time.Minute)), 30 * time.Second, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := fakeClock()
			rn := &deadlineRunner{hang: func(t runner.Task) bool { return t.Component == "a" }}
			e := runner.New(rn, runner.WithClock(clock), runner.WithDefaultTimeout(tt.def))
			done := start(context.Background(), e, plan1(t, tt.node, c("b", "a"), c("other")), nil)
			require.True(t, clock.WaitForTimers(1, 10*time.Second), "the attempt's timeout timer never armed")
			// other's timer (a default timeout) goes once other returns:
			// until then two timers are pending, and advancing would fire
			// other's.
			require.Eventually(t, func() bool {
				rn.mu.Lock()
				_, a := rn.deadlines["a"]
				_, other := rn.deadlines["other"]
				rn.mu.Unlock()
				return a && (other || tt.def == 0) && clock.Pending() == 1
			}, 10*time.Second, time.Millisecond, "a running with its timer, other done with its own")
			clock.Advance(tt.wantDeadline - time.Nanosecond)
			require.Equal(t, 1, clock.Pending(), "the timeout fired %v early", time.Nanosecond)
			clock.Advance(time.Nanosecond)
			res := wait(t, done)

			require.ErrorIs(t, res.err, runner.ErrRunFailed)
			require.ErrorIs(t, res.err, context.DeadlineExceeded, "the runner's error reaches the caller")
			var ce *runner.ComponentError
			require.ErrorAs(t, res.err, &ce)
			assert.Equal(t, record.CodeComponentTimeout, ce.Code, "ComponentError.Code")
			a := compStatus(t, res.st, 0, "a")
			assert.Equal(t, record.Failed, a.Phase, "a phase")
			assert.Equal(t, record.CodeComponentTimeout, a.Code, "a code")
			assert.Contains(t, a.Error, "timed out after "+tt.wantDeadline.String(), "a error")
			assert.Equal(t, tt.wantDeadline, a.Duration.Duration, "a duration")
			assert.Equal(t, record.CodeDependencyFailed, compStatus(t, res.st, 0, "b").Code, "b code")
			assert.Equal(t, record.Succeeded, compStatus(t, res.st, 0, "other").Phase, "other (no timeout) phase")
			assert.Equal(t, t0.Add(tt.wantDeadline), rn.deadlines["a"], "deadline the runner saw")
			_, has := rn.deadlines["other"]
			assert.Equal(t, tt.def > 0, has, "other has a deadline only from a default timeout")
		})
	}
}

func TestExecutePanic(t *testing.T) {
	p := plan1(t, c("boom"), c("after", "boom"), c("other"))
	fake := runnertest.New().Script("boom", runnertest.Script{Panic: true})
	st, err := runner.New(fake, runner.WithDefaultRetries(releaseRetries(3))).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	var pe *runner.PanicError
	require.ErrorAs(t, err, &pe, "Execute error wraps the *PanicError")
	assert.Equal(t, "runnertest: scripted panic in boom", pe.Value, "PanicError.Value")

	boom := compStatus(t, st, 0, "boom")
	assert.Equal(t, record.Failed, boom.Phase, "boom phase")
	assert.Equal(t, record.CodePanic, boom.Code, "boom code")
	assert.Equal(t, 1, boom.Attempts, "a panic is not retried")
	assert.Contains(t, boom.Error, "scripted panic in boom", "boom error")
	assert.Contains(t, boom.Stack, "goroutine ", "boom stack")
	assert.Contains(t, boom.Stack, "runnertest.(*Runner)", "boom stack names the panicking runner")
	assert.Equal(t, record.Skipped, compStatus(t, st, 0, "after").Phase, "after phase")
	assert.Equal(t, record.Succeeded, compStatus(t, st, 0, "other").Phase, "other phase")
	require.NotNil(t, st.LastFailure)
	assert.Equal(t, record.CodePanic, st.LastFailure.Code, "LastFailure.Code")
	assert.Equal(t, record.CodePanic, st.Code, "Status.Code")
}

func TestExecuteSkip(t *testing.T) {
	p := plan1(t, c("current"), c("next", "current"))
	fake := runnertest.New().Script("current", runnertest.Script{Skip: "already at target"})
	st, err := runner.New(fake).Execute(context.Background(), p, nil)
	require.NoError(t, err, "a skipped component does not fail the run")
	assert.Equal(t, record.Succeeded, st.Phase)
	cur := compStatus(t, st, 0, "current")
	assert.Equal(t, record.Skipped, cur.Phase, "current phase")
	assert.Empty(t, cur.Code, "current code: a runner's skip has none")
	assert.Equal(t, "already at target", cur.Reason, "current reason")
	assert.Equal(t, record.Succeeded, compStatus(t, st, 0, "next").Phase, "next runs after a skipped dependency")
	assert.Equal(t, record.Progress{Done: 2, Total: 2}, st.Progress, "a skip counts as done")
	assert.NoError(t, runnertest.CheckOrder(p.Hops[0].Graph, 0, fake.Records()))

	err = runner.Skip("x")
	assert.ErrorIs(t, err, runner.ErrSkipped, "Skip(x) matches ErrSkipped")
	assert.Equal(t, "runner: skipped: x", err.Error())
}

func TestExecuteCallerCancel(t *testing.T) {
	t.Run("while running", func(t *testing.T) {
		p := planOf(hop{g: graphOf(t, c("a"), c("b"), c("c", "a"))}, hop{g: graphOf(t, c("later"))})
		fake := runnertest.New().Script("a", runnertest.Script{Hang: true}).Script("b", runnertest.Script{Hang: true})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var mu sync.Mutex
		started := 0
		fake.OnStart = func(runner.Task) {
			mu.Lock()
			defer mu.Unlock()
			if started++; started == 2 {
				cancel()
			}
		}
		res := wait(t, start(ctx, runner.New(fake), p, nil))
		require.ErrorIs(t, res.err, context.Canceled, "Execute error")
		assert.NotErrorIs(t, res.err, runner.ErrRunFailed, "a cancelled run is not a failed run")
		st := res.st
		assert.Equal(t, record.Cancelled, st.Phase, "Status.Phase")
		assert.Equal(t, record.CodeCancelled, st.Code, "Status.Code")
		assert.Equal(t, record.Cancelled, st.Hops[0].Phase, "hop 1 phase")
		assert.Equal(t, record.Cancelled, st.Hops[1].Phase, "hop 2 never started: Cancelled, not left Pending")
		for _, c := range st.Hops[1].Components {
			assert.Equal(t, record.Cancelled, c.Phase, "hop 2 %s phase", c.Name)
			assert.Equal(t, "not started: the run was cancelled", c.Reason, "hop 2 %s reason", c.Name)
			assert.Zero(t, c.Attempts, "hop 2 %s attempts", c.Name)
		}
		for _, n := range []string{"a", "b"} {
			cs := compStatus(t, st, 0, n)
			assert.Equal(t, record.Cancelled, cs.Phase, "%s phase", n)
			assert.Equal(t, record.CodeCancelled, cs.Code, "%s code", n)
			assert.Contains(t, cs.Reason, "the run was cancelled", "%s reason", n)
			assert.ErrorIs(t, recordOf(t, fake.Records(), n).Err, context.Canceled, "%s: the runner saw ctx done", n)
		}
		cc := compStatus(t, st, 0, "c")
		assert.Equal(t, record.Cancelled, cc.Phase, "c phase")
		assert.True(t, strings.HasPrefix(cc.Reason, "not started"), "c reason = %q, want not started", cc.Reason)
		assert.Len(t, fake.Records(), 2, "nothing new started")
	})
	t.Run("before start", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		fake := runnertest.New()
		st, err := runner.New(fake).Execute(ctx, plan1(t, c("a")), nil)
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, record.Cancelled, st.Phase)
		assert.Empty(t, fake.Records(), "runner calls")
	})
	t.Run("while waiting to retry", func(t *testing.T) {
		clock := fakeClock()
		fake := runnertest.New().Script("a", runnertest.Script{FailFirst: 1})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		e := runner.New(fake, runner.WithClock(clock), runner.WithDefaultRetries(releaseRetriesBackoff(3, time.Minute)))
		done := start(ctx, e, plan1(t, c("a")), nil)
		require.True(t, clock.WaitForTimers(1, 10*time.Second), "no backoff timer")
		cancel()
		res := wait(t, done)
		require.ErrorIs(t, res.err, context.Canceled)
		a := compStatus(t, res.st, 0, "a")
		assert.Equal(t, record.Cancelled, a.Phase, "a phase")
		assert.Contains(t, a.Reason, "waiting to retry", "a reason")
		assert.Equal(t, 1, a.Attempts, "a attempts")
		assert.Equal(t, 1, fake.Attempts("a"), "runner calls")
	})
	t.Run("during a check", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		check := func(ctx context.Context, _ runner.CheckTask) error {
			cancel()
			<-ctx.Done()
			return ctx.Err()
		}
		fake := runnertest.New()
		p := planOf(hop{g: graphOf(t, c("a")), pre: []release.Check{{Name: "slow", Required: true}}})
		res := wait(t, start(ctx, runner.New(fake, runner.WithCheck("slow", check)), p, nil))
		require.ErrorIs(t, res.err, context.Canceled)
		assert.Equal(t, record.Cancelled, res.st.Phase, "Status.Phase")
		assert.Equal(t, record.Cancelled, res.st.Hops[0].Phase, "hop phase")
		assert.Equal(t, "cancelled during pre-check slow: context canceled", res.st.Hops[0].Message, "hop message")
		assert.Equal(t, []record.CheckStatus{{Name: "slow", Stage: "pre", Required: true, Phase: record.Cancelled, Error: "context canceled"}},
			res.st.Hops[0].Checks, "a check interrupted by the caller did not fail")
		assert.Nil(t, res.st.LastFailure, "LastFailure")
		assert.NotErrorIs(t, res.err, runner.ErrRunFailed)
		assert.Empty(t, fake.Records(), "nothing ran")
	})
	t.Run("with a deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		fake := runnertest.New().Script("a", runnertest.Script{Hang: true})
		res := wait(t, start(ctx, runner.New(fake), plan1(t, c("a").with(timeout(time.Hour))), nil))
		require.ErrorIs(t, res.err, context.DeadlineExceeded)
		a := compStatus(t, res.st, 0, "a")
		assert.Equal(t, record.Cancelled, a.Phase, "the caller's deadline is a cancellation, not the component's timeout")
		assert.Equal(t, record.CodeCancelled, a.Code)
	})
}

func TestCodes(t *testing.T) {
	codes := record.Codes()
	want := []record.Code{record.CodeComponentFailed, record.CodeComponentTimeout, record.CodeDependencyFailed,
		record.CodeCheckFailed, record.CodePanic, record.CodeCancelled, record.CodeCheckpointFailed, record.CodeAbandoned,
		record.CodeWaitingForApproval, record.CodeUntilReached,
		record.CodeRollbackFailed, record.CodeIrreversible, record.CodeRollbackBlocked, record.CodeRollbackRequested}
	assert.ElementsMatch(t, want, codes, "Codes()")
	seen := map[record.Code]bool{}
	for _, c := range codes {
		assert.False(t, seen[c], "Codes() lists %s twice", c)
		seen[c] = true
		assert.Equal(t, strings.ToUpper(string(c)), string(c), "code %s is upper case", c)
	}
}

func TestModeAndPolicyString(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{runner.Eager.String(), "eager"},
		{runner.Batch.String(), "batch"},
		{runner.ContinueIndependent.String(), "continue-independent"},
		{runner.FailFast.String(), "fail-fast"},
		{runner.MaxFailures(1).String(), "fail-fast"},
		{runner.MaxFailures(3).String(), "max-failures(3)"},
		{runner.MaxFailures(0).String(), "continue-independent"},
		{runner.MaxFailures(-2).String(), "continue-independent"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.got)
	}
	assert.Equal(t, runner.FailFast, runner.MaxFailures(1), "MaxFailures(1) is FailFast")
	assert.Equal(t, runner.ContinueIndependent, runner.MaxFailures(-1), "MaxFailures(-1) is ContinueIndependent")
}

func TestErrorsMessages(t *testing.T) {
	base := errors.New("boom")
	ce := &runner.ComponentError{Hop: 1, Component: "etcd", Version: "v3.6.4", Attempt: 2, Code: record.CodeComponentFailed, Err: base}
	assert.Equal(t, "runner: hop 2: etcd v3.6.4 failed on attempt 2 (COMPONENT_FAILED): boom", ce.Error())
	assert.ErrorIs(t, ce, base, "ComponentError unwraps")
	ch := &runner.CheckError{Hop: 0, Check: "healthy", Stage: "pre", Err: base}
	assert.Equal(t, "runner: hop 1: required pre-check healthy failed: boom", ch.Error())
	assert.ErrorIs(t, ch, base, "CheckError unwraps")
	pe := &runner.PanicError{Value: 42}
	assert.Equal(t, "runner: panic: 42", pe.Error())
	perm := runner.Permanent(base)
	assert.True(t, runner.IsPermanent(perm), "IsPermanent(Permanent(err))")
	assert.True(t, runner.IsPermanent(errors.Join(errors.New("x"), perm)), "IsPermanent sees through joins")
	assert.False(t, runner.IsPermanent(base), "IsPermanent(plain error)")
	assert.ErrorIs(t, perm, base, "Permanent unwraps")
	assert.Equal(t, "boom", perm.Error(), "Permanent keeps the message")
	assert.NoError(t, runner.Permanent(nil), "Permanent(nil)")
}

// Execute may be called from several goroutines on different plans.
func TestExecuteConcurrentCalls(t *testing.T) {
	fake := runnertest.New()
	e := runner.New(fake, runner.WithMaxParallel(2))
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			names := []string{"p", "q", "r", "s"}
			n := names[i]
			_, errs[i] = e.Execute(context.Background(), plan1(t, c(n+"1"), c(n+"2", n+"1")), nil)
		})
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "Execute #%d", i)
	}
	recs := fake.Records()
	assert.Len(t, recs, 8)
	names := make([]string, len(recs))
	for i, r := range recs {
		names[i] = r.Component
	}
	slices.Sort(names)
	assert.Equal(t, []string{"p1", "p2", "q1", "q2", "r1", "r2", "s1", "s2"}, names)
}

// A runner that calls runtime.Goexit (t.FailNow in a test's runner, say)
// fails its attempt instead of hanging the run.
func TestExecuteRunnerGoexit(t *testing.T) {
	tests := []struct {
		name      string
		attempts  int
		wantPhase record.Phase
	}{
		{"no retry", 1, record.Failed},
		{"retried", 2, record.Succeeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			rn := runner.RunnerFunc(func(_ context.Context, task runner.Task) error {
				if task.Component == "a" && task.Attempt == 1 {
					runtime.Goexit()
				}
				return nil
			})
			res := wait(t, start(context.Background(), runner.New(rn, runner.WithMaxParallel(1)), plan1(t, c("a").with(retries(tt.attempts, 0, 0)), c("b", "a")), nil))
			a := compStatus(t, res.st, 0, "a")
			assert.Equal(t, tt.wantPhase, a.Phase, "a phase")
			assert.Equal(t, tt.attempts, a.Attempts, "a attempts")
			if tt.wantPhase == record.Failed {
				assert.Contains(t, a.Error, "runtime.Goexit", "a error")
				assert.Equal(t, record.Skipped, compStatus(t, res.st, 0, "b").Phase, "b phase")
				return
			}
			require.NoError(t, res.err)
			assert.Equal(t, record.Succeeded, compStatus(t, res.st, 0, "b").Phase, "b phase")
		})
	}
}

// A cancelled run starts nothing new even while outcomes keep the
// executor busy: here a slow Checkpointer keeps the coordinator working
// while fast components finish, so it never finds itself idle.
func TestExecuteCancelBusyHop(t *testing.T) {
	nodes := make([]comp, 100)
	for i := range nodes {
		nodes[i] = c(fmt.Sprintf("c%03d", i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := runnertest.New()
	var mu sync.Mutex
	started := 0
	fake.OnStart = func(runner.Task) {
		mu.Lock()
		defer mu.Unlock()
		if started++; started == 10 {
			cancel()
		}
	}
	slow := runner.CheckpointFunc(func(context.Context, *record.Status) error {
		time.Sleep(200 * time.Microsecond)
		return nil
	})
	e := runner.New(fake, runner.WithMaxParallel(4), runner.WithCheckpointer(slow))
	res := wait(t, start(ctx, e, plan1(t, nodes...), nil))
	require.ErrorIs(t, res.err, context.Canceled)
	assert.Equal(t, record.Cancelled, res.st.Phase)
	assert.Less(t, len(fake.Records()), 30, "attempts started; the cancel came at the 10th")
}

// A hop with nothing to upgrade (only checks) and a plan with no hops
// succeed.
func TestExecuteEmpty(t *testing.T) {
	ok := func(context.Context, runner.CheckTask) error { return nil }
	p := planOf(hop{g: graphOf(t), pre: []release.Check{{Name: "healthy", Required: true}}}, hop{g: graphOf(t, c("a"))})
	st, err := runner.New(runnertest.New(), runner.WithCheck("healthy", ok), runner.WithMode(runner.Batch)).Execute(context.Background(), p, nil)
	require.NoError(t, err)
	assert.Equal(t, record.Succeeded, st.Phase)
	assert.Equal(t, record.Succeeded, st.Hops[0].Phase, "empty hop")
	assert.Equal(t, record.Progress{Done: 1, Total: 1}, st.Progress)

	st, err = runner.New(runnertest.New()).Execute(context.Background(), planOf(), nil)
	require.NoError(t, err)
	assert.Equal(t, record.Succeeded, st.Phase, "a plan without hops")
	assert.Empty(t, st.Hops)
}

// The logger given to runners and checks carries hop, component (or
// check) and attempt.
func TestExecuteLogger(t *testing.T) {
	var logs syncBuffer
	rn := runner.RunnerFunc(func(_ context.Context, task runner.Task) error {
		task.Logger.Info("upgrading")
		return nil
	})
	check := func(_ context.Context, ct runner.CheckTask) error {
		ct.Logger.Info("checking")
		return nil
	}
	p := planOf(hop{g: graphOf(t, c("a")), pre: []release.Check{{Name: "healthy"}}})
	_, err := runner.New(rn, runner.WithLogger(textLogger(&logs)), runner.WithCheck("healthy", check)).Execute(context.Background(), p, nil)
	require.NoError(t, err)
	assert.Equal(t, `level=INFO msg=checking hop="v1.0 -> v2.0" check=healthy stage=pre
level=INFO msg=upgrading hop="v1.0 -> v2.0" component=a attempt=1
`, logs.String())
}
