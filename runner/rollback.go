package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
)

// Rollback as a failure policy. With the Rollback policy (per run), or
// on a hop whose UpgradePath rule says onFailure: rollback, a hop that
// fails (a component failed terminally, a required check failed) is
// rolled back: every component of the hop that was started (it
// succeeded, failed or was cancelled after it started; not one its
// runner skipped) is rolled back to its from-version through the
// runner's Rollbacker ability, dependents before their dependencies:
// the scheduler that runs the upgrade walks the hop's graph in reverse
// (schedule_reverse.go), in parallel where the reversed graph allows,
// within WithMaxParallel and WithGroupLimit, longest remaining path
// first. A Rollback that fails is tried again as the component's retry
// setting says (ComponentVersion.Retries, or WithDefaultRetries), after
// the same backoff as an upgrade's attempt and with ComponentRetrying
// (code ROLLBACK_FAILED); a Permanent error is not retried. A Rollback
// has no timeout (it must return when its ctx is done), and Batch's
// barrier does not apply: a component is rolled back once the
// dependents rolled back with it are.
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
// (CHECKPOINT_FAILED), the hop RollingBack too: a failed checkpoint
// starts no more rollbacks and lets those in flight finish (one cut
// short would leave its component between versions), where it cancels
// an upgrade's attempts. Execute's error matches
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
// A run that succeeded, or failed or stopped without a rollback policy,
// is rolled back on request with Revert: the next Execute rolls back
// the last hop that began, then the hops before it, as above.
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

// Events of a rollback (Event.Phase is the component's phase; Reason
// says why a component stays; Attempt counts the component's rollback
// attempts in this Execute call). ComponentRollingBack is emitted once
// the checkpoint that records the component RollingBack has returned;
// a failed attempt that is tried again emits ComponentRetrying.
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
	r.s.Phase, r.s.Code, r.s.Message = record.RollingBack, "", "rolling back"
	if f := r.s.LastFailure; f != nil {
		r.s.Message += " after: " + f.Error
	}
	if requestedRollback(r.s) {
		// Asked for (Revert): nothing failed.
		r.requested = fmt.Errorf("%w on request: %s -> %s (%s)", ErrRolledBack, r.s.From, r.s.To, r.s.LastFailure.Error)
	} else if len(r.errs) == 0 {
		// A resumed rollback: the failure that started it is the
		// status's (see the package's note on rollback).
		r.errs = append(r.errs, recordedFailure(r.s, i, r.plan.Hops[i].Name()))
	}
	for j := i; j >= 0; j-- {
		hs := &r.s.Hops[j]
		switch hs.Phase {
		case record.RolledBack:
			// Done before a crash.
		case record.RollbackFailed:
			if !reopenable(hs) {
				// Only irreversible components stay: a resume changes
				// nothing.
				r.rolled = record.RollbackFailed
				r.rollbackErrs = append(r.rollbackErrs, "hop "+r.plan.Hops[j].Name()+": "+hs.Message)
				return
			}
			if !r.rollbackHop(ctx, j) {
				return
			}
		default:
			if j < i && (r.e.policy.rollback != rollbackRun || hs.Phase != record.Succeeded && hs.Phase != record.RollingBack) {
				return
			}
			if !r.rollbackHop(ctx, j) {
				return
			}
		}
		if r.rolled == "" {
			r.rolled = record.RolledBack
		}
		if r.e.policy.rollback != rollbackRun {
			return
		}
	}
}

// resumesRollback reports whether s is a rollback to resume: one of its
// hops is being, or was, rolled back.
func resumesRollback(s *record.Status) bool { return slices.ContainsFunc(s.Hops, inRollback) }

// inRollback reports whether hop record h is being, or was, rolled back.
func inRollback(h record.HopStatus) bool {
	return h.Phase == record.RollingBack || h.Phase == record.RolledBack || h.Phase == record.RollbackFailed
}

// requestedRollback reports whether s is a rollback asked for (Revert).
func requestedRollback(s *record.Status) bool {
	return s.LastFailure != nil && s.LastFailure.Code == record.CodeRollbackRequested
}

// reopenable reports whether a resume has something of hop record hs,
// which is RollbackFailed, to roll back again: a component whose
// Rollback failed.
func reopenable(hs *record.HopStatus) bool {
	return slices.ContainsFunc(hs.Components, func(c record.ComponentStatus) bool {
		return c.Phase == record.RollbackFailed && c.Code == record.CodeRollbackFailed
	})
}

