package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/release"
)

// Rollback as a failure policy. With the Rollback policy (per run), or
// on a hop whose UpgradePath rule says onFailure: rollback, a hop that
// fails (a component failed terminally, a required check failed) is
// rolled back: every component of the hop that was started (it
// succeeded, failed or was cancelled after it started; not one its
// runner skipped) is rolled back to its from-version through the
// runner's Rollbacker ability, dependents before their dependencies, in
// parallel where the reversed graph allows (within WithMaxParallel).
// What never started, one held at its gate or behind one included, is
// Cancelled ("not started: hop H was rolled back", unless the hop's stop
// said why first): a rolled-back run waits for no approval.
//
// A component marked irreversible (ComponentVersion.Irreversible) is not
// rolled back: it is RollbackFailed (code IRREVERSIBLE), and what it
// depends on stays at the target too (code ROLLBACK_BLOCKED), since it
// needs them; other branches roll back. A failed rollback blocks what
// the component depends on the same way. (A component blocked by several
// names, once the hop's rollback ends, the first by name of those that
// depend on it and stay, whatever order they were found in.) The hop is
// then RollbackFailed, its message saying which components are where
// (the system is between versions); otherwise the hop is RolledBack.
//
// Completed hops stay completed (the system is at a consistent release),
// unless the policy is RollbackRun: then, once the failed hop is rolled
// back, the completed hops are rolled back too, last first, to the run's
// starting release. While the rollback runs, the run's phase is
// RollingBack. Once it ends, the run's phase is RolledBack when every hop
// it rolled back is, RollbackFailed otherwise. A rollback stopped by ctx
// leaves the run Cancelled (code CANCELLED, its message saying the
// rollback was interrupted and that resuming finishes it) and the hop
// RollingBack; one stopped by a failed checkpoint leaves the run Failed
// (CHECKPOINT_FAILED), the hop RollingBack too. Execute's error matches
// ErrRunFailed and the upgrade's failure (*ComponentError, *CheckError)
// and, when a rollback did not finish (it failed or was interrupted),
// ErrRollbackFailed; an interrupted one matches ctx.Err() and
// context.Cause(ctx) as well.
//
// The rollback is recorded like the upgrade: a component is RollingBack
// in a checkpoint before its Rollback is called, RolledBack once it
// returned nil. A Rollback interrupted by ctx leaves the component
// RollingBack, its Error as it was (the upgrade's failure, if it failed).
// Execute with a status whose hop is RollingBack (a crash, a cancel)
// resumes the rollback: a component RolledBack is never rolled back
// again, one RollingBack is rolled back again. A resumed rollback keeps
// the status's LastFailure, and Execute's error matches ErrRunFailed and
// a *ComponentError (or *CheckError) rebuilt from it (its Err is the
// recorded message), so that a resumed run ends with the status and the
// error the run would have ended with had it not been stopped (of
// several failures, a resumed run knows the last one only).
//
// Execute with a status RollbackFailed retries the rollbacks that failed
// (code ROLLBACK_FAILED) and what they blocked; a component RolledBack is
// not rolled back again, and an irreversible one stays: a status whose
// rollback stopped only at irreversible components is not changed by a
// resume (it stays RollbackFailed; what to do is the operator's call:
// finish or undo those components by hand, then abandon the run). A
// retried component's Error is the upgrade's failure again when it is
// the status's LastFailure, and empty otherwise. A status RolledBack is
// final (ErrRolledBack: start a new run for another upgrade).
//
// NewPlan with ForExecutor (and Execute) refuses a plan that may roll
// back a component its runner cannot roll back, naming it: the runner
// must implement Rollbacker and, when it implements RollbackValidator,
// accept the component. Irreversible components need no ability.

// Rollbacker is an optional ability of a Runner: it undoes a component's
// upgrade, from t.To back to t.From (t.From is nil for a component the
// hop added: remove it). Like Run, it must return when ctx is done.
type Rollbacker interface {
	Rollback(ctx context.Context, t Task) error
}

// RollbackValidator is an optional ability of a Rollbacker: it says at
// plan time whether it can roll back a component (a Router asks the
// component type's runner).
type RollbackValidator interface {
	ValidateRollback(cv *release.ComponentVersion) error
}

// Rollback phases.
const (
	// RollingBack: a component's, hop's or run's rollback is in progress.
	RollingBack Phase = "RollingBack"
	// RolledBack: back at the from-version.
	RolledBack Phase = "RolledBack"
	// RollbackFailed: the rollback did not get there (a component's
	// rollback failed, or it is irreversible).
	RollbackFailed Phase = "RollbackFailed"
)

