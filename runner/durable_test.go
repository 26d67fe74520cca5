package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
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

// replica is a ChangeCheckpointer that keeps what a journaling store
// would: the header of every checkpoint and only the component records it
// is told changed. After each checkpoint its copy must equal the status.
type replica struct {
	t     *testing.T
	delay time.Duration
	fail  func(n int, s *record.Status) error

	mu       sync.Mutex
	copy     *record.Status
	calls    int
	records  int // component records written
	perCall  []int
	failures int
}

func (r *replica) Checkpoint(context.Context, *record.Status) error {
	r.t.Errorf("Checkpoint called on a ChangeCheckpointer, want CheckpointChanges")
	return nil
}

func (r *replica) CheckpointChanges(_ context.Context, s *record.Status, changed []record.Ref) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.delay > 0 {
		time.Sleep(r.delay)
	}
	if r.fail != nil {
		if err := r.fail(r.calls, s); err != nil {
			r.failures++
			return err
		}
	}
	next := s.DeepCopy()
	if r.copy != nil {
		// Components not listed keep the replica's record.
		listed := map[record.Ref]bool{}
		for _, ref := range changed {
			listed[ref] = true
		}
		for h := range next.Hops {
			for i := range next.Hops[h].Components {
				if !listed[record.Ref{Hop: h, Component: i}] {
					next.Hops[h].Components[i] = r.copy.Hops[h].Components[i]
				}
			}
		}
	} else if want := total(s); len(changed) != want {
		r.t.Errorf("first checkpoint lists %d components, want all %d", len(changed), want)
	}
	r.copy = next
	r.records += len(changed)
	r.perCall = append(r.perCall, len(changed))
	if a, b := mustJSON(r.t, next), mustJSON(r.t, s); a != b {
		r.t.Errorf("checkpoint %d: the records written do not add up to the status:\nreplica %s\nstatus  %s", r.calls, a, b)
	}
	return nil
}

func (r *replica) last() *record.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.copy.DeepCopy()
}

