package runner

import (
	"context"
	"log/slog"
	"runtime/debug"

	"github.com/hopdag/hopdag/record"
)

// The reverse walk: the rollback of a hop's components, dependents first,
// through the runner's Rollbacker (the shared machinery is in
// schedule.go; what a hop's rollback means, and its outcome, in
// rollback.go). It differs from the forward walk where the rollback's
// rules say so: a component is rolled back once every dependent it is
// rolled back with is (Batch's barrier does not apply); an irreversible
// component, or a rollback that failed for good, stays at its target and
// so does what it depends on (stay); a halt for a failed checkpoint lets
// the rollbacks in flight finish; a rollback stopped by ctx leaves its
// component RollingBack, to resume. Attempts carry no timeout and no
// step hooks: a Rollback is one step, "rollback".

// initReverse readies the components to roll back (toRollBack) that no
// dependent to roll back waits for; what a component that stays at its
// target (RollbackFailed, from an earlier run) depends on stays too.
func (sc *scheduler) initReverse() {
	g := sc.h.Graph
	cs := sc.r.s.Hops[sc.hop].Components
	if err := sc.r.checkpointErr; err != nil {
		// A resumed rollback whose first checkpoint failed starts
		// nothing: what it would roll back is still to roll back.
		sc.halt("checkpoint failed: " + err.Error())
	}
	sc.pending = make([]bool, len(cs))
	for j := range cs {
		sc.pending[j] = toRollBack(&cs[j])
	}
	for j := range cs {
		if cs[j].Phase == record.RollbackFailed {
			sc.stay(j)
		}
	}
	for j := range cs {
		if !sc.pending[j] {
			continue
		}
		for _, d := range g.Dependents(j) {
			if sc.pending[d] {
				sc.remaining[j]++
			}
		}
		if sc.remaining[j] == 0 {
			sc.ready.push(j)
		}
	}
}

// rollbackStartable reports whether ready component i is rolled back:
// not when a dependent that stays blocked it meanwhile, nor when it is
// irreversible (then it stays, RollbackFailed, and so does what it
// depends on).
func (sc *scheduler) rollbackStartable(i int) bool {
	if !sc.pending[i] {
		return false
	}
	to := sc.h.Graph.Node(i).To
	if to == nil || to.Irreversible == "" {
		return true
	}
	r := sc.r
	c := &r.s.Hops[sc.hop].Components[i]
	sc.pending[i] = false
	c.Phase, c.Code, c.Reason = record.RollbackFailed, record.CodeIrreversible, "irreversible: "+to.Irreversible
	r.mark(sc.hop, i)
	r.emit(Event{Type: ComponentRollbackFailed, Hop: sc.hop, Component: c.Name, Version: c.ToVersion, Phase: c.Phase, Code: c.Code, Reason: c.Reason})
	sc.stay(i)
	return false
}

// recordRollingBack records component i RollingBack, in step "rollback".
func (sc *scheduler) recordRollingBack(i int) {
	c := &sc.r.s.Hops[sc.hop].Components[i]
	c.Phase, c.Code, c.Reason, c.Step = record.RollingBack, "", "", "rollback"
	sc.r.mark(sc.hop, i)
}

// rollbacksStarted emits ComponentRollingBack for the rollbacks of the
// round, once its checkpoint has recorded them.
func (sc *scheduler) rollbacksStarted() {
	r := sc.r
	if len(r.e.observers) == 0 {
		return
	}
	cs := r.s.Hops[sc.hop].Components
	for _, l := range sc.launched {
		c := &cs[l.node]
		r.emit(Event{Type: ComponentRollingBack, Hop: sc.hop, Component: c.Name, Version: c.ToVersion, Attempt: sc.tries[l.node], Phase: record.RollingBack})
	}
}

// rollbackAttempt calls the runner's Rollback for one attempt. It reads
// only what does not change during the walk, as attempt does.
func (sc *scheduler) rollbackAttempt(j job) outcome {
	e := sc.r.e
	node := sc.h.Graph.Node(j.node)
	task := Task{Hop: sc.h, HopIndex: sc.hop, Component: node.Name, From: node.From, To: node.To, Attempt: j.attempt, Logger: e.logger, Step: j.step}
	if e.logger.Enabled(sc.attemptCtx, slog.LevelError) {
		task.Logger = e.logger.With("hop", sc.h.Name(), "component", node.Name, "attempt", j.attempt, "step", j.step)
	}
	rb, _ := e.runner.(Rollbacker) // nil: a resume with a runner that cannot roll back
	err := callRollback(sc.attemptCtx, rb, task)
	// Interrupted, not failed, when it returned an error once the
	// caller's ctx was done.
	return outcome{node: j.node, err: err, stopped: err != nil && sc.attemptCtx.Err() != nil}
}