// Rollback codes.
const (
	// CodeRollbackFailed: the component's Rollback returned an error.
	CodeRollbackFailed Code = "ROLLBACK_FAILED"
	// CodeIrreversible: the component is irreversible and stays at its
	// target.
	CodeIrreversible Code = "IRREVERSIBLE"
	// CodeRollbackBlocked: not rolled back because a component that
	// depends on it stays at its target.
	CodeRollbackBlocked Code = "ROLLBACK_BLOCKED"
)

// Events of a rollback (Event.Phase is the component's phase; Reason
// says why a component stays).
const (
	ComponentRollingBack    EventType = "ComponentRollingBack"
	ComponentRolledBack     EventType = "ComponentRolledBack"
	ComponentRollbackFailed EventType = "ComponentRollbackFailed"
)

// Errors of rollback.
var (
	// ErrRollbackFailed is matched by Execute's error when a rollback did
	// not return every component to its from-version.
	ErrRollbackFailed = errors.New("runner: rollback failed")
	// ErrRolledBack is returned by Execute for a status that was rolled
	// back.
	ErrRolledBack = errors.New("runner: run was rolled back")
	// ErrCannotRollBack is matched by plan-time errors naming components
	// whose runner cannot roll them back.
	ErrCannotRollBack = errors.New("runner: cannot roll back")
)

var (
	// Rollback: at the first failure, as FailFast, then the failed hop is
	// rolled back (completed hops stay completed).
	Rollback = FailurePolicy{maxFailures: 1, rollback: rollbackHop}
	// RollbackRun: as Rollback, then the completed hops are rolled back
	// too, last first, to the run's starting release.
	RollbackRun = FailurePolicy{maxFailures: 1, rollback: rollbackRun}
)

const (
	rollbackNone = iota
	rollbackHop
	rollbackRun
)

// rollsBack reports whether a failure of hop h rolls it back.
func (e *Executor) rollsBack(h *HopPlan) bool {
	return e.policy.rollback != rollbackNone || h.Rule.OnFailure == release.OnFailureRollback
}

// validateRollback lists the components of p that may be rolled back
// and that e's runner cannot roll back.
func (e *Executor) validateRollback(p *Plan) []error {
	var problems []error
	rb, _ := e.runner.(Rollbacker)
	rv, _ := e.runner.(RollbackValidator)
	for i, h := range p.Hops {
		if !e.rollsBack(h) && e.policy.rollback != rollbackRun {
			continue
		}
		for j := 0; j < h.Graph.Len(); j++ {
			n := h.Graph.Node(j)
			if n.To == nil || n.To.Irreversible != "" {
				continue
			}
			switch {
			case rb == nil:
				problems = append(problems, fmt.Errorf("hop %d %s: component %s: %w: the runner (%T) has no Rollback method; use a runner that implements runner.Rollbacker, mark the component irreversible, or choose another failure policy", i+1, h.Name(), n.Name, ErrCannotRollBack, e.runner))
			case rv != nil:
				if err := rv.ValidateRollback(n.To); err != nil {
					problems = append(problems, fmt.Errorf("hop %d %s: component %s: %w: %w", i+1, h.Name(), n.Name, ErrCannotRollBack, err))
				}
			}
		}
	}
	return problems
}

// RollbackError says which hops a rollback left between versions.
type RollbackError struct {
	// Hops are the hops' messages, in the order rolled back.
	Hops []string
}

func (e *RollbackError) Error() string {
	return "runner: rollback failed: " + strings.Join(e.Hops, "; ")
}

// Is matches ErrRollbackFailed.
func (e *RollbackError) Is(target error) bool { return target == ErrRollbackFailed }

// rollback rolls hop i back after its failure (or resumes its rollback)
// and, with RollbackRun, the completed hops before it. It records the
// run's rollback outcome in r.rolled; the run is RollingBack meanwhile.
func (r *run) rollback(ctx context.Context, i int) {
	r.s.Waiting = nil // a run rolled back waits for no approval
	r.s.Phase, r.s.Code, r.s.Message = RollingBack, "", "rolling back"
	if f := r.s.LastFailure; f != nil {
		r.s.Message += " after: " + f.Error
	}
	if len(r.errs) == 0 {
		// A resumed rollback: the failure that started it is the
		// status's (see the package's note on rollback).
		r.errs = append(r.errs, recordedFailure(r.s, i, r.plan.Hops[i].Name()))
	}
	for j := i; j >= 0; j-- {
		hs := &r.s.Hops[j]
		switch hs.Phase {
		case RolledBack:
			// Done before a crash.
		case RollbackFailed:
			if !retriable(hs) {
				// Only irreversible components stay: a resume changes
				// nothing.
				r.rolled = RollbackFailed
				r.rollbackErrs = append(r.rollbackErrs, "hop "+r.plan.Hops[j].Name()+": "+hs.Message)
				return
			}
			if !r.rollbackHop(ctx, j) {
				return
			}
		default:
			if j < i && (r.e.policy.rollback != rollbackRun || hs.Phase != Succeeded && hs.Phase != RollingBack) {
				return
			}
			if !r.rollbackHop(ctx, j) {
				return
			}
		}
		if r.rolled == "" {
			r.rolled = RolledBack
		}
		if r.e.policy.rollback != rollbackRun {
			return
		}
	}
}