// recordedFailure is the failure that started the rollback of hop i
// (named name), rebuilt from s.LastFailure for a resumed run, which did
// not see it happen.
func recordedFailure(s *record.Status, i int, name string) error {
	f := s.LastFailure
	switch {
	case f == nil:
		return errorf("hop %d %s failed", i+1, name)
	case f.Check != "":
		stage := "pre"
		if f.Hop >= 0 && f.Hop < len(s.Hops) {
			for _, c := range s.Hops[f.Hop].Checks {
				if c.Name == f.Check && c.Phase == record.Failed && c.Required {
					stage = c.Stage
				}
			}
		}
		return &CheckError{Hop: f.Hop, Check: f.Check, Stage: stage, Err: errors.New(f.Error)}
	}
	return &ComponentError{Hop: f.Hop, Component: f.Component, Version: f.Version, Attempt: f.Attempt, Code: f.Code, Err: errors.New(f.Error)}
}

// reopenRollbacks readies hop i, RollbackFailed, for a resume to roll
// back again what its rollback left: a component whose Rollback failed
// (for good, in the run that recorded it: its retries, if any, were
// spent) is RollingBack again, its Error the upgrade's failure when it is
// the run's last failure (the rollback's error replaced it; see
// ComponentStatus.Error), and what it blocked is no longer blocked (what
// an irreversible component blocks is blocked again by the walk).
func (r *run) reopenRollbacks(i int) {
	hs := &r.s.Hops[i]
	hs.Phase, hs.Code, hs.Message = record.RollingBack, "", "rolling back again: retrying the rollbacks that failed"
	f := r.s.LastFailure
	for j := range hs.Components {
		c := &hs.Components[j]
		switch {
		case c.Phase == record.RollbackFailed && c.Code == record.CodeRollbackFailed:
			c.Phase, c.Code, c.Reason, c.Error = record.RollingBack, "", "", ""
			if f != nil && f.Hop == i && f.Component == c.Name {
				c.Error = f.Error
			}
		case c.Code == record.CodeRollbackBlocked:
			c.Code, c.Reason = "", ""
		default:
			continue
		}
		r.mark(i, j)
	}
}

// toRollBack reports whether component record c is to be rolled back:
// it was started and is not done with rollback.
func toRollBack(c *record.ComponentStatus) bool {
	if !c.Started() || c.Code == record.CodeRollbackBlocked {
		return false
	}
	switch c.Phase {
	case record.Succeeded, record.Failed, record.Cancelled, record.RollingBack, record.WaitingForApproval, record.Paused:
		// Held at a gate or the Until step after it started: its earlier
		// steps ran.
		return true
	}
	return false
}

// rollbackHop rolls hop i back, walking the scheduler in reverse
// (schedule_reverse.go); it reports whether the hop is RolledBack. It
// returns when every rollback started has returned; a stop (ctx, a
// failed checkpoint) leaves the hop RollingBack, to resume.
func (r *run) rollbackHop(ctx context.Context, i int) bool {
	start := r.e.clock.Now()
	r.beginRollback(i)
	sc := newScheduler(ctx, r, i, reverse)
	sc.initReverse()
	sc.loop(ctx)
	sc.close()
	return r.endRollback(ctx, i, sc.pending, start)
}

// beginRollback records hop i RollingBack: what never started (held at
// its gate or behind one) waits for nothing once its hop is undone, and
// a hop RollbackFailed has its failed rollbacks reopened.
func (r *run) beginRollback(i int) {
	hs := &r.s.Hops[i]
	if hs.Phase == record.RollbackFailed {
		r.reopenRollbacks(i)
	}
	if hs.Phase == record.RollingBack {
		return
	}
	openRollback(hs, hs.Message, func(j int) { r.mark(i, j) })
}

// openRollback records hop record hs RollingBack after cause (its
// message, or why a rollback was asked), calling mark with the index of
// each component record it changes: what never started (held at its gate
// or behind one) waits for nothing once its hop is undone, and what a
// stopped process left Running is Cancelled, to be rolled back as a
// component that started.
func openRollback(hs *record.HopStatus, cause string, mark func(j int)) {
	hs.Phase, hs.Code, hs.Message = record.RollingBack, "", "rolling back"
	if cause != "" {
		hs.Message += " after: " + cause
	}
	// The run's status is final once rolled back: nothing waits.
	for j := range hs.Components {
		switch c := &hs.Components[j]; {
		case !c.Started() && (c.Phase == record.Pending || c.Phase == record.WaitingForApproval || c.Phase == record.Paused):
			c.Phase, c.Code, c.Reason = record.Cancelled, record.CodeCancelled, "not started: hop "+hs.From+" -> "+hs.To+" was rolled back"
			mark(j)
		case c.Phase == record.Running:
			c.Phase, c.Code, c.Reason = record.Cancelled, record.CodeCancelled, "interrupted: hop "+hs.From+" -> "+hs.To+" is rolled back"
			mark(j)
		}
	}
}