func callRollback(ctx context.Context, rb Rollbacker, t Task) (err error) {
	if rb == nil {
		// Execute checks the ability when its policy rolls back; a
		// resumed rollback may be given an executor whose runner has none.
		return errorf("cannot roll back %s: the runner has no Rollback method (runner.Rollbacker)", t.Component)
	}
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: string(debug.Stack())}
		}
	}()
	return rb.Rollback(ctx, t)
}

// rollbackEnded handles the end of a rollback attempt: rolled back (what
// it depends on may follow), interrupted (it stays RollingBack, to
// resume), or failed: tried again while the component's retry policy
// allows, else RollbackFailed, and what it depends on stays.
func (sc *scheduler) rollbackEnded(o outcome) {
	i, r := o.node, sc.r
	c := &r.s.Hops[sc.hop].Components[i]
	sc.release(i)
	switch {
	case o.err != nil && o.stopped:
		// Its Error stays what it was (the upgrade's failure, if it
		// failed): the interruption is the run's, not the component's.
		sc.rollbackInterrupted(i, "rollback interrupted: "+o.err.Error())
		return
	case o.err != nil:
		pol := r.e.retriesFor(sc.h.Graph.Node(i).To)
		if sc.tries[i] < pol.attempts && !IsPermanent(o.err) && !sc.stopping {
			// Error keeps the upgrade's failure: the Reason says why the
			// rollback is tried again.
			c.Reason = recorded("rollback failed, trying again: " + o.err.Error())
			r.mark(sc.hop, i)
			sc.backoff(i, pol, record.CodeRollbackFailed, o.err)
			return
		}
		sc.pending[i] = false
		c.Phase, c.Code, c.Error, c.Reason = record.RollbackFailed, record.CodeRollbackFailed, recorded(o.err.Error()), "rollback failed"
		sc.stay(i)
		r.emit(Event{Type: ComponentRollbackFailed, Hop: sc.hop, Component: c.Name, Version: c.ToVersion, Attempt: sc.tries[i], Phase: c.Phase, Code: c.Code, Reason: c.Reason, Err: o.err})
	default:
		// Error keeps the upgrade's failure, if it was the one that failed.
		sc.pending[i] = false
		c.Phase, c.Code, c.Reason = record.RolledBack, "", "rolled back to "+orNone(c.FromVersion)
		c.FinishedAt = sc.now
		for _, d := range sc.next(i) {
			if sc.pending[d] {
				if sc.remaining[d]--; sc.remaining[d] == 0 {
					sc.ready.push(d)
				}
			}
		}
		r.emit(Event{Type: ComponentRolledBack, Hop: sc.hop, Component: c.Name, Version: orNone(c.FromVersion), Attempt: sc.tries[i], Phase: c.Phase})
	}
	r.mark(sc.hop, i)
}

// rollbackInterrupted records component i's rollback stopped before its
// end: it stays RollingBack, and a resume rolls it back again.
func (sc *scheduler) rollbackInterrupted(i int, reason string) {
	c := &sc.r.s.Hops[sc.hop].Components[i]
	sc.pending[i] = false
	c.Phase, c.Code, c.Reason = record.RollingBack, "", recorded(reason)
	sc.r.mark(sc.hop, i)
}

// stay keeps at their target the components component j depends on, as
// j stays there: those still to roll back that no attempt of this walk
// has started are ROLLBACK_BLOCKED, their reason naming j. (One whose
// rollback is under way ends as its rollback does: the walk's order lets
// that happen only through a component between them that is not rolled
// back, such as one its runner skipped.)
func (sc *scheduler) stay(j int) {
	r := sc.r
	cs := r.s.Hops[sc.hop].Components
	for _, a := range sc.h.Graph.Ancestors(j) {
		if sc.pending[a] && sc.tries[a] == 0 {
			sc.pending[a] = false
			cs[a].Code, cs[a].Reason = record.CodeRollbackBlocked, blockedBy(&cs[j])
			r.mark(sc.hop, a)
		}
	}
}
