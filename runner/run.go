package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
)

// run is the state of one Execute call. Its fields are touched only by the
// goroutine that called Execute (the coordinator); runner goroutines talk
// to it through channels.
type run struct {
	// prepared is what prepare decided before the run started (the
	// executor, plan, status, until step): the run reads it, and
	// changes only the status.
	prepared
	events *dispatcher
	// failures counts component failures in this call, for the policy.
	failures int
	// errs collects the failures to return.
	errs []error
	// checkpointErr is the first Checkpointer error; it stops the run.
	checkpointErr error
	// changes are the component records changed since the last
	// checkpoint.
	changes changes
	// untilHit says the run stopped at WithUntil's step.
	untilHit bool
	// rolled is the outcome of a rollback (RolledBack, RollbackFailed;
	// RollingBack: stopped before its end), "" when none ran;
	// rollbackErrs say what a failed or stopped one left.
	rolled       record.Phase
	rollbackErrs []string
	// requested is the error of a rollback asked for (Revert), which
	// follows no failure.
	requested error
}

// newRun is the run of pr, not yet started.
func newRun(pr prepared) *run {
	return &run{prepared: pr, events: newDispatcher(pr.e.observers, pr.e.logger)}
}

// execute runs the prepared plan: it records the start, runs the hops
// in order (or resumes a rollback), and finishes.
func (r *run) execute(ctx context.Context) (*record.Status, error) {
	if r.e.checkpointer != nil {
		r.changes.init(r.s)
		r.changes.markAll()
	}
	r.checkpoint(ctx)
	r.emit(Event{Type: PlanStarted, Hop: -1})

	if i := slices.IndexFunc(r.s.Hops, inRollback); i >= 0 {
		// A rollback to resume (rollback.go): the hops before it are
		// completed, and nothing runs forward (not even to an until
		// step).
		r.rollback(ctx, i)
		return r.finish(ctx)
	}
	for i, h := range r.plan.Hops {
		if r.s.Hops[i].Phase != record.Succeeded {
			if r.checkpointErr != nil || ctx.Err() != nil {
				break
			}
			r.s.CurrentHop = i
			if !r.runHop(ctx, i, h) {
				break
			}
		}
		if r.untilAfter(i) {
			break
		}
	}
	return r.finish(ctx)
}

// finish sets the final phase, checkpoints it (the final checkpoint,
// attempted even after a checkpoint failed) and emits PlanFinished.
func (r *run) finish(ctx context.Context) (*record.Status, error) {
	s := r.s
	s.FinishedAt = r.e.clock.Now()
	allDone := true
	for _, h := range s.Hops {
		allDone = allDone && h.Phase == record.Succeeded
	}
	switch {
	case r.checkpointErr != nil:
		s.Phase, s.Code, s.Message = record.Failed, record.CodeCheckpointFailed, r.checkpointErr.Error()
	case allDone:
		s.Phase, s.Code, s.Message = record.Succeeded, "", ""
	case r.rolled != "":
		s.Phase, s.Code, s.Message, _ = r.rolledBackPhase(ctx)
	case len(r.errs) > 0:
		s.Phase = record.Failed
		if s.LastFailure != nil {
			s.Code, s.Message = s.LastFailure.Code, s.LastFailure.Error
		}
	case ctx.Err() != nil:
		s.Phase, s.Code, s.Message = record.Cancelled, record.CodeCancelled, context.Cause(ctx).Error()
	case r.held():
		s.Phase, s.Code, s.Message, _ = r.heldRun()
	default:
		s.Phase = record.Failed
	}
	if !allDone && ctx.Err() != nil {
		r.cancelUnstarted("not started: the run was cancelled")
	}
	s.Progress = progressOf(s)
	hadFailed := r.checkpointErr != nil
	if !r.finalCheckpoint(ctx) && s.Phase == record.Succeeded {
		// The success could not be recorded: the store may still say
		// Running, and the status must not claim more than it does.
		s.Phase, s.Code, s.Message = record.Failed, record.CodeCheckpointFailed, r.checkpointErr.Error()
	}
	err := r.err(ctx, allDone, hadFailed)
	r.emit(Event{Type: PlanFinished, Hop: -1, Phase: s.Phase, Code: s.Code, Err: err, Duration: s.FinishedAt.Sub(r.started)})
	r.events.close(r.e.drain) // it logs what an observer did not take
	return s, err
}

