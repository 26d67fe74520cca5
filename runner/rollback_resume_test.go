package runner_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// blockingUndoer is undoer whose rollback of block closes started, then
// waits for its ctx to be done and returns its error, as a runner
// stopped mid-rollback does.
type blockingUndoer struct {
	*undoer
	block   string
	started chan struct{}
}

func (b *blockingUndoer) Rollback(ctx context.Context, t runner.Task) error {
	if t.Component == b.block {
		close(b.started)
		<-ctx.Done()
		return fmt.Errorf("rb %s: %w", t.Component, ctx.Err())
	}
	return b.undoer.Rollback(ctx, t)
}

// chain is base <- db <- api <- web, web failing: rolled back one at a
// time (MaxParallel 1), web first, base last.
func chain(t *testing.T, db ...func(*comp)) *runner.Plan {
	n := c("db", "base")
	for _, f := range db {
		f(&n)
	}
	return plan1(t, c("base"), n, c("api", "db"), c("web", "api"))
}

// uninterrupted is the status and error of p's run with policy when web
// fails and every rollback succeeds at once: what a stopped run, once
// resumed, must end with.
func uninterrupted(t *testing.T, p *runner.Plan, policy runner.FailurePolicy, fail string) (*record.Status, error) {
	t.Helper()
	st, err := runner.New(newUndoer(fail), runner.WithFailurePolicy(policy), runner.WithMaxParallel(1), runner.WithClock(fakeClock())).
		Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	require.Equal(t, record.RolledBack, st.Phase, "the uninterrupted run: %v", err)
	return st, err
}

// sameEnd checks that got (a resumed run) ended as want (the run never
// stopped): the same status but for Runs, the same error message, and
// the error matches what want's does.
func sameEnd(t *testing.T, want *record.Status, wantErr error, got *record.Status, gotErr error) {
	t.Helper()
	w, g := want.DeepCopy(), got.DeepCopy()
	w.Runs, g.Runs = 0, 0
	assert.Equal(t, w, g, "resumed status (-uninterrupted +resumed)")
	require.Error(t, gotErr)
	assert.Equal(t, wantErr.Error(), gotErr.Error(), "resumed error")
	assert.ErrorIs(t, gotErr, runner.ErrRunFailed)
	assert.NotErrorIs(t, gotErr, runner.ErrRollbackFailed)
	ce, ok := errors.AsType[*runner.ComponentError](gotErr)
	if assert.True(t, ok, "the resumed error holds the upgrade's *ComponentError: %v", gotErr) {
		wce, _ := errors.AsType[*runner.ComponentError](wantErr)
		assert.Equal(t, []any{wce.Hop, wce.Component, wce.Version, wce.Attempt, wce.Code, wce.Err.Error()},
			[]any{ce.Hop, ce.Component, ce.Version, ce.Attempt, ce.Code, ce.Err.Error()}, "ComponentError (hop, component, version, attempt, code, error)")
	}
}

// interrupt runs p (chain) with web failing and cancels ctx, with cause,
// once api's rollback has started. It returns Execute's status, the
// checkpoint taken as api's rollback started (what a crash then would
// leave) and Execute's error.
func interrupt(t *testing.T, p *runner.Plan, cause error) (st, crashed *record.Status, err error) {
	t.Helper()
	u := &blockingUndoer{undoer: newUndoer("web"), block: "api", started: make(chan struct{})}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var cps snapshots
	ch := start(ctx, runner.New(u, runner.WithFailurePolicy(runner.Rollback), runner.WithMaxParallel(1),
		runner.WithCheckpointer(&cps), runner.WithClock(fakeClock())), p, nil)
	select {
	case <-u.started:
	case <-time.After(20 * time.Second):
		t.Fatal("api's rollback did not start within 20s")
	}
	// The coordinator waits for api's Rollback: no checkpoint is being
	// written, the last one is the write-ahead record of api's rollback.
	crashed = cps.last()
	cancel(cause)
	res := wait(t, ch)
	return res.st, crashed, res.err
}