// Revert readies the status s of a run for the next Execute to roll it
// back, as a rollback after a failure would be, to the release the run
// started from: the last hop that started is rolled back (its components
// that started, dependents first), then every hop completed before it,
// last first. It is how an upgrade that succeeded, failed or was stopped
// partway is undone on request (a fleet's abort, an operator's change of
// mind); reason says who asked and why, and is kept in the status:
// s.LastFailure has code ROLLBACK_REQUESTED and the message "rollback
// requested: REASON", and the run's final message is "rolled back
// after: rollback requested: REASON".
//
// Revert sets s.FailurePolicy to RollbackRun, and Execute rolls a
// reverted run back to its start whatever the executor's failure policy
// (WithFailurePolicy is about failures) or until step (WithUntil stops
// an upgrade going forward, not a rollback). The plan given to Execute
// must be the status's (as for any resume), and the runner must be able
// to roll its components back (Rollbacker). Execute's error then matches
// ErrRolledBack when the rollback finished (the status RolledBack), and
// ErrRollbackFailed (only) when it did not.
//
// Revert refuses a status that is Abandoned (an operator took the run
// over), one rolled back to its start already (ErrRolledBack), and one
// whose run never started a component (nothing to roll back). A run
// whose failed hop the Rollback policy rolled back, the hops before it
// completed, is rolled back from there. A status already rolling back
// (RollingBack, RollbackFailed) keeps its rollback and its failure;
// Revert only makes the rollback go on to the run's start. Call it with
// the run's lock held, as any write of a run's status; Execute's first
// checkpoint saves what it changed.
func Revert(s *record.Status, reason string, now time.Time) error {
	switch s.Phase {
	case record.Abandoned:
		return fmt.Errorf("%w: %s -> %s was abandoned (%s): an abandoned run is not rolled back; undo what it changed by hand, or start a new run", ErrAbandoned, s.From, s.To, s.Message)
	}
	if !slices.ContainsFunc(s.Hops, func(h record.HopStatus) bool { return slices.ContainsFunc(h.Components, startedComponent) }) {
		return fmt.Errorf("runner: cannot revert %s -> %s: no component of it has started, so there is nothing to roll back", s.From, s.To)
	}
	why := "rollback requested"
	if reason != "" {
		why += ": " + reason
	}
	request := func(i int) {
		s.FailurePolicy = RollbackRun.String()
		s.LastFailure = &record.Failure{Hop: i, Code: record.CodeRollbackRequested, Error: why, Time: now}
		s.Phase, s.Code, s.Message, s.Waiting = record.RollingBack, "", "rolling back after: "+why, nil
	}
	if k := slices.IndexFunc(s.Hops, inRollback); k >= 0 {
		switch h := s.Hops[k]; {
		case h.Phase != record.RolledBack:
			// Being rolled back, or its rollback failed: it goes on, and
			// then to the run's start; its failure stays why.
			s.FailurePolicy = RollbackRun.String()
		case k == 0 || s.Hops[k-1].Phase != record.Succeeded:
			return fmt.Errorf("%w: %s -> %s was rolled back already (%s)", ErrRolledBack, s.From, s.To, s.Message)
		default:
			// A hop rolled back by its policy, the hops before it still
			// completed: they are rolled back too.
			request(k)
		}
		return nil
	}
	// The last hop that began: one a run never reached is Pending, or
	// Cancelled with nothing started.
	i := len(s.Hops) - 1
	for ; i > 0; i-- {
		if h := &s.Hops[i]; h.Phase != record.Pending && h.Phase != record.Cancelled || slices.ContainsFunc(h.Components, startedComponent) {
			break
		}
	}
	request(i)
	openRollback(&s.Hops[i], why, func(int) {})
	return nil
}

func startedComponent(c record.ComponentStatus) bool { return c.Started() }