// err is Execute's error: see Execute for its parts and their order.
// hadFailed says a checkpoint failed before the final one.
func (r *run) err(ctx context.Context, allDone, hadFailed bool) error {
	var parts []error
	if len(r.errs) > 0 {
		slices.SortStableFunc(r.errs, compareFailures)
		parts = append(parts, &runFailedError{slices.Clone(r.errs)})
	}
	if r.checkpointErr != nil {
		what := "checkpoint failed, run stopped"
		if !hadFailed {
			what = "final checkpoint failed"
		}
		parts = append(parts, fmt.Errorf("runner: %s: %w", what, r.checkpointErr))
	}
	if !allDone && ctx.Err() != nil {
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
			parts = append(parts, fmt.Errorf("runner: run cancelled (%w): %w", ctx.Err(), cause))
		} else {
			parts = append(parts, fmt.Errorf("runner: run cancelled: %w", ctx.Err()))
		}
	}
	if r.requested != nil && r.rolled == record.RolledBack {
		// A rollback asked for, which no failure in r.errs started, and
		// which finished (one that did not is the RollbackError below).
		parts = append(parts, r.requested)
	}
	if r.rolled == record.RollbackFailed || r.rolled == record.RollingBack {
		// A rollback that did not finish: it failed, or was interrupted.
		// (A rollback follows a failure, in r.errs, or a request: part 1.)
		parts = append(parts, &RollbackError{Hops: r.rollbackErrs})
	}
	if held := r.heldErr(); len(parts) == 0 && !allDone && held != nil {
		parts = append(parts, held)
	}
	if len(parts) == 0 && !allDone {
		parts = append(parts, fmt.Errorf("%w: hop %d did not succeed", ErrRunFailed, r.s.CurrentHop+1))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return errors.Join(parts...)
}

// compareFailures orders the failures of a run: by hop, then a hop's
// pre-checks, components and post-checks, each by name.
func compareFailures(a, b error) int {
	key := func(err error) (int, int, string) {
		switch e := err.(type) {
		case *ComponentError:
			return e.Hop, 1, e.Component
		case *CheckError:
			if e.Stage == "pre" {
				return e.Hop, 0, e.Check
			}
			return e.Hop, 2, e.Check
		}
		return -1, 0, err.Error()
	}
	ah, as, an := key(a)
	bh, bs, bn := key(b)
	return cmp.Or(cmp.Compare(ah, bh), cmp.Compare(as, bs), cmp.Compare(an, bn))
}

func (r *run) emit(ev Event) {
	if len(r.e.observers) == 0 {
		return
	}
	ev.Time = r.e.clock.Now()
	ev.Progress = r.s.Progress
	if ev.Hop >= 0 && ev.HopName == "" {
		ev.HopName = r.plan.Hops[ev.Hop].Name()
	}
	r.events.emit(ev)
}

// cancelUnstarted marks the hops a cancelled run never reached, and their
// components, Cancelled: they did not finish, and the status says so.
// (After a failure alone they stay Pending: the run ended before them by
// design.)
func (r *run) cancelUnstarted(reason string) {
	s := r.s
	for i := range s.Hops {
		h := &s.Hops[i]
		if h.Phase != record.Pending {
			continue
		}
		h.Phase, h.Code, h.Message = record.Cancelled, record.CodeCancelled, reason
		for j := range h.Components {
			if c := &h.Components[j]; c.Phase == record.Pending {
				c.Phase, c.Code, c.Reason = record.Cancelled, record.CodeCancelled, reason
				r.mark(i, j)
			}
		}
	}
}

func progressOf(s *record.Status) record.Progress {
	var p record.Progress
	for _, h := range s.Hops {
		for _, c := range h.Components {
			p.Total++
			if c.Phase == record.Succeeded || (c.Phase == record.Skipped && c.Code == "") {
				p.Done++
			}
		}
	}
	return p
}

// gate is the gate of step: the catalog's g, else one recorded in
// Status.Gates (WithGates), else nil.
func (r *run) gate(step string, g *release.Gate) *release.Gate {
	if g == nil && slices.Contains(r.s.Gates, step) {
		return &release.Gate{Reason: gateReason}
	}
	return g
}

