package runner_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// The rollback walks the scheduler in reverse: these tests check what it
// shares with the upgrade (limits, retries, events, a runner that calls
// runtime.Goexit) and where it keeps its own rule (a failed checkpoint
// lets the rollbacks in flight finish).

// parallelUndoer fails the forward run of bad and counts the rollbacks
// running at once, in all and in the group of the components in group,
// each rollback lasting hold.
type parallelUndoer struct {
	mu             sync.Mutex
	hold           time.Duration
	group          map[string]bool
	running, inGrp int
	maxAll, maxGrp int
	undone         int
}

func (u *parallelUndoer) Run(_ context.Context, t runner.Task) error {
	if t.Component == "bad" {
		return runner.Permanent(errors.New("bad: scripted failure"))
	}
	return nil
}

func (u *parallelUndoer) Rollback(_ context.Context, t runner.Task) error {
	u.mu.Lock()
	u.running++
	u.maxAll = max(u.maxAll, u.running)
	if u.group[t.Component] {
		u.inGrp++
		u.maxGrp = max(u.maxGrp, u.inGrp)
	}
	u.mu.Unlock()
	time.Sleep(u.hold)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.running--
	if u.group[t.Component] {
		u.inGrp--
	}
	u.undone++
	return nil
}

// The rollback runs within WithMaxParallel and WithGroupLimit, as the
// upgrade does: eight workers, all ready to roll back at once once bad
// (which depends on them) is rolled back.
func TestRollbackLimits(t *testing.T) {
	tests := []struct {
		name           string
		opts           []runner.Option
		maxAll, maxGrp int // 0: unbounded
	}{
		{name: "MaxParallel 3", opts: []runner.Option{runner.WithMaxParallel(3)}, maxAll: 3},
		{name: "group limit 2", opts: []runner.Option{runner.WithGroupLimit("workers", 2)}, maxGrp: 2},
		{name: "MaxParallel 3, group limit 2", opts: []runner.Option{runner.WithMaxParallel(3), runner.WithGroupLimit("workers", 2)}, maxAll: 3, maxGrp: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []comp
			var names []string
			u := &parallelUndoer{hold: 5 * time.Millisecond, group: map[string]bool{}}
			for k := range 8 {
				name := fmt.Sprintf("w%d", k)
				names = append(names, name)
				nodes = append(nodes, c(name).with(group("workers")))
				u.group[name] = true
			}
			nodes = append(nodes, c("bad", names...))
			p := plan1(t, nodes...)
			opts := append([]runner.Option{runner.WithFailurePolicy(runner.Rollback)}, tc.opts...)
			st, err := runner.New(u, opts...).Execute(context.Background(), p, nil)
			require.ErrorIs(t, err, runner.ErrRunFailed)
			require.Equal(t, record.RolledBack, st.Phase, st.Message)
			assert.Equal(t, 9, u.undone, "rollbacks")
			if tc.maxAll > 0 {
				assert.LessOrEqual(t, u.maxAll, tc.maxAll, "rollbacks at once")
			}
			if tc.maxGrp > 0 {
				assert.LessOrEqual(t, u.maxGrp, tc.maxGrp, "rollbacks of group workers at once")
			}
		})
	}
}

// flakyUndoer fails the forward run of bad, and the first failFirst
// rollbacks of a (every one when failFirst < 0), with a Permanent error
// when permanent. It records the Tasks of a's rollbacks.
type flakyUndoer struct {
	mu        sync.Mutex
	failFirst int
	permanent bool
	tasks     []runner.Task
}

func (u *flakyUndoer) Run(_ context.Context, t runner.Task) error {
	if t.Component == "bad" {
		return runner.Permanent(errors.New("bad: scripted failure"))
	}
	return nil
}

func (u *flakyUndoer) Rollback(_ context.Context, t runner.Task) error {
	if t.Component != "a" {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.tasks = append(u.tasks, t)
	if n := len(u.tasks); u.failFirst < 0 || n <= u.failFirst {
		err := fmt.Errorf("a: rollback attempt %d failed", n)
		if u.permanent {
			return runner.Permanent(err)
		}
		return err
	}
	return nil
}

func (u *flakyUndoer) calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.tasks)
}