// Defect 3: a rollback interrupted by a cancel says so. While it runs,
// the run is RollingBack in the journal; once stopped, the run is
// Cancelled (CANCELLED) with a message saying a resume finishes the
// rollback, the hop stays RollingBack, and the error matches
// ErrRollbackFailed, ctx's error and cause, ErrRunFailed and the
// upgrade's *ComponentError. The component whose rollback was
// interrupted keeps no error of the interruption.
func TestRollbackInterruptedByCancel(t *testing.T) {
	p := chain(t)
	cause := errors.New("operator stop")
	st, crashed, err := interrupt(t, p, cause)

	require.NotNil(t, crashed)
	assert.Equal(t, record.RollingBack, crashed.Phase, "the run's phase in the journal during the rollback")
	assert.Equal(t, "rolling back after: web: scripted failure", crashed.Message, "the run's message during the rollback")

	require.NotNil(t, st)
	assert.ErrorIs(t, err, runner.ErrRollbackFailed, "a rollback that did not finish")
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, cause, "context.Cause")
	assert.ErrorIs(t, err, runner.ErrRunFailed)
	ce, ok := errors.AsType[*runner.ComponentError](err)
	require.True(t, ok, "*ComponentError in %v", err)
	assert.Equal(t, "web", ce.Component)
	rbe, ok := errors.AsType[*runner.RollbackError](err)
	require.True(t, ok, "*RollbackError in %v", err)
	assert.Equal(t, []string{"hop v1.0 -> v2.0: interrupted (operator stop): rolled back: web@v1.0.0; still to roll back: api@v1.1.0, base@v1.1.0, db@v1.1.0"}, rbe.Hops)

	assert.Equal(t, record.Cancelled, st.Phase, "run phase")
	assert.Equal(t, record.CodeCancelled, st.Code, "run code")
	assert.Equal(t, "rollback interrupted (operator stop): resume the run to finish rolling back after: web: scripted failure", st.Message)
	assert.Equal(t, record.RollingBack, st.Hops[0].Phase, "hop phase")
	assert.Equal(t, map[string]record.Phase{"web": record.RolledBack, "api": record.RollingBack, "db": record.Succeeded, "base": record.Succeeded}, phases(st, 0))
	api := compStatus(t, st, 0, "api")
	assert.Empty(t, api.Error, "api did not fail: its rollback was interrupted")
	assert.Equal(t, "rollback interrupted: rb api: context canceled", api.Reason)
	assert.Equal(t, "web: scripted failure", compStatus(t, st, 0, "web").Error, "web keeps its upgrade's failure")
	require.NotNil(t, st.LastFailure)
	assert.Equal(t, "web", st.LastFailure.Component)
}

// failCheckpointAt runs p (chain) with web failing and a Checkpointer
// that fails to record the write-ahead of name's rollback: the rollback
// stops there, the run Failed (CHECKPOINT_FAILED), its hop RollingBack,
// its error matching ErrRollbackFailed. It returns the status.
func failCheckpointAt(t *testing.T, p *runner.Plan, name string) *record.Status {
	t.Helper()
	errStore := errors.New("store unavailable")
	cps := snapshots{fail: func(_ int, s *record.Status) error {
		if c, ok := s.Component(0, name); ok && c.Phase == record.RollingBack {
			return errStore
		}
		return nil
	}}
	u := newUndoer("web")
	st, err := runner.New(u, runner.WithFailurePolicy(runner.Rollback), runner.WithMaxParallel(1), runner.WithCheckpointer(&cps), runner.WithClock(fakeClock())).
		Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, errStore)
	assert.ErrorIs(t, err, runner.ErrRollbackFailed, "a rollback that did not finish")
	assert.ErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, record.Failed, st.Phase)
	assert.Equal(t, record.CodeCheckpointFailed, st.Code)
	assert.Equal(t, record.RollingBack, st.Hops[0].Phase)
	assert.Zero(t, u.undone[name], "%s's rollback is not called without its record", name)
	return st
}