func total(s *record.Status) int {
	n := 0
	for _, h := range s.Hops {
		n += len(h.Components)
	}
	return n
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// Every way a run goes, the component records Execute names as changed
// are enough to rebuild the status from the previous checkpoint.
func TestCheckpointChangesAddUp(t *testing.T) {
	nodes := []comp{c("a"), c("b", "a"), c("c", "b"), c("d").with(retries(3, 0, 0)), c("e", "d"), c("f"), c("g", "f")}
	tests := []struct {
		name    string
		scripts map[string]runnertest.Script
		opts    []runner.Option
		cancel  bool
	}{
		{name: "success"},
		{name: "retries and a failure", scripts: map[string]runnertest.Script{"d": {FailFirst: 2}, "f": {FailAlways: true}}},
		{name: "fail-fast", scripts: map[string]runnertest.Script{"a": {FailAlways: true}, "f": {Hang: true}},
			opts: []runner.Option{runner.WithFailurePolicy(runner.FailFast)}},
		{name: "panic", scripts: map[string]runnertest.Script{"b": {Panic: true}}},
		{name: "batch, limited", opts: []runner.Option{runner.WithMode(runner.Batch), runner.WithMaxParallel(2)}},
		{name: "cancelled", scripts: map[string]runnertest.Script{"c": {Hang: true}}, cancel: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := runnertest.New()
			for n, s := range tt.scripts {
				fake.Script(n, s)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancel {
				fake.OnStart = func(task runner.Task) {
					if task.Component == "c" {
						go cancel()
					}
				}
			}
			rep := &replica{t: t}
			p := planOf(hop{g: graphOf(t, nodes...)}, hop{g: graphOf(t, nodes...)})
			st, _ := runner.New(fake, append(tt.opts, runner.WithCheckpointer(rep))...).Execute(ctx, p, nil)
			require.NotNil(t, st)
			assert.Equal(t, mustJSON(t, st), mustJSON(t, rep.last()), "the last checkpoint is the final status")
			if st.Phase == record.Succeeded {
				return
			}
			// Resume from it: the records still add up.
			rep2 := &replica{t: t}
			st2, err := runner.New(runnertest.New(), runner.WithCheckpointer(rep2)).Execute(t.Context(), p, rep.last())
			require.NoError(t, err)
			assert.Equal(t, mustJSON(t, st2), mustJSON(t, rep2.last()))
		})
	}
}

// Transitions that arrive while a checkpoint is being written go into the
// next one together: 200 components at 2 ms a checkpoint take far fewer
// than the 400 checkpoints of one per transition, and write each
// component's record about twice (Running, Succeeded), not the whole run
// every time.
func TestCheckpointGroupCommit(t *testing.T) {
	const n = 200
	nodes := make([]comp, n)
	for i := range nodes {
		nodes[i] = c(fmt.Sprintf("c%03d", i))
	}
	rep := &replica{t: t, delay: 2 * time.Millisecond}
	_, err := runner.New(runnertest.New(), runner.WithCheckpointer(rep), runner.WithMaxParallel(64)).
		Execute(t.Context(), plan1(t, nodes...), nil)
	require.NoError(t, err)
	assert.Less(t, rep.calls, n/4, "checkpoints of %d components with MaxParallel 64", n)
	// The first checkpoint lists them all; then Running and Succeeded.
	assert.LessOrEqual(t, rep.records, n+2*n, "component records written")
}

// FailFast: the 200 skipped dependents are recorded in one checkpoint,
// not one each (TestFailFastCancelsSiblingsFirst shows the siblings are
// cancelled before that checkpoint).
func TestFailFastSkipsInOneCheckpoint(t *testing.T) {
	nodes := []comp{c("root"), c("sibling")}
	for i := range 200 {
		nodes = append(nodes, c(fmt.Sprintf("dep%03d", i), "root"))
	}
	fake := runnertest.New().Script("root", runnertest.Script{FailAlways: true, Delay: 5 * time.Millisecond}).
		Script("sibling", runnertest.Script{Hang: true})
	rep := &replica{t: t, delay: time.Millisecond}
	st, err := runner.New(fake, runner.WithCheckpointer(rep), runner.WithFailurePolicy(runner.FailFast)).
		Execute(t.Context(), plan1(t, nodes...), nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, record.Cancelled, compStatus(t, st, 0, "sibling").Phase)
	for i := range 200 {
		require.Equal(t, record.Skipped, compStatus(t, st, 0, fmt.Sprintf("dep%03d", i)).Phase)
	}
	// The round that records root's failure records its 200 skipped
	// dependents with it: one checkpoint lists at least 201 records.
	most := 0
	for i, k := range rep.perCall {
		if i > 0 {
			most = max(most, k)
		}
	}
	assert.GreaterOrEqual(t, most, 201, "largest checkpoint after the first: %d records, want root and its 200 dependents in one", most)
	assert.Less(t, rep.calls, 12, "checkpoints of the run")
}

// A failed checkpoint halts the run at once: the running attempt sees its
// ctx done and a component in a one-hour backoff stops waiting, with the
// fake clock never advanced. Then the final checkpoint is attempted and,
// the store answering again, records the final status.
func TestCheckpointFailureHaltsAtOnce(t *testing.T) {
	errDisk := errors.New("disk full")
	clock := fakeClock()
	fake := runnertest.New().Script("flaky", runnertest.Script{FailAlways: true}).Script("slow", runnertest.Script{Hang: true})
	failed := false
	rep := &replica{t: t}
	rep.fail = func(_ int, s *record.Status) error {
		// The checkpoint of flaky's failed first attempt fails (flaky is
		// then in its backoff, slow running); the store answers again
		// after that.
		if cs, _ := s.Component(0, "flaky"); cs.Error != "" && !failed {
			failed = true
			return errDisk
		}
		return nil
	}
	p := plan1(t, c("flaky").with(retries(5, time.Hour, 0)), c("slow"), c("after", "flaky"))
	res := wait(t, start(t.Context(), runner.New(fake, runner.WithClock(clock), runner.WithCheckpointer(rep)), p, nil))
	require.ErrorIs(t, res.err, errDisk)
	assert.Equal(t, record.CodeCheckpointFailed, res.st.Code)
	assert.Equal(t, record.Cancelled, compStatus(t, res.st, 0, "slow").Phase, "the running attempt")
	assert.Equal(t, record.Cancelled, compStatus(t, res.st, 0, "flaky").Phase, "the component in its backoff")
	assert.Equal(t, mustJSON(t, res.st), mustJSON(t, rep.last()), "the final checkpoint recorded the final status")
}

// After a failed checkpoint the final one still records what finished
// meanwhile: a success is not lost once the store answers again.
func TestFinalCheckpointRecordsSuccesses(t *testing.T) {
	errNet := errors.New("store unreachable")
	release := make(chan struct{})
	fake := runnertest.New()
	fake.OnStart = func(task runner.Task) {
		if task.Component == "b" {
			<-release // b finishes after the failed checkpoint
		}
	}
	var failedOnce atomic.Bool
	rep := &replica{t: t}
	rep.fail = func(_ int, s *record.Status) error {
		// The checkpoint after b's start fails once; b then finishes.
		if cs, _ := s.Component(0, "a"); cs.Phase == record.Succeeded && rep.copy != nil {
			if b, _ := rep.copy.Component(0, "b"); b.Phase == record.Running && failedOnce.CompareAndSwap(false, true) {
				close(release)
				return errNet
			}
		}
		return nil
	}
	st, err := runner.New(fake, runner.WithCheckpointer(rep)).Execute(t.Context(), plan1(t, c("a"), c("b"), c("c", "a")), nil)
	require.ErrorIs(t, err, errNet)
	// b finished after the failed checkpoint: the final one records it;
	// c's start was in the failed one, so c never ran.
	assert.Equal(t, record.Succeeded, compStatus(t, rep.last(), 0, "b").Phase, "b in the last checkpoint")
	assert.Equal(t, record.Succeeded, compStatus(t, rep.last(), 0, "a").Phase, "a in the last checkpoint")
	c := compStatus(t, rep.last(), 0, "c")
	assert.Equal(t, record.Cancelled, c.Phase)
	assert.Equal(t, record.CodeCheckpointFailed, c.Code)
	assert.Zero(t, c.Attempts, "c never ran")
	assert.Equal(t, mustJSON(t, st), mustJSON(t, rep.last()), "the final checkpoint is the final status")
	assert.Equal(t, record.CodeCheckpointFailed, rep.last().Code)
}

// Execute's error matches every part that applies, whatever came first,
// in a fixed order.
func TestExecuteErrorContract(t *testing.T) {
	errDisk := errors.New("disk full")
	t.Run("checkpoint failure keeps the component failures", func(t *testing.T) {
		fake := runnertest.New().Script("a", runnertest.Script{FailAlways: true})
		cp := runner.CheckpointFunc(func(_ context.Context, s *record.Status) error {
			if cs, _ := s.Component(0, "a"); cs.Phase == record.Failed {
				return errDisk
			}
			return nil
		})
		_, err := runner.New(fake, runner.WithCheckpointer(cp)).Execute(t.Context(), plan1(t, c("a"), c("b")), nil)
		assert.ErrorIs(t, err, runner.ErrRunFailed)
		assert.ErrorIs(t, err, errDisk)
		var ce *runner.ComponentError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "a", ce.Component)
	})
	t.Run("cancel after a failure", func(t *testing.T) {
		cause := errors.New("lease lost")
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		fake := runnertest.New().Script("a", runnertest.Script{FailAlways: true}).Script("b", runnertest.Script{Hang: true})
		fake.OnStart = func(task runner.Task) {
			if task.Component == "b" {
				go func() { time.Sleep(5 * time.Millisecond); cancel(cause) }()
			}
		}
		_, err := runner.New(fake).Execute(ctx, plan1(t, c("a"), c("b")), nil)
		assert.ErrorIs(t, err, runner.ErrRunFailed)
		assert.ErrorIs(t, err, context.Canceled, "ctx.Err()")
		assert.ErrorIs(t, err, cause, "context.Cause(ctx)")
		var ce *runner.ComponentError
		assert.ErrorAs(t, err, &ce)
	})
	t.Run("order is hop then name", func(t *testing.T) {
		var nodes []comp
		fake := runnertest.New()
		for i := range 8 {
			name := fmt.Sprintf("c%d", 7-i)
			nodes = append(nodes, c(name))
			fake.Script(name, runnertest.Script{FailAlways: true, Delay: time.Duration(i%3) * time.Millisecond})
		}
		p := plan1(t, nodes...)
		seen := map[string]bool{}
		for range 20 {
			_, err := runner.New(fake).Execute(t.Context(), p, nil)
			require.Error(t, err)
			seen[err.Error()] = true
		}
		assert.Len(t, seen, 1, "distinct error strings of one plan: %v", seen)
		for msg := range seen {
			for i := 1; i < 8; i++ {
				a, b := fmt.Sprintf("c%d ", i-1), fmt.Sprintf("c%d ", i)
				assert.Less(t, indexOf(msg, a), indexOf(msg, b), "%s before %s in %q", a, b, msg)
			}
		}
	})
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// A component in a one-hour backoff holds no slot: with MaxParallel(1)
// and a group limit of 1, the independent components run meanwhile, with
// the clock never advanced.
func TestBackoffHoldsNoSlot(t *testing.T) {
	for _, opt := range []struct {
		name string
		opts []runner.Option
	}{
		{"MaxParallel", []runner.Option{runner.WithMaxParallel(1)}},
		{"group limit", []runner.Option{runner.WithGroupLimit("g", 1)}},
	} {
		t.Run(opt.name, func(t *testing.T) {
			clock := fakeClock()
			var mu sync.Mutex
			var ran []string
			fake := runnertest.New().Script("flaky", runnertest.Script{FailFirst: 1})
			fake.OnStart = func(task runner.Task) {
				mu.Lock()
				ran = append(ran, fmt.Sprint(task.Component, "#", task.Attempt))
				mu.Unlock()
			}
			flaky := func(cv *release.ComponentVersion) { retries(2, time.Hour, 0)(cv); group("g")(cv) }
			p := plan1(t, c("flaky").with(flaky), c("other").with(group("g")))
			res := start(t.Context(), runner.New(fake, append(opt.opts, runner.WithClock(clock))...), p, nil)
			// other runs while flaky waits out its hour.
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(ran) == 2
			}, 5*time.Second, time.Millisecond, "other did not run during flaky's backoff")
			require.True(t, clock.WaitForTimers(1, 5*time.Second))
			clock.Advance(time.Hour)
			r := wait(t, res)
			require.NoError(t, r.err)
			mu.Lock()
			defer mu.Unlock()
			assert.ElementsMatch(t, []string{"flaky#1", "other#1", "flaky#2"}, ran)
		})
	}
}