// addWaiting notes that step waits, once.
func (r *run) addWaiting(step string) {
	if !slices.Contains(r.s.Waiting, step) {
		r.s.Waiting = append(r.s.Waiting, step)
		slices.Sort(r.s.Waiting)
	}
}

// heldHop is the phase of hop i when it ended with components held: the
// gate's or the Until step's, and ok; not ok when nothing was held.
func (r *run) heldHop(i int) (record.Phase, record.Code, string, bool) {
	hs := &r.s.Hops[i]
	var waiting []string
	paused := false
	for _, c := range hs.Components {
		switch c.Phase {
		case record.WaitingForApproval:
			waiting = append(waiting, c.Reason)
		case record.Paused:
			paused = true
		}
	}
	switch {
	case len(waiting) > 0:
		return record.WaitingForApproval, record.CodeWaitingForApproval, strings.Join(waiting, "; "), true
	case paused || (r.until.limits(i) && !allSatisfied(hs.Components)):
		r.untilHit = true
		return record.Paused, record.CodeUntilReached, fmt.Sprintf("stopped at %s as asked (until)", r.until.name), true
	}
	return "", "", "", false
}

// heldRun is the run's phase when it stopped at a gate or the Until
// step, and ok.
func (r *run) heldRun() (record.Phase, record.Code, string, bool) {
	if len(r.s.Waiting) > 0 {
		return record.WaitingForApproval, record.CodeWaitingForApproval, (&GateError{Steps: r.s.Waiting}).Error(), true
	}
	if r.untilHit {
		return record.Paused, record.CodeUntilReached, fmt.Sprintf("stopped after %s as asked (until %s); run again without it to continue", r.until.name, r.until.name), true
	}
	return "", "", "", false
}

// heldErr is Execute's error for a run stopped at a gate or the Until
// step, or nil.
func (r *run) heldErr() error {
	if len(r.s.Waiting) > 0 {
		return &GateError{Steps: slices.Clone(r.s.Waiting)}
	}
	if r.untilHit {
		return fmt.Errorf("%w: stopped after %s as asked", ErrUntilReached, r.until.name)
	}
	return nil
}

// held reports whether the run stopped at a gate or the Until step.
func (r *run) held() bool {
	_, _, _, ok := r.heldRun()
	return ok
}

// after reports whether the run stops after hop (the step is on it, and
// later hops exist).
func (r *run) untilAfter(hop int) bool {
	u := r.until
	if u == nil || u.hop != hop || hop == len(r.plan.Hops)-1 {
		return false
	}
	r.untilHit = true
	return true
}

// mark notes that the record of component i of hop h changed.
func (r *run) mark(h, i int) { r.changes.mark(h, i) }

// checkpoint records the status with what changed since the last
// checkpoint; the first error is kept and halts the run (the caller
// checks checkpointErr), and no checkpoint is attempted after it but the
// final one (see finalCheckpoint).
func (r *run) checkpoint(ctx context.Context) {
	if r.e.checkpointer != nil && r.checkpointErr == nil {
		r.record(ctx)
	}
}

// finalCheckpoint records the final status even after a checkpoint
// failed: whatever finished since is not lost if the store answers again.
// It reports whether the record was written.
func (r *run) finalCheckpoint(ctx context.Context) bool {
	if r.e.checkpointer == nil {
		return true
	}
	return r.record(ctx) == nil
}

func (r *run) record(ctx context.Context) error {
	err := r.callCheckpointer(context.WithoutCancel(ctx))
	if err != nil {
		if r.checkpointErr == nil {
			r.checkpointErr = err
		}
		return err
	}
	r.changes.reset()
	return nil
}

func (r *run) callCheckpointer(ctx context.Context) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("runner: checkpointer panicked: %w", &PanicError{Value: v, Stack: string(debug.Stack())})
		}
	}()
	if cc, ok := r.e.checkpointer.(ChangeCheckpointer); ok {
		return cc.CheckpointChanges(ctx, r.s, r.changes.sorted())
	}
	ctx = context.WithValue(ctx, changesKey{}, changesOf{r.s, r.changes.sorted()})
	return r.e.checkpointer.Checkpoint(ctx, r.s)
}
