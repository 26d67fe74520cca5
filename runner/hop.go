package runner

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
)

// CheckError is a required hop check that failed.
type CheckError struct {
	Hop   int
	Check string
	Stage string // "pre" or "post"
	Err   error
}

func (e *CheckError) Error() string {
	return fmt.Sprintf("runner: hop %d: required %s-check %s failed: %v", e.Hop+1, e.Stage, e.Check, e.Err)
}

// Unwrap returns the check's error.
func (e *CheckError) Unwrap() error { return e.Err }

// runHop runs hop i: pre-checks, the components, post-checks. It reports
// whether the hop succeeded.
func (r *run) runHop(ctx context.Context, i int, h *HopPlan) bool {
	if r.gateHop(ctx, i, h) {
		return false
	}
	hs := &r.s.Hops[i]
	start := r.e.clock.Now()
	if hs.StartedAt.IsZero() {
		hs.StartedAt = start
	}
	hs.Phase, hs.Code, hs.Message, hs.FinishedAt, hs.Checks, hs.Warnings = record.Running, "", "", time.Time{}, nil, nil
	r.checkpoint(ctx)
	r.emit(Event{Type: HopStarted, Hop: i})

	// A stage that ran to its end counts even if ctx ended meanwhile; the
	// components do not start once it has.
	complete := r.runChecks(ctx, i, h, "pre") && ctx.Err() == nil
	if complete {
		r.schedule(ctx, i)
		complete = allSatisfied(hs.Components) && r.runChecks(ctx, i, h, "post")
	}
	ok := r.endHop(ctx, i, start, complete)
	if !ok && hs.Phase == record.Failed && r.checkpointErr == nil && r.e.rollsBack(h) {
		r.rollback(ctx, i) // rollback.go
	}
	return ok
}

func allSatisfied(cs []record.ComponentStatus) bool {
	for i := range cs {
		if !satisfied(&cs[i]) {
			return false
		}
	}
	return true
}

// endHop sets the hop's final phase from its checks and components, records
// it and emits HopSucceeded or HopFailed. complete says every stage ran to
// its end. It reports success.
func (r *run) endHop(ctx context.Context, i int, start time.Time, complete bool) bool {
	hs := &r.s.Hops[i]
	now := r.e.clock.Now()
	hs.FinishedAt, hs.Duration = now, durationOf(hs.StartedAt, now)
	phase, code, msg := record.Succeeded, record.Code(""), ""
	for _, c := range hs.Checks {
		switch {
		case c.Phase == record.Failed && c.Required:
			phase, code, msg = record.Failed, record.CodeCheckFailed, fmt.Sprintf("required %s-check %s failed: %s", c.Stage, c.Name, c.Error)
		case c.Phase == record.Cancelled:
			phase, code, msg = record.Cancelled, record.CodeCancelled, fmt.Sprintf("cancelled during %s-check %s: %s", c.Stage, c.Name, c.Error)
		}
	}
	if phase == record.Succeeded {
		for _, c := range hs.Components {
			if c.Phase == record.Failed {
				phase, code, msg = record.Failed, c.Code, fmt.Sprintf("component %s failed: %s", c.Name, c.Error)
				break
			}
		}
	}
	// A hop whose last transition could not be recorded did not succeed:
	// the store may still say Running.
	if phase != record.Failed && r.checkpointErr != nil {
		phase, code, msg = record.Failed, record.CodeCheckpointFailed, "checkpoint failed: "+r.checkpointErr.Error()
	}
	held := false
	if phase == record.Succeeded {
		var p record.Phase
		if p, code, msg, held = r.heldHop(i); held {
			phase = p
		}
	}
	if phase == record.Succeeded && (!complete || !allSatisfied(hs.Components)) {
		phase, code, msg = record.Cancelled, record.CodeCancelled, "cancelled"
		if ctx.Err() != nil {
			msg = "cancelled: " + context.Cause(ctx).Error()
		}
	}
	// What never started on a hop that did not succeed says why.
	if phase != record.Succeeded && !held {
		for j := range hs.Components {
			if c := &hs.Components[j]; c.Phase == record.Pending {
				c.Phase, c.Code, c.Reason = record.Cancelled, record.CodeCancelled, "not started: "+msg
				r.mark(i, j)
			}
		}
	}
	hs.Phase, hs.Code, hs.Message = phase, code, msg
	r.s.Progress = progressOf(r.s)
	r.checkpoint(ctx)
	ev := Event{Type: HopSucceeded, Hop: i, Phase: phase, Code: code, Reason: msg, Duration: now.Sub(start)}
	if phase != record.Succeeded {
		ev.Type = HopFailed
	}
	r.emit(ev)
	return phase == record.Succeeded
}