func TestOptionsNil(t *testing.T) {
	p := plan1(t, c("a"), c("b", "a"))
	t.Run("nil logger and clock", func(t *testing.T) {
		st, err := runner.New(runnertest.New(), runner.WithLogger(nil), runner.WithClock(nil)).Execute(t.Context(), p, nil)
		require.NoError(t, err)
		assert.Equal(t, record.Succeeded, st.Phase)
	})
	t.Run("New(nil)", func(t *testing.T) {
		st, err := runner.New(nil).Execute(t.Context(), p, nil)
		require.ErrorIs(t, err, runner.ErrInvalidPlan)
		assert.Contains(t, err.Error(), "runner.New(nil)")
		assert.Nil(t, st)
	})
	t.Run("WithCheck(name, nil)", func(t *testing.T) {
		err := runner.New(runnertest.New(), runner.WithCheck("ready", nil)).Validate(p)
		require.ErrorIs(t, err, runner.ErrInvalidPlan)
		assert.Contains(t, err.Error(), `WithCheck("ready", nil)`)
	})
	t.Run("group limit 0 is unlimited", func(t *testing.T) {
		var running, most atomic.Int64
		fake := runnertest.New()
		fake.OnStart = func(runner.Task) {
			n := running.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(10 * time.Millisecond)
			running.Add(-1)
		}
		var nodes []comp
		for i := range 4 {
			nodes = append(nodes, c(fmt.Sprint("w", i)).with(group("workers")))
		}
		_, err := runner.New(fake, runner.WithGroupLimit("workers", 0)).Execute(t.Context(), plan1(t, nodes...), nil)
		require.NoError(t, err)
		assert.Equal(t, int64(4), most.Load(), "most workers at once with WithGroupLimit(workers, 0), want all 4 as with WithMaxParallel(0)")
	})
	_ = slog.Default
}