// A failed Rollback is tried again as the component's Retries say, after
// the same exponential backoff as an upgrade's attempt (on a fake clock:
// each retry starts only once its backoff has passed), with
// ComponentRetrying (code ROLLBACK_FAILED); a Permanent error is not
// retried; when every attempt fails the component is RollbackFailed
// with the last attempt's error.
func TestRollbackRetries(t *testing.T) {
	tests := []struct {
		name      string
		failFirst int
		permanent bool
		backoffs  []time.Duration
		phase     record.Phase
		err       string // a's Error at the end
	}{
		{name: "transient", failFirst: 2, backoffs: []time.Duration{10 * time.Second, 20 * time.Second}, phase: record.RolledBack},
		{name: "every attempt fails", failFirst: -1, backoffs: []time.Duration{10 * time.Second, 20 * time.Second}, phase: record.RollbackFailed,
			err: "a: rollback attempt 3 failed"},
		{name: "permanent", failFirst: -1, permanent: true, phase: record.RollbackFailed, err: "a: rollback attempt 1 failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := fakeClock()
			rec := &recorder{}
			u := &flakyUndoer{failFirst: tc.failFirst, permanent: tc.permanent}
			p := plan1(t, c("a").with(retries(3, 10*time.Second, 0)), c("bad", "a"))
			e := runner.New(u, runner.WithFailurePolicy(runner.Rollback), runner.WithClock(clock), runner.WithJitter(0, 1), runner.WithObserver(rec))
			done := start(context.Background(), e, p, nil)
			for k, wait := range tc.backoffs {
				require.True(t, clock.WaitForTimers(1, 10*time.Second), "retry %d: no backoff timer", k+1)
				require.Equal(t, k+1, u.calls(), "rollbacks of a before retry %d", k+1)
				clock.Advance(wait - time.Millisecond)
				require.Equal(t, 1, clock.Pending(), "retry %d: backoff ended before %v", k+1, wait)
				clock.Advance(time.Millisecond)
			}
			res := wait(t, done)
			require.ErrorIs(t, res.err, runner.ErrRunFailed)
			a := compStatus(t, res.st, 0, "a")
			assert.Equal(t, tc.phase, a.Phase, "a's phase (reason %q)", a.Reason)
			assert.Equal(t, tc.err, a.Error, "a's error")
			assert.Equal(t, tc.phase == record.RollbackFailed, errors.Is(res.err, runner.ErrRollbackFailed), "error %v matches ErrRollbackFailed", res.err)

			wantCalls := len(tc.backoffs) + 1
			var attempts []int
			for _, task := range u.tasks {
				attempts = append(attempts, task.Attempt)
				assert.Equal(t, "rollback", task.Step, "Task.Step of a rollback")
			}
			want := make([]int, wantCalls)
			for k := range want {
				want[k] = k + 1
			}
			assert.Equal(t, want, attempts, "Task.Attempt of each rollback of a")
			assert.Equal(t, tc.backoffs, backoffs(rec.all()), "backoffs: doubled")
			var rollingBack []int
			for _, ev := range rec.all() {
				switch {
				case ev.Type == runner.ComponentRetrying:
					assert.Equal(t, record.CodeRollbackFailed, ev.Code, "ComponentRetrying's code")
					assert.Equal(t, "a", ev.Component)
					assert.EqualError(t, ev.Err, fmt.Sprintf("a: rollback attempt %d failed", ev.Attempt))
				case ev.Type == runner.ComponentRollingBack && ev.Component == "a":
					rollingBack = append(rollingBack, ev.Attempt)
				}
			}
			assert.Equal(t, want, rollingBack, "ComponentRollingBack of a, by attempt")
		})
	}
}

// ctxUndoer is undoer whose Rollback first calls before with its ctx.
type ctxUndoer struct {
	*undoer
	before func(ctx context.Context, name string)
}

func (u *ctxUndoer) Rollback(ctx context.Context, t runner.Task) error {
	u.before(ctx, t.Component)
	return u.undoer.Rollback(ctx, t)
}