// Defect 4: a rollback resumed after a cancel, a crash or a failed
// checkpoint ends with the status and the error of the run that was
// never stopped: the failure that caused it (LastFailure, the message,
// the *ComponentError) is kept, and api, whose rollback was interrupted
// then succeeded, has no error.
func TestRollbackResumedEndsAsUninterrupted(t *testing.T) {
	p := chain(t)
	want, wantErr := uninterrupted(t, p, runner.Rollback, "web")
	require.Equal(t, "rolled back after: web: scripted failure", want.Message)
	cancelled, crashed, _ := interrupt(t, p, errors.New("operator stop"))
	checkpointFailed := failCheckpointAt(t, p, "api")
	for _, tc := range []struct {
		name string
		prev *record.Status
	}{
		{"after a cancel", cancelled},
		{"after a crash", crashed},
		{"after a failed checkpoint", checkpointFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NotNil(t, tc.prev)
			second := newUndoer()
			st, err := runner.New(second, runner.WithFailurePolicy(runner.Rollback), runner.WithClock(fakeClock())).
				Execute(context.Background(), p, tc.prev)
			sameEnd(t, want, wantErr, st, err)
			assert.Equal(t, 2, st.Runs)
			assert.Equal(t, map[string]int{"api": 1, "db": 1, "base": 1}, second.undone, "web was rolled back before; the rest once")
			assert.Zero(t, len(second.ran), "nothing runs forward")
			api := compStatus(t, st, 0, "api")
			assert.Empty(t, api.Error)
			assert.Equal(t, "rolled back to v1.0.0", api.Reason)
		})
	}
}

// Defect 5: a status RollbackFailed resumes: the rollbacks that failed
// are retried (what succeeded is not rolled back again), and so is what
// they blocked; a rollback that succeeds then ends as the run never
// stopped would have. An irreversible component stays: the resume does
// nothing. The error matches ErrRunFailed (and ErrRollbackFailed when
// the rollback still did not finish).
func TestRollbackFailedResumeRetries(t *testing.T) {
	irr := func(n *comp) { *n = n.with(irreversible("schema migration")) }
	tests := []struct {
		name         string
		db           []func(*comp)
		failRollback string // whose rollback fails in the first run
		again        bool   // and fails again on resume
		undone       map[string]int
		phases       map[string]record.Phase // after the resume, when it still fails
	}{
		{name: "transient failure of db", failRollback: "db", undone: map[string]int{"db": 1, "base": 1}},
		{name: "transient failure of web, the failed component", failRollback: "web", undone: map[string]int{"web": 1, "api": 1, "db": 1, "base": 1}},
		{name: "db fails again", failRollback: "db", again: true, undone: map[string]int{},
			phases: map[string]record.Phase{"web": record.RolledBack, "api": record.RolledBack, "db": record.RollbackFailed, "base": record.Succeeded}},
		{name: "db irreversible", db: []func(*comp){irr}, undone: map[string]int{},
			phases: map[string]record.Phase{"web": record.RolledBack, "api": record.RolledBack, "db": record.RollbackFailed, "base": record.Succeeded}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := chain(t, tc.db...)
			first := newUndoer("web")
			if tc.failRollback != "" {
				first.failRollback[tc.failRollback] = true
			}
			st1, err := runner.New(first, runner.WithFailurePolicy(runner.Rollback), runner.WithMaxParallel(1), runner.WithClock(fakeClock())).
				Execute(context.Background(), p, nil)
			require.ErrorIs(t, err, runner.ErrRollbackFailed)
			require.ErrorIs(t, err, runner.ErrRunFailed)
			require.Equal(t, record.RollbackFailed, st1.Phase)

			second := newUndoer()
			if tc.again {
				second.failRollback[tc.failRollback] = true
			}
			st, err := runner.New(second, runner.WithFailurePolicy(runner.Rollback), runner.WithMaxParallel(1), runner.WithClock(fakeClock())).
				Execute(context.Background(), p, st1)
			assert.Zero(t, len(second.ran), "nothing runs forward")
			assert.Equal(t, tc.undone, second.undone, "rolled back on resume")
			if tc.phases == nil {
				want, wantErr := uninterrupted(t, p, runner.Rollback, "web")
				sameEnd(t, want, wantErr, st, err)
				return
			}
			assert.Equal(t, record.RollbackFailed, st.Phase)
			assert.Equal(t, tc.phases, phases(st, 0))
			assert.Equal(t, record.CodeRollbackBlocked, compStatus(t, st, 0, "base").Code)
			assert.ErrorIs(t, err, runner.ErrRunFailed, "the upgrade failed")
			assert.ErrorIs(t, err, runner.ErrRollbackFailed)
			ce, ok := errors.AsType[*runner.ComponentError](err)
			require.True(t, ok, "*ComponentError in %v", err)
			assert.Equal(t, "web", ce.Component)
			if tc.again {
				assert.Equal(t, 1, second.start["db"], "db's rollback was retried")
				return
			}
			assert.Zero(t, second.seq, "an irreversible stop is final: no rollback runs")
			w, g := st1.DeepCopy(), st.DeepCopy()
			w.Runs, g.Runs = 0, 0
			assert.Equal(t, w, g, "the resume changed nothing but Runs")
		})
	}
}