// endRollback records the outcome of hop i's rollback, begun at start,
// pending saying what is still to roll back, and reports whether the hop
// is RolledBack.
// A rollback stopped before its end leaves the hop RollingBack; one that
// ended leaves it RolledBack, or RollbackFailed when a component stays
// at its target.
func (r *run) endRollback(ctx context.Context, i int, pending []bool, start time.Time) bool {
	hs := &r.s.Hops[i]
	cs := hs.Components
	if !slices.Contains(pending, true) && !slices.ContainsFunc(cs, func(c record.ComponentStatus) bool { return c.Phase == record.RollingBack }) {
		r.nameBlockers(i)
	}
	ok := true
	var back, stays, left []string
	for j, c := range cs {
		switch {
		case c.Phase == record.RolledBack:
			back = append(back, c.Name+"@"+orNone(c.FromVersion))
		case c.Phase == record.RollbackFailed || c.Code == record.CodeRollbackBlocked:
			ok = false
			stays = append(stays, fmt.Sprintf("%s@%s (%s)", c.Name, c.ToVersion, c.Reason))
		case pending[j] || c.Phase == record.RollingBack:
			left = append(left, c.Name+"@"+c.ToVersion)
		}
	}
	name := r.plan.Hops[i].Name()
	if len(left) > 0 {
		// Stopped (ctx, a failed checkpoint) before the end: the hop
		// stays RollingBack, to resume.
		r.rolled = record.RollingBack
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
		r.rollbackErrs = append(r.rollbackErrs, "hop "+name+": "+msg)
		r.checkpoint(ctx)
		return false
	}
	if ok {
		hs.Phase, hs.Code = record.RolledBack, ""
		hs.Message = "rolled back: " + orNone(strings.Join(back, ", "))
	} else {
		hs.Phase, hs.Code = record.RollbackFailed, record.CodeRollbackFailed
		hs.Message = fmt.Sprintf("between versions: rolled back: %s; at the target: %s", orNone(strings.Join(back, ", ")), strings.Join(stays, ", "))
		r.rolled = record.RollbackFailed
		r.rollbackErrs = append(r.rollbackErrs, "hop "+name+": "+hs.Message)
	}
	hs.FinishedAt = r.e.clock.Now()
	r.s.Progress = progressOf(r.s)
	r.checkpoint(ctx)
	r.emit(Event{Type: HopFailed, Hop: i, Phase: hs.Phase, Code: hs.Code, Reason: hs.Message, Duration: hs.FinishedAt.Sub(start)})
	return ok
}

// nameBlockers names, in the reason of each component of hop i that
// stays blocked, the first component (by index: by name) that depends on
// it and stays, whatever order they were found in: a resumed or retried
// rollback says what the run never stopped would have.
func (r *run) nameBlockers(i int) {
	g := r.plan.Hops[i].Graph
	cs := r.s.Hops[i].Components
	for j := range cs {
		if cs[j].Code != record.CodeRollbackBlocked {
			continue
		}
		for _, d := range g.Descendants(j) {
			if cs[d].Phase == record.RollbackFailed {
				if why := blockedBy(&cs[d]); cs[j].Reason != why {
					cs[j].Reason = why
					r.mark(i, j)
				}
				break
			}
		}
	}
}

// blockedBy is the reason of a component not rolled back because c,
// which depends on it, stays at its target.
func blockedBy(c *record.ComponentStatus) string {
	return fmt.Sprintf("not rolled back: %s, which depends on it, stays at %s", c.Name, c.ToVersion)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// rolledBackPhase is the run's phase after a rollback, and ok.
func (r *run) rolledBackPhase(ctx context.Context) (record.Phase, record.Code, string, bool) {
	after := ""
	if r.s.LastFailure != nil {
		after = " after: " + r.s.LastFailure.Error
	}
	switch r.rolled {
	case record.RolledBack:
		return record.RolledBack, "", "rolled back" + after, true
	case record.RollbackFailed:
		return record.RollbackFailed, record.CodeRollbackFailed, (&RollbackError{Hops: r.rollbackErrs}).Error(), true
	case record.RollingBack:
		// Interrupted: a resume finishes it.
		cause := "stopped"
		if ctx.Err() != nil {
			cause = context.Cause(ctx).Error()
		}
		return record.Cancelled, record.CodeCancelled, fmt.Sprintf("rollback interrupted (%s): resume the run to finish rolling back%s", cause, after), true
	}
	return "", "", "", false
}