// resumesRollback reports whether s is a rollback to resume: one of its
// hops is being, or was, rolled back.
func resumesRollback(s *Status) bool {
	return slices.ContainsFunc(s.Hops, func(h HopStatus) bool {
		return h.Phase == RollingBack || h.Phase == RolledBack || h.Phase == RollbackFailed
	})
}

// retriable reports whether a resume retries something of hop record
// hs, which is RollbackFailed: a component whose Rollback failed.
func retriable(hs *HopStatus) bool {
	return slices.ContainsFunc(hs.Components, func(c ComponentStatus) bool {
		return c.Phase == RollbackFailed && c.Code == CodeRollbackFailed
	})
}

// recordedFailure is the failure that started the rollback of hop i
// (named name), rebuilt from s.LastFailure for a resumed run, which did
// not see it happen.
func recordedFailure(s *Status, i int, name string) error {
	f := s.LastFailure
	switch {
	case f == nil:
		return errorf("hop %d %s failed", i+1, name)
	case f.Check != "":
		stage := "pre"
		if f.Hop >= 0 && f.Hop < len(s.Hops) {
			for _, c := range s.Hops[f.Hop].Checks {
				if c.Name == f.Check && c.Phase == Failed && c.Required {
					stage = c.Stage
				}
			}
		}
		return &CheckError{Hop: f.Hop, Check: f.Check, Stage: stage, Err: errors.New(f.Error)}
	}
	return &ComponentError{Hop: f.Hop, Component: f.Component, Version: f.Version, Attempt: f.Attempt, Code: f.Code, Err: errors.New(f.Error)}
}

// retry readies hop i, RollbackFailed, for its rollbacks to be retried:
// a component whose Rollback failed is RollingBack again, its Error the
// upgrade's failure when it is the run's last failure (the rollback's
// error replaced it; see ComponentStatus.Error), and what it blocked is
// no longer blocked (what an irreversible component blocks is blocked
// again by rollbackHop).
func (r *run) retry(i int) {
	hs := &r.s.Hops[i]
	hs.Phase, hs.Code, hs.Message = RollingBack, "", "rolling back again: retrying the rollbacks that failed"
	f := r.s.LastFailure
	for j := range hs.Components {
		c := &hs.Components[j]
		switch {
		case c.Phase == RollbackFailed && c.Code == CodeRollbackFailed:
			c.Phase, c.Code, c.Reason, c.Error = RollingBack, "", "", ""
			if f != nil && f.Hop == i && f.Component == c.Name {
				c.Error = f.Error
			}
		case c.Code == CodeRollbackBlocked:
			c.Code, c.Reason = "", ""
		default:
			continue
		}
		r.mark(i, j)
	}
}

// toRollBack reports whether component record c is to be rolled back:
// it was started and is not done with rollback.
func toRollBack(c *ComponentStatus) bool {
	if !c.started() || c.Code == CodeRollbackBlocked {
		return false
	}
	switch c.Phase {
	case Succeeded, Failed, Cancelled, RollingBack, WaitingForApproval, Paused:
		// Held at a gate or the Until step after it started: its earlier
		// steps ran.
		return true
	}
	return false
}

// rbResult is a component rollback's outcome.
type rbResult struct {
	node int
	err  error
}