// With RollbackRun, a retried rollback of the failed hop that succeeds
// goes on to the completed hops before it, as the run never stopped
// would have.
func TestRollbackRunFailedResumeRetries(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"))}, hop{g: graphOf(t, c("a"), c("b", "a"))})
	undoer := func(failRollback ...string) *hopUndoer {
		u := &hopUndoer{ran: map[string]int{}, undone: map[string]int{}, start: map[string]int{}, end: map[string]int{},
			fail: hopKey(1, "b"), failRollback: map[string]bool{}}
		for _, k := range failRollback {
			u.failRollback[k] = true
		}
		return u
	}
	executor := func(u *hopUndoer) *runner.Executor {
		return runner.New(u, runner.WithFailurePolicy(runner.RollbackRun), runner.WithMaxParallel(1), runner.WithClock(fakeClock()))
	}
	want, wantErr := executor(undoer()).Execute(context.Background(), p, nil)
	require.Equal(t, record.RolledBack, want.Phase, "the uninterrupted run: %v", wantErr)
	require.Equal(t, []record.Phase{record.RolledBack, record.RolledBack}, []record.Phase{want.Hops[0].Phase, want.Hops[1].Phase})

	u := undoer(hopKey(1, "a"))
	e := executor(u)
	st1, err := e.Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRollbackFailed)
	require.Equal(t, []record.Phase{record.Succeeded, record.RollbackFailed}, []record.Phase{st1.Hops[0].Phase, st1.Hops[1].Phase})

	u.failRollback = map[string]bool{}
	u.undone = map[string]int{}
	st, err := e.Execute(context.Background(), p, st1)
	assert.Equal(t, map[string]int{"1/a": 1, "0/a": 1}, u.undone, "hop 2's a retried, then hop 1 rolled back; hop 2's b not again")
	w, g := want.DeepCopy(), st.DeepCopy()
	w.Runs, g.Runs = 0, 0
	assert.Equal(t, w, g, "resumed status (-uninterrupted +resumed)")
	require.Error(t, err)
	assert.Equal(t, wantErr.Error(), err.Error())
	assert.NotErrorIs(t, err, runner.ErrRollbackFailed)
}

