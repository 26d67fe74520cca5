package runner_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// phasesOfHops is the phase of each hop of st.
func phasesOfHops(st *record.Status) []record.Phase {
	var out []record.Phase
	for _, h := range st.Hops {
		out = append(out, h.Phase)
	}
	return out
}

func newHopUndoer(fail string) *hopUndoer {
	return &hopUndoer{ran: map[string]int{}, undone: map[string]int{}, start: map[string]int{}, end: map[string]int{}, fail: fail, failRollback: map[string]bool{}}
}

// A run whose failed hop was rolled back by the Rollback policy is
// RolledBack, but the hops before it stay completed: the system runs the
// release between them, not the one the run started from. Revert is how
// an upgrade is undone on request (a fleet's abort with rollback Moved),
// so it must accept such a status and roll the completed hops back too;
// "rolled back already" is not true of the run, only of its last hop.
func TestRevertAfterHopRollback(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"), c("b", "a"))}, hop{g: graphOf(t, c("a"), c("b", "a"))})
	st, err := runner.New(newHopUndoer("1/b"), runner.WithFailurePolicy(runner.Rollback)).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	require.Equal(t, record.RolledBack, st.Phase)
	require.Equal(t, []record.Phase{record.Succeeded, record.RolledBack}, phasesOfHops(st), "hop 1 stays completed")

	require.NoError(t, runner.Revert(st, "rollout fleet/v3 aborted", t0), "Revert of a run whose hop 1 is still at its target")
	u := newHopUndoer("")
	got, err := runner.New(u).Execute(context.Background(), p, st)
	require.ErrorIs(t, err, runner.ErrRolledBack)
	assert.Equal(t, []record.Phase{record.RolledBack, record.RolledBack}, phasesOfHops(got))
	assert.Equal(t, map[string]int{"0/a": 1, "0/b": 1}, u.undone, "hop 1 rolled back, hop 2 not again")
}

// Revert refuses, says its doc, a status "whose run never started a
// component": there is nothing to roll back. A run whose first hop
// failed at its required pre-check started none, yet Revert accepts it
// (the hop is Failed, not Pending) and Execute then reports a rollback
// that rolled nothing back.
func TestRevertPreCheckFailedFirstHop(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a")), pre: []release.Check{{Name: "healthy", Required: true}}})
	check := runner.WithCheck("healthy", func(context.Context, runner.CheckTask) error { return errors.New("unhealthy") })
	st, err := runner.New(newUndoer(), check).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	a := compStatus(t, st, 0, "a")
	require.False(t, a.Started(), "the pre-check failed before a started")

	err = runner.Revert(st, "x", t0)
	assert.EqualError(t, err, "runner: cannot revert v1.0 -> v2.0: no component of it has started, so there is nothing to roll back")
}

// A run that failed at the required pre-check of its last hop (nothing
// of that hop started) after completing the hops before it: Revert
// rolls the completed hops back; the failed hop, which changed nothing,
// is RolledBack with nothing rolled back. This holds; it pins the
// order and that the failed hop's components are not rolled back.
func TestRevertPreCheckFailedLastHop(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"), c("b", "a"))}, hop{g: graphOf(t, c("a")), pre: []release.Check{{Name: "healthy", Required: true}}})
	check := runner.WithCheck("healthy", func(_ context.Context, ct runner.CheckTask) error { return errors.New("unhealthy") })
	st, err := runner.New(newHopUndoer(""), check).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	require.NoError(t, runner.Revert(st, "x", t0))
	u := newHopUndoer("")
	got, err := runner.New(u, check).Execute(context.Background(), p, st)
	require.ErrorIs(t, err, runner.ErrRolledBack)
	assert.NotErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, record.RolledBack, got.Phase)
	assert.Equal(t, []record.Phase{record.RolledBack, record.RolledBack}, phasesOfHops(got))
	assert.Equal(t, map[string]int{"0/a": 1, "0/b": 1}, u.undone)
}

// Execute of a reverted status by an executor given
// WithFailurePolicy(Rollback) (an operator's WithExecutorOptions, say)
// rolls back the last hop only, and ends RolledBack, which is final
// (Revert and Execute refuse it then): the hops before stay at their
// targets while the status says the run was rolled back on request.
// Revert's request is to go back to the run's start; an executor's
// failure policy is about failures, not requests, so the rollback must
// go to the start whatever the policy (or Execute must refuse).
func TestRevertExecutorPolicy(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"))}, hop{g: graphOf(t, c("a"))})
	st, err := runner.New(newHopUndoer("")).Execute(context.Background(), p, nil)
	require.NoError(t, err)
	require.NoError(t, runner.Revert(st, "x", t0))
	u := newHopUndoer("")
	got, err := runner.New(u, runner.WithFailurePolicy(runner.Rollback)).Execute(context.Background(), p, st)
	if got.Phase == record.RolledBack {
		assert.Equal(t, []record.Phase{record.RolledBack, record.RolledBack}, phasesOfHops(got), "a status RolledBack on request has every hop rolled back; err %v", err)
		assert.Equal(t, map[string]int{"0/a": 1, "1/a": 1}, u.undone)
	} else {
		// Refused: the status stays as Revert left it, to resume.
		require.Error(t, err)
		assert.Equal(t, record.RollingBack, got.Phase, "refused: %v", err)
	}
}