// A checkpoint that fails during the rollback starts no more rollbacks,
// and lets those in flight finish (one cut short would leave its
// component between versions): z's Rollback, running when the write-ahead
// of x's fails, sees its ctx live and ends RolledBack; x is never rolled
// back, and the hop stays RollingBack, to resume.
func TestRollbackCheckpointFailureLetsRollbacksFinish(t *testing.T) {
	p := plan1(t, c("x"), c("y", "x"), c("z"), c("bad", "y", "z"))
	failed := make(chan struct{})
	var once sync.Once
	errStore := errors.New("store unavailable")
	cps := snapshots{fail: func(_ int, s *record.Status) error {
		if c, ok := s.Component(0, "x"); ok && c.Phase == record.RollingBack {
			once.Do(func() { close(failed) })
			return errStore
		}
		return nil
	}}
	var zCtxErr error
	u := &ctxUndoer{undoer: newUndoer("bad"), before: func(ctx context.Context, name string) {
		if name != "z" {
			return
		}
		select {
		case <-failed:
		case <-time.After(20 * time.Second):
			t.Error("the checkpoint of x's rollback did not fail within 20s")
		}
		time.Sleep(10 * time.Millisecond) // time for a cancel, if the halt sent one, to arrive
		zCtxErr = ctx.Err()
	}}
	st, err := runner.New(u, runner.WithFailurePolicy(runner.Rollback), runner.WithCheckpointer(&cps), runner.WithMaxParallel(2)).
		Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, errStore)
	assert.ErrorIs(t, err, runner.ErrRollbackFailed, "a rollback that did not finish")
	assert.Equal(t, record.Failed, st.Phase)
	assert.Equal(t, record.CodeCheckpointFailed, st.Code)
	assert.Equal(t, record.RollingBack, st.Hops[0].Phase)
	assert.NoError(t, zCtxErr, "z's ctx while the checkpoint failed")
	assert.Equal(t, map[string]record.Phase{"bad": record.RolledBack, "y": record.RolledBack, "z": record.RolledBack, "x": record.RollingBack}, phases(st, 0))
	assert.Zero(t, u.undone["x"], "x's rollback is not called without its record")
}

// A Rollback that calls runtime.Goexit (t.FailNow in a test's runner)
// fails that component's rollback; the walk does not wait for it forever.
func TestRollbackGoexit(t *testing.T) {
	p := plan1(t, c("a"), c("bad", "a"))
	u := newUndoer("bad")
	u.onRollback = func(name string) {
		if name == "a" {
			runtime.Goexit()
		}
	}
	res := wait(t, start(context.Background(), runner.New(u, runner.WithFailurePolicy(runner.Rollback)), p, nil))
	require.ErrorIs(t, res.err, runner.ErrRollbackFailed)
	a := compStatus(t, res.st, 0, "a")
	assert.Equal(t, record.RollbackFailed, a.Phase)
	assert.Equal(t, "runner: the runner called runtime.Goexit", a.Error)
	assert.Equal(t, record.RolledBack, compStatus(t, res.st, 0, "bad").Phase)
}

// A resumed rollback whose first checkpoint fails rolls nothing back
// and changes no component's record: the run is Failed
// (CHECKPOINT_FAILED), the hop still RollingBack, and what was to roll
// back is still to roll back.
func TestRollbackResumeCheckpointFails(t *testing.T) {
	p := chain(t)
	cancelled, _, _ := interrupt(t, p, errors.New("operator stop"))
	require.NotNil(t, cancelled)
	require.Equal(t, "rollback interrupted: rb api: context canceled", compStatus(t, cancelled, 0, "api").Reason)
	errStore := errors.New("store unavailable")
	cps := snapshots{fail: func(int, *record.Status) error { return errStore }}
	second := newUndoer()
	st, err := runner.New(second, runner.WithCheckpointer(&cps), runner.WithClock(fakeClock())).Execute(context.Background(), p, cancelled)
	require.ErrorIs(t, err, errStore)
	assert.ErrorIs(t, err, runner.ErrRollbackFailed)
	assert.Zero(t, second.seq, "no rollback without its record")
	assert.Equal(t, record.Failed, st.Phase)
	assert.Equal(t, record.CodeCheckpointFailed, st.Code)
	assert.Equal(t, record.RollingBack, st.Hops[0].Phase)
	assert.Equal(t, cancelled.Hops[0].Components, st.Hops[0].Components, "component records (-before +after)")
	rbe, ok := errors.AsType[*runner.RollbackError](err)
	require.True(t, ok, "*RollbackError in %v", err)
	assert.Equal(t, []string{"hop v1.0 -> v2.0: interrupted (checkpoint failed): rolled back: web@v1.0.0; still to roll back: api@v1.1.0, base@v1.1.0, db@v1.1.0"}, rbe.Hops)
}