// rollbackHop rolls hop i back; it reports whether the hop is RolledBack.
// It returns when every rollback started has returned; a stop (ctx, a
// failed checkpoint) leaves the hop RollingBack, to resume.
func (r *run) rollbackHop(ctx context.Context, i int) bool {
	h := r.plan.Hops[i]
	g := h.Graph
	hs := &r.s.Hops[i]
	cs := hs.Components
	n := g.Len()
	if hs.Phase == RollbackFailed {
		r.retry(i)
	}
	if hs.Phase != RollingBack {
		cause := hs.Message
		hs.Phase, hs.Code, hs.Message = RollingBack, "", "rolling back"
		if cause != "" {
			hs.Message += " after: " + cause
		}
		// What never started (held at its gate or behind one) waits for
		// nothing once its hop is undone: the run's status is final.
		for j := range cs {
			if c := &cs[j]; !c.started() && (c.Phase == Pending || c.Phase == WaitingForApproval || c.Phase == Paused) {
				c.Phase, c.Code, c.Reason = Cancelled, CodeCancelled, "not started: hop "+h.Name()+" was rolled back"
				r.mark(i, j)
			}
		}
	}
	pending := make([]bool, n)
	for j := range cs {
		pending[j] = toRollBack(&cs[j])
	}
	// Anything a component that stays at its target depends on stays too.
	stay := func(j int) {
		for _, a := range g.Ancestors(j) {
			if pending[a] {
				pending[a] = false
				c := &cs[a]
				c.Code, c.Reason = CodeRollbackBlocked, blockedBy(&cs[j])
				r.mark(i, a)
			}
		}
	}
	for j := range cs {
		if cs[j].Phase == RollbackFailed {
			stay(j)
		}
	}
	remaining := make([]int, n)
	var ready []int
	for j := 0; j < n; j++ {
		if !pending[j] {
			continue
		}
		for _, d := range g.Dependents(j) {
			if pending[d] {
				remaining[j]++
			}
		}
	}
	for j := 0; j < n; j++ {
		if pending[j] && remaining[j] == 0 {
			ready = append(ready, j)
		}
	}
	done := func(j int) {
		for _, d := range g.Deps(j) {
			if pending[d] {
				if remaining[d]--; remaining[d] == 0 {
					ready = append(ready, d)
				}
			}
		}
	}
	results := make(chan rbResult)
	running := 0
	limit := r.e.maxParallel
	stopped := false
	for {
		if ctx.Err() != nil || r.checkpointErr != nil {
			stopped = true
		}
		var batch []int
		for !stopped && len(ready) > 0 && (limit == 0 || running+len(batch) < limit) {
			slices.Sort(ready)
			j := ready[0]
			ready = ready[1:]
			if !pending[j] {
				continue
			}
			c := &cs[j]
			if why := g.Node(j).To.Irreversible; why != "" {
				pending[j] = false
				c.Phase, c.Code, c.Reason = RollbackFailed, CodeIrreversible, "irreversible: "+why
				r.mark(i, j)
				r.emit(Event{Type: ComponentRollbackFailed, Hop: i, Component: c.Name, Version: c.ToVersion, Phase: c.Phase, Code: c.Code, Reason: c.Reason})
				stay(j)
				continue
			}
			c.Phase, c.Code, c.Reason, c.Step = RollingBack, "", "", "rollback"
			r.mark(i, j)
			batch = append(batch, j)
		}
		// Write-ahead: the components are RollingBack in the store before
		// their Rollback is called.
		r.checkpoint(ctx)
		if r.checkpointErr != nil {
			stopped = true
			batch = nil // not started: they stay RollingBack, to resume
		}
		for _, j := range batch {
			r.emit(Event{Type: ComponentRollingBack, Hop: i, Component: cs[j].Name, Version: cs[j].ToVersion, Phase: RollingBack})
			running++
			node := g.Node(j)
			t := Task{Hop: h, HopIndex: i, Component: node.Name, From: node.From, To: node.To, Attempt: 1, Logger: r.e.logger, Step: "rollback"}
			rb, _ := r.e.runner.(Rollbacker) // nil: a resume with a runner that cannot roll back
			go func() { results <- rbResult{j, callRollback(ctx, rb, t)} }()
		}
		if running == 0 {
			break
		}
		res := <-results
		running--
		c := &cs[res.node]
		now := r.e.clock.Now()
		pending[res.node] = false
		switch {
		case res.err != nil && ctx.Err() != nil:
			// Interrupted, not failed: resume it later. Its Error stays
			// what it was (the upgrade's failure, if it failed): the
			// interruption is the run's, not the component's.
			c.Phase, c.Code, c.Reason = RollingBack, "", recorded("rollback interrupted: "+res.err.Error())
		case res.err != nil:
			c.Phase, c.Code, c.Error, c.Reason = RollbackFailed, CodeRollbackFailed, recorded(res.err.Error()), "rollback failed"
			stay(res.node)
			r.emit(Event{Type: ComponentRollbackFailed, Hop: i, Component: c.Name, Version: c.ToVersion, Phase: c.Phase, Code: c.Code, Reason: c.Reason, Err: res.err})
		default:
			// Error keeps the upgrade's failure, if it was the one that failed.
			c.Phase, c.Code, c.Reason = RolledBack, "", "rolled back to "+orNone(c.FromVersion)
			c.FinishedAt = now
			done(res.node)
			r.emit(Event{Type: ComponentRolledBack, Hop: i, Component: c.Name, Version: orNone(c.FromVersion), Phase: c.Phase})
		}
		r.mark(i, res.node)
	}
	if !slices.Contains(pending, true) && !slices.ContainsFunc(cs, func(c ComponentStatus) bool { return c.Phase == RollingBack }) {
		// What stays blocked names the first component (by index: by
		// name) that depends on it and stays, whatever order they were
		// found in: a resumed or retried rollback says what the run
		// never stopped would have.
		for j := range cs {
			if cs[j].Code != CodeRollbackBlocked {
				continue
			}
			for _, d := range g.Descendants(j) {
				if cs[d].Phase == RollbackFailed {
					if why := blockedBy(&cs[d]); cs[j].Reason != why {
						cs[j].Reason = why
						r.mark(i, j)
					}
					break
				}
			}
		}
	}
	ok := true
	var back, stays, left []string
	for j, c := range cs {
		switch {
		case c.Phase == RolledBack:
			back = append(back, c.Name+"@"+orNone(c.FromVersion))
		case c.Phase == RollbackFailed || c.Code == CodeRollbackBlocked:
			ok = false
			stays = append(stays, fmt.Sprintf("%s@%s (%s)", c.Name, c.ToVersion, c.Reason))
		case pending[j] || c.Phase == RollingBack:
			left = append(left, c.Name+"@"+c.ToVersion)
		}
	}
	if len(left) > 0 {
		// Stopped (ctx, a failed checkpoint) before the end: the hop
		// stays RollingBack, to resume.
		r.rolled = RollingBack
		why := "interrupted"
		if r.checkpointErr != nil {
			why += " (checkpoint failed)"
		} else if ctx.Err() != nil {
			why += " (" + context.Cause(ctx).Error() + ")"
		}
		msg := fmt.Sprintf("%s: rolled back: %s; still to roll back: %s", why, orNone(strings.Join(back, ", ")), strings.Join(left, ", "))
		if len(stays) > 0 {
			msg += "; at the target: " + strings.Join(stays, ", ")
		}
		r.rollbackErrs = append(r.rollbackErrs, "hop "+h.Name()+": "+msg)
		r.checkpoint(ctx)
		return false
	}
	if ok {
		hs.Phase, hs.Code = RolledBack, ""
		hs.Message = "rolled back: " + orNone(strings.Join(back, ", "))
	} else {
		hs.Phase, hs.Code = RollbackFailed, CodeRollbackFailed
		hs.Message = fmt.Sprintf("between versions: rolled back: %s; at the target: %s", orNone(strings.Join(back, ", ")), strings.Join(stays, ", "))
		r.rolled = RollbackFailed
		r.rollbackErrs = append(r.rollbackErrs, "hop "+h.Name()+": "+hs.Message)
	}
	hs.FinishedAt = r.e.clock.Now()
	r.s.Progress = progressOf(r.s)
	r.checkpoint(ctx)
	r.emit(Event{Type: HopFailed, Hop: i, Phase: hs.Phase, Code: hs.Code, Reason: hs.Message})
	return ok
}

// blockedBy is the reason of a component not rolled back because c,
// which depends on it, stays at its target.
func blockedBy(c *ComponentStatus) string {
	return fmt.Sprintf("not rolled back: %s, which depends on it, stays at %s", c.Name, c.ToVersion)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
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

// rolledBackPhase is the run's phase after a rollback, and ok.
func (r *run) rolledBackPhase(ctx context.Context) (Phase, Code, string, bool) {
	after := ""
	if r.s.LastFailure != nil {
		after = " after: " + r.s.LastFailure.Error
	}
	switch r.rolled {
	case RolledBack:
		return RolledBack, "", "rolled back" + after, true
	case RollbackFailed:
		return RollbackFailed, CodeRollbackFailed, (&RollbackError{Hops: r.rollbackErrs}).Error(), true
	case RollingBack:
		// Interrupted: a resume finishes it.
		cause := "stopped"
		if ctx.Err() != nil {
			cause = context.Cause(ctx).Error()
		}
		return Cancelled, CodeCancelled, fmt.Sprintf("rollback interrupted (%s): resume the run to finish rolling back%s", cause, after), true
	}
	return "", "", "", false
}