// An irreversible component on the last hop: the reverted run ends
// RollbackFailed (ErrRollbackFailed, not ErrRunFailed: nothing failed
// forward), the component and what it depends on stay at the target,
// other branches roll back, and the hop before is not rolled back (the
// component needs it). This holds; it pins the rule of the package note.
func TestRevertIrreversible(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"))}, hop{g: graphOf(t, c("a"), c("b", "a").with(irreversible("schema migration")), c("c"))})
	st, err := runner.New(newHopUndoer("")).Execute(context.Background(), p, nil)
	require.NoError(t, err)
	require.NoError(t, runner.Revert(st, "x", t0))
	u := newHopUndoer("")
	got, err := runner.New(u).Execute(context.Background(), p, st)
	require.ErrorIs(t, err, runner.ErrRollbackFailed)
	assert.NotErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, record.RollbackFailed, got.Phase)
	assert.Equal(t, []record.Phase{record.Succeeded, record.RollbackFailed}, phasesOfHops(got))
	assert.Equal(t, map[string]int{"1/c": 1}, u.undone)
}

// A run waiting for approval of a component's gate: Revert clears
// Waiting, the gated component (never started) is Cancelled, not rolled
// back, and nothing runs forward. This holds.
func TestRevertWaiting(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"), c("b", "a"))}, hop{g: graphOf(t, c("a"), c("b", "a"))})
	gate := runner.WithGates("v3.0/b")
	st, err := runner.New(newHopUndoer(""), gate).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrWaitingForApproval)
	require.NoError(t, runner.Revert(st, "x", t0))
	assert.Empty(t, st.Waiting)
	u := newHopUndoer("")
	got, err := runner.New(u, gate).Execute(context.Background(), p, st)
	require.ErrorIs(t, err, runner.ErrRolledBack)
	assert.Equal(t, record.RolledBack, got.Phase)
	assert.Empty(t, got.Waiting)
	assert.Equal(t, record.Cancelled, compStatus(t, got, 1, "b").Phase)
	assert.Equal(t, map[string]int{"0/a": 1, "0/b": 1, "1/a": 1}, u.undone)
	assert.Empty(t, u.ran)
}

// Revert under state.Run on a File store (its journal), the rollback
// then stopped after its first component (a cancel, as an operator's
// stop), and resumed by a second state.Run on the store opened again:
// the record resumes as the requested rollback, not a failure, and ends
// RolledBack with each component rolled back once, whatever was rolled
// back before the stop.
func TestRevertJournal(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"), c("b", "a"))}, hop{g: graphOf(t, c("a"), c("b", "a"))})
	dir := t.TempDir()
	open := func() *state.File {
		f, err := state.OpenFile(dir)
		require.NoError(t, err)
		t.Cleanup(func() { _ = f.Close() })
		return f
	}
	f := open()
	ctx := context.Background()
	_, err := state.Run(ctx, f, f, runner.New(newHopUndoer("")), p)
	require.NoError(t, err)

	cctx, cancel := context.WithCancel(ctx)
	u := newHopUndoer("")
	first := &cancelUndoer{hopUndoer: u, after: 1, cancel: cancel}
	_, err = state.Run(cctx, f, f, runner.New(first, runner.WithMaxParallel(1)), p, state.WithSession(func(ctx context.Context, s *state.Session) (*record.Status, error) {
		require.NoError(t, runner.Revert(s.Prev, "canary", t0))
		return s.Execute(ctx, s.Prev)
	}))
	require.ErrorIs(t, err, runner.ErrRollbackFailed, "interrupted")
	require.NoError(t, f.Close())

	f = open()
	second := newHopUndoer("")
	got, err := state.Run(ctx, f, f, runner.New(second), p)
	require.ErrorIs(t, err, runner.ErrRolledBack)
	assert.NotErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, record.RolledBack, got.Phase)
	assert.Equal(t, "rolled back after: rollback requested: canary", got.Message)
	for _, k := range []string{"0/a", "0/b", "1/a", "1/b"} {
		assert.Equal(t, 1, u.undone[k]+second.undone[k], "%s rolled back once in all: first %v, second %v", k, u.undone, second.undone)
	}
	loaded, err := f.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, record.RolledBack, loaded.Phase, "the store holds the end")
	assert.Equal(t, []record.Phase{record.RolledBack, record.RolledBack}, phasesOfHops(loaded))
}

// cancelUndoer cancels after its after-th rollback returned.
type cancelUndoer struct {
	*hopUndoer
	after  int
	n      int
	cancel context.CancelFunc
}

func (u *cancelUndoer) Rollback(ctx context.Context, t runner.Task) error {
	if u.n >= u.after {
		return ctx.Err()
	}
	err := u.hopUndoer.Rollback(ctx, t)
	u.n++
	if u.n == u.after {
		u.cancel()
	}
	return err
}

// Execute of a reverted status by an executor given WithUntil naming the
// first hop (an embedder's options, kept across its runs): until stops
// an upgrade going forward, not a rollback, so the run rolls back to its
// start and ends RolledBack, as without the option.
func TestRevertWithUntil(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"))}, hop{g: graphOf(t, c("a"))})
	st, err := runner.New(newHopUndoer("")).Execute(context.Background(), p, nil)
	require.NoError(t, err)
	require.NoError(t, runner.Revert(st, "x", t0))
	u := newHopUndoer("")
	got, err := runner.New(u, runner.WithUntil("v2.0")).Execute(context.Background(), p, st)
	assert.ErrorIs(t, err, runner.ErrRolledBack)
	assert.Equal(t, record.RolledBack, got.Phase, "%s %s", got.Code, got.Message)
	assert.Equal(t, []record.Phase{record.RolledBack, record.RolledBack}, phasesOfHops(got))
	assert.Equal(t, map[string]int{"0/a": 1, "1/a": 1}, u.undone)
}