// runChecks runs the hop's checks of one stage in declared order. A failed
// required check stops there; a failed optional check becomes a warning;
// a check is not started once ctx is done. It reports whether the stage
// passed: every check ran, and none that is required failed.
func (r *run) runChecks(ctx context.Context, i int, h *HopPlan, stage string) bool {
	checks := h.PreChecks
	if stage == "post" {
		checks = h.PostChecks
	}
	hs := &r.s.Hops[i]
	for _, c := range checks {
		if ctx.Err() != nil || r.checkpointErr != nil {
			return false
		}
		task := CheckTask{Hop: h, HopIndex: i, Name: c.Name, Stage: stage, Required: c.Required,
			Logger: r.e.logger.With("hop", h.Name(), "check", c.Name, "stage", stage)}
		began := r.e.clock.Now()
		err := callCheck(ctx, r.e.checks[c.Name], task)
		took := r.e.clock.Now().Sub(began)
		cs := record.CheckStatus{Name: c.Name, Stage: stage, Required: c.Required, Phase: record.Succeeded}
		if err != nil && ctx.Err() != nil {
			// The caller cancelled while the check ran: the check did not
			// fail, the run stops.
			cs.Phase, cs.Error = record.Cancelled, recorded(err.Error())
			hs.Checks = append(hs.Checks, cs)
			r.checkpoint(ctx)
			return false
		}
		if err != nil {
			cs.Phase, cs.Error = record.Failed, recorded(err.Error())
			r.emit(Event{Type: CheckFailed, Hop: i, Check: c.Name, Err: err, Duration: took, Code: record.CodeCheckFailed, Reason: map[bool]string{true: "required", false: "not required: recorded as a warning"}[c.Required]})
			if c.Required {
				r.s.LastFailure = &record.Failure{Hop: i, Check: c.Name, Code: record.CodeCheckFailed, Error: cs.Error, Time: r.e.clock.Now()}
				r.errs = append(r.errs, &CheckError{Hop: i, Check: c.Name, Stage: stage, Err: err})
			} else {
				hs.Warnings = append(hs.Warnings, fmt.Sprintf("%s-check %s failed: %v", stage, c.Name, err))
			}
		} else {
			r.emit(Event{Type: CheckSucceeded, Hop: i, Check: c.Name, Duration: took})
		}
		hs.Checks = append(hs.Checks, cs)
		r.checkpoint(ctx)
		if err != nil && c.Required {
			return false
		}
	}
	// Every check of the stage ran and passed, even if ctx ended while the
	// last one ran: the stage is done.
	return true
}

// callCheck runs a check function, turning a panic into an error.
func callCheck(ctx context.Context, fn CheckFunc, t CheckTask) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: string(debug.Stack())}
		}
	}()
	return fn(ctx, t)
}

// satisfied reports whether a component no longer blocks its dependents:
// it succeeded, or its runner said it had nothing to do.
func satisfied(c *record.ComponentStatus) bool {
	return c.Phase == record.Succeeded || (c.Phase == record.Skipped && c.Code == "")
}

// durationOf is to - from, or 0 when from is unset or later than to.
func durationOf(from, to time.Time) release.Duration {
	if from.IsZero() || to.Before(from) {
		return release.Duration{}
	}
	return release.D(to.Sub(from))
}

// gateHop stops hop i at its rule's gate unless approved. It reports
// whether the hop waits.
func (r *run) gateHop(ctx context.Context, i int, h *HopPlan) bool {
	step := StepName(h, "", "")
	g := r.gate(step, h.Rule.Gate)
	if g == nil || r.s.Approved(step) {
		return false
	}
	hs := &r.s.Hops[i]
	hs.Phase, hs.Code, hs.Message = record.WaitingForApproval, record.CodeWaitingForApproval, waitMessage(step, g.Reason)
	r.addWaiting(step)
	r.checkpoint(ctx)
	return true
}

// schedule runs hop's components (the hop's stages before and after
// them are runHop's).
func (r *run) schedule(ctx context.Context, hop int) {
	sc := newScheduler(ctx, r, hop, forward)
	sc.initForward()
	sc.loop(ctx)
	sc.endForward()
	sc.close()
}