// A panicking Checkpointer is a checkpoint failure: the run stops, and no
// worker is left behind. The panic comes while b runs in a worker (a's
// success is the first checkpoint after b started), so the worker must be
// released by the halt, not merely never started.
func TestCheckpointerPanicReleasesWorkers(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	started := make(chan struct{})
	var panicked, bStopped atomic.Bool
	cp := runner.CheckpointFunc(func(_ context.Context, s *record.Status) error {
		select {
		case <-started:
			if !panicked.Swap(true) {
				panic("checkpointer bug")
			}
		default:
		}
		return nil
	})
	run := runner.RunnerFunc(func(ctx context.Context, task runner.Task) error {
		switch task.Component {
		case "a":
			<-started
		case "b":
			close(started)
			<-ctx.Done()
			bStopped.Store(true)
			return ctx.Err()
		}
		return nil
	})
	st, err := runner.New(run, runner.WithCheckpointer(cp), runner.WithObserver(runner.ObserverFunc(func(runner.Event) { panic("observer bug") }))).
		Execute(t.Context(), plan1(t, c("a"), c("b"), c("c", "a")), nil)
	var pe *runner.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "checkpointer bug", pe.Value)
	assert.Equal(t, record.CodeCheckpointFailed, st.Code)
	assert.True(t, panicked.Load(), "the checkpointer panicked while b ran")
	assert.True(t, bStopped.Load(), "b, running when the checkpointer panicked, saw its ctx end before Execute returned")
	for _, cs := range st.Hops[0].Components {
		if cs.Name == "c" {
			assert.NotEqual(t, record.Succeeded, cs.Phase, "c started after the checkpoint failure")
		}
	}
}