// A rollback resumed with an executor whose runner cannot roll back is
// refused at plan time under the recorded policy (Rollback); under a
// policy given that does not roll back, so that Execute did not check the
// ability, it fails the rollbacks it would retry, naming the missing
// ability, instead of crashing the program.
func TestRollbackResumedWithoutRollbacker(t *testing.T) {
	p := chain(t)
	first := newUndoer("web")
	first.failRollback["db"] = true
	st1, err := runner.New(first, runner.WithFailurePolicy(runner.Rollback)).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRollbackFailed)

	plain := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
	st, err := runner.New(plain).Execute(context.Background(), p, st1)
	require.ErrorIs(t, err, runner.ErrInvalidPlan, "the recorded policy rolls back")
	require.ErrorIs(t, err, runner.ErrCannotRollBack)
	require.Nil(t, st)

	st, err = runner.New(plain, runner.WithFailurePolicy(runner.ContinueIndependent)).Execute(context.Background(), p, st1)
	assert.ErrorIs(t, err, runner.ErrRollbackFailed)
	assert.ErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, record.RollbackFailed, st.Phase)
	db := compStatus(t, st, 0, "db")
	assert.Equal(t, record.RollbackFailed, db.Phase)
	assert.Equal(t, "runner: cannot roll back db: the runner has no Rollback method (runner.Rollbacker)", db.Error)
}

// Property: on random DAGs with a random failing component and random
// irreversible components, a rollback stopped at any of its checkpoints
// (a crash there), or one whose random rollbacks failed once (resumed
// from RollbackFailed), ends, once resumed, with the status and the error
// of the run never stopped; and a component recorded RolledBack is never
// rolled back again. (MaxParallel 1: the forward run, which decides what
// is rolled back, is then the same in every run.)
func TestRollbackResumeProperty(t *testing.T) {
	for seed := range uint64(300) {
		rnd := rand.New(rand.NewPCG(seed, 41))
		names, p := randomRollbackPlan(t, rnd, 10)
		n := len(names)
		fail := names[rnd.IntN(n)]
		policy := runner.Rollback
		if rnd.IntN(2) == 0 {
			policy = runner.RollbackRun
		}
		executor := func(u *undoer, more ...runner.Option) *runner.Executor {
			return runner.New(u, append([]runner.Option{runner.WithFailurePolicy(policy), runner.WithMaxParallel(1), runner.WithClock(fakeClock())}, more...)...)
		}
		want, wantErr := executor(newUndoer(fail)).Execute(context.Background(), p, nil)
		require.ErrorIs(t, wantErr, runner.ErrRunFailed, "seed %d", seed)
		end := func(what string, prev *record.Status) {
			t.Helper()
			second := newUndoer()
			got, err := executor(second).Execute(context.Background(), p, prev)
			w, g := want.DeepCopy(), got.DeepCopy()
			w.Runs, g.Runs = 0, 0
			require.Equal(t, w, g, "seed %d, %s: resumed status (-uninterrupted +resumed)", seed, what)
			require.Error(t, err)
			require.Equal(t, wantErr.Error(), err.Error(), "seed %d, %s: resumed error", seed, what)
			require.Equal(t, errors.Is(wantErr, runner.ErrRollbackFailed), errors.Is(err, runner.ErrRollbackFailed), "seed %d, %s: ErrRollbackFailed", seed, what)
			for _, cs := range prev.Hops[0].Components {
				if cs.Phase == record.RolledBack {
					require.Zero(t, second.undone[cs.Name]+second.ran[cs.Name], "seed %d, %s: %s was RolledBack", seed, what, cs.Name)
				}
			}
		}

		var cps snapshots
		_, err := executor(newUndoer(fail), runner.WithCheckpointer(&cps)).Execute(context.Background(), p, nil)
		require.Equal(t, wantErr.Error(), err.Error(), "seed %d: a Checkpointer changes nothing", seed)
		var during []*record.Status
		for _, s := range cps.list() {
			if s.Phase == record.RollingBack {
				during = append(during, s)
			}
		}
		require.NotEmpty(t, during, "seed %d: the journal records the run RollingBack", seed)
		k := rnd.IntN(len(during))
		end(fmt.Sprintf("crash at rollback checkpoint %d of %d", k+1, len(during)), during[k])

		u := newUndoer(fail)
		for _, name := range names {
			if rnd.IntN(4) == 0 {
				u.failRollback[name] = true
			}
		}
		if first, _ := executor(u).Execute(context.Background(), p, nil); first.Phase != record.RolledBack {
			// Some rollback failed (a RolledBack status is final).
			end(fmt.Sprintf("resumed %s", first.Phase), first)
		}
	}
}