// A resumed run that succeeds does not keep the earlier run's failure.
func TestResumeClearsLastFailure(t *testing.T) {
	p := plan1(t, c("a"), c("b", "a"))
	fake := runnertest.New().Script("a", runnertest.Script{FailFirst: 1})
	st, err := runner.New(fake).Execute(t.Context(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	require.NotNil(t, st.LastFailure)
	st, err = runner.New(fake).Execute(t.Context(), p, st)
	require.NoError(t, err)
	assert.Equal(t, record.Succeeded, st.Phase)
	assert.Nil(t, st.LastFailure, "LastFailure of a run that succeeded on resume")
}

// A runaway error message (a command that prints a megabyte to stderr, a
// wrapped error chain gone wild) is recorded cut to record.MaxRecorded,
// head and tail kept, in the component's status and the run's last
// failure, so that no record outgrows a store's value limit.
func TestHugeErrorIsCut(t *testing.T) {
	huge := errors.New("HEAD " + strings.Repeat("x", 1<<20) + " TAIL")
	s, err := runner.New(runner.RunnerFunc(func(context.Context, runner.Task) error { return runner.Permanent(huge) })).
		Execute(t.Context(), plan1(t, c("big")), nil)
	require.Error(t, err)
	got := s.Hops[0].Components[0].Error
	assert.LessOrEqual(t, len(got), record.MaxRecorded)
	assert.True(t, strings.HasPrefix(got, "HEAD ") && strings.HasSuffix(got, " TAIL"), "head and tail kept")
	assert.Contains(t, got, "bytes cut")
	require.NotNil(t, s.LastFailure)
	assert.Equal(t, got, s.LastFailure.Error)
	assert.ErrorIs(t, err, huge, "Execute's error still carries the whole error")
}