// The failure policy is recorded in the status: a run crashed in the
// middle of a RollbackRun rollback, resumed without WithFailurePolicy,
// rolls back the whole run, as the policy it started with says; a resume
// that gives a policy uses it (and records it).
func TestPolicyRecorded(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"))}, hop{g: graphOf(t, c("a"), c("b", "a"))})
	crash := func(t *testing.T) *record.Status {
		var cps snapshots
		var crashed *record.Status
		u := newUndoer("b")
		u.onRollback = func(name string) {
			if name == "a" && crashed == nil {
				crashed = cps.last() // hop 2's b is rolled back; its a is next
			}
		}
		_, err := runner.New(u, runner.WithFailurePolicy(runner.RollbackRun), runner.WithCheckpointer(&cps)).Execute(context.Background(), p, nil)
		require.ErrorIs(t, err, runner.ErrRunFailed)
		require.NotNil(t, crashed)
		require.Equal(t, "rollback-run", crashed.FailurePolicy)
		require.Equal(t, record.RollingBack, crashed.Hops[1].Phase)
		require.Equal(t, record.Succeeded, crashed.Hops[0].Phase)
		return crashed
	}
	for _, tc := range []struct {
		name   string
		opts   []runner.Option
		hops   []record.Phase
		policy string
	}{
		{"no policy given: the recorded one", nil, []record.Phase{record.RolledBack, record.RolledBack}, "rollback-run"},
		{"the recorded one given", []runner.Option{runner.WithFailurePolicy(runner.RollbackRun)}, []record.Phase{record.RolledBack, record.RolledBack}, "rollback-run"},
		{"another given: it applies", []runner.Option{runner.WithFailurePolicy(runner.Rollback)}, []record.Phase{record.Succeeded, record.RolledBack}, "rollback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUndoer()
			st, err := runner.New(u, tc.opts...).Execute(context.Background(), p, crash(t))
			require.ErrorIs(t, err, runner.ErrRunFailed)
			assert.Equal(t, record.RolledBack, st.Phase, st.Message)
			assert.Equal(t, tc.hops, []record.Phase{st.Hops[0].Phase, st.Hops[1].Phase})
			assert.Equal(t, tc.policy, st.FailurePolicy)
		})
	}

	t.Run("recorded, parsed back", func(t *testing.T) {
		for _, pol := range []runner.FailurePolicy{runner.ContinueIndependent, runner.FailFast, runner.MaxFailures(3), runner.Rollback, runner.RollbackRun} {
			st, err := runner.New(newUndoer(), runner.WithFailurePolicy(pol)).Execute(context.Background(), p, nil)
			require.NoError(t, err)
			want := pol.String()
			if pol == runner.ContinueIndependent {
				want = "" // the default is not written
			}
			assert.Equal(t, want, st.FailurePolicy)
			st.Phase = record.Failed // resumable
			_, err = runner.New(newUndoer()).Execute(context.Background(), p, st)
			assert.NoError(t, err, "resume of a status recording %s", pol)
		}
	})
	t.Run("unknown recorded policy", func(t *testing.T) {
		st := crash(t)
		st.FailurePolicy = "roll-forward"
		_, err := runner.New(newUndoer()).Execute(context.Background(), p, st)
		require.ErrorIs(t, err, runner.ErrPlanMismatch)
		assert.ErrorContains(t, err, `the status records failure policy "roll-forward", which this hopdag does not know`)
	})
}
