package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// finish records how the run ended: a plan refused before it ran
// (refused), a record that cannot resume (mismatched), or the phase the
// run ended in, written to the ClusterVersion's status by the ending's
// method for it (see ending.write). An abandoned run's record is saved
// Abandoned first.
func (ru *run) finish(ctx context.Context, store state.Store, lease state.Lease, s *record.Status, err error) {
	ru.mu.Lock()
	why, reason, deleted := ru.why, ru.reason, ru.deleted
	ru.mu.Unlock()
	if s == nil { // the plan was refused before it ran
		ru.refused(ctx, err)
		return
	}
	if errors.Is(err, runner.ErrPlanMismatch) {
		ru.mismatched(ctx, s, err)
		return
	}
	now := metav1.Now()
	if s.Phase == record.Cancelled && why == stopAbandon {
		if aerr := s.Abandon(reason, now.Time); aerr == nil {
			if serr := store.Save(ctx, lease.Token, s); serr != nil {
				ru.r.logger.Warn("controller: saving the abandoned run", "clusterversion", ru.p.key, "error", serr)
				return
			}
		}
	}
	var events []func()
	wrote := ru.updateFor(ctx, func(latest *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) {
		events = nil
		if !openHistory(st) {
			// Another writer (a replica without leader election, a run
			// of this record resumed elsewhere) recorded how the upgrade
			// ended: it is not recorded, nor announced, again.
			return
		}
		e := &ending{ru: ru, r: held{ru.r, &events}, cv: ru.p.cv, latest: latest, st: st, s: s, err: err, why: why, reason: reason, deleted: deleted, now: now}
		e.write()
		ru.updatesReached(ctx, latest, st)
	})
	if wrote {
		for _, tell := range events {
			tell()
		}
	}
}

// updatesReached sets in st the updates of the version the run
// reached (st.currentVersion), as the reconcile after the run's end
// would (decision.observe): the end's write carries them, rather than
// that reconcile writing them after. A catalog that does not load
// leaves them to that reconcile, which says why.
func (ru *run) updatesReached(ctx context.Context, latest *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) {
	if l, ok := ru.r.updatesAt(ctx, latest, st.CurrentVersion); ok {
		l.setIn(st)
	}
}

// updatesAt lists the updates of cv from version, from its namespace's
// catalog; ok is false when the catalog does not load or version does
// not parse (the reconcile's decision says why).
func (r *Reconciler) updatesAt(ctx context.Context, cv *v1alpha1.ClusterVersion, version string) (l listed, ok bool) {
	cat, err := r.catalogs.Load(ctx, r.client, cv.Namespace)
	if err != nil {
		return l, false
	}
	current, err := parsePosition(version)
	if err != nil {
		return l, false
	}
	l, _ = r.updates.get(cv, cat, current)
	return l, true
}

// refused records a plan that was refused before it ran: the upgrade
// failed.
func (ru *run) refused(ctx context.Context, err error) {
	r, cv := ru.r, ru.p.cv
	now := metav1.Now()
	msg := withNext(err.Error(), failedNext(ru.from))
	ru.updateFor(ctx, func(latest *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) {
		// The history entry decide opened ends here, Failed: the
		// upgrade was shown Upgrading (and, when resumed, may have
		// completed hops before), so it is not dropped.
		endHistory(st, v1alpha1.HistoryFailed, firstLine(err.Error()), now)
		r.failing(cv, st, "PlanInvalid", msg)
		st.Phase, st.ObservedRetry = v1alpha1.PhaseFailed, latest.Spec.Retry
	})
	r.event(cv, "Warning", "UpgradeFailed", "Upgrade", fmt.Sprintf("upgrade %s -> %s failed: the plan was refused: %s; %s", ru.from, ru.to, firstLine(err.Error()), failedNext(ru.from)))
}

// ending is how a run ended, as finish writes it to the latest
// ClusterVersion's status st: the run's record s, the error Execute
// returned, and why the run was stopped. Its Events are held (r) until
// the status is written.
type ending struct {
	ru      *run
	r       held
	cv      *v1alpha1.ClusterVersion
	latest  *v1alpha1.ClusterVersion
	st      *v1alpha1.ClusterVersionStatus
	s       *record.Status
	err     error
	why     stop
	reason  string // the abandon reason
	deleted bool
	now     metav1.Time
}

// write sets the status's plan, current version, phase, conditions and
// history for the phase the run ended in.
func (e *ending) write() {
	st, s := e.st, e.s
	st.Plan = summary(e.ru.p.plan, s, e.ru.p.target)
	st.CurrentVersion = reachedBy(e.ru.p.plan, s)
	cancelled := s.Phase == record.Cancelled
	switch {
	case s.Phase == record.Succeeded:
		e.succeeded()
	case s.Phase == record.Abandoned:
		e.abandoned()
	case s.Phase == record.WaitingForApproval:
		e.waiting()
	case s.Phase == record.Paused: // at the until step (spec.until, or runner.WithUntil in the operator's executor options)
		e.untilReached()
	case s.Phase == record.RolledBack && requested(s):
		e.revertedOnRequest()
	case s.Phase == record.RolledBack:
		e.rolledBack()
	case s.Phase == record.RollbackFailed:
		e.rollbackFailed()
	case cancelled && e.why == stopPause:
		e.paused()
	case cancelled && e.why == stopRollback:
		e.stoppedForRollback()
	case cancelled && e.why == stopWindow && !e.deleted:
		e.windowClosed()
	case cancelled && e.deleted:
		e.stoppedForDeletion()
	case cancelled && e.why == stopAbort && !setsBack(e.ru.from, string(e.latest.Spec.DesiredVersion)):
		e.redirected()
	case cancelled && e.why == stopAbort:
		e.aborted()
	default:
		e.failed()
	}
}

// succeeded: the system runs the target; an abort or a new target that
// came during the last hop is noted in the history.
func (e *ending) succeeded() {
	ru, st, cv := e.ru, e.st, e.cv
	st.Phase = v1alpha1.PhaseIdle
	setCondition(st, cv, v1alpha1.ConditionAvailable, metav1.ConditionTrue, "AsExpected", "the system runs "+st.CurrentVersion)
	msg := ""
	if e.why == stopAbort && !e.deleted && setsBack(ru.from, string(e.latest.Spec.DesiredVersion)) { // it came during the last hop, which an abort lets finish
		msg = abortedLate + ru.from + " came during the last hop, and an abort lets the hop in progress finish"
	} else if e.why == stopAbort && !e.deleted {
		msg = redirectedLate(ru.to, e.latest.Spec.DesiredVersion)
	}
	endHistory(st, v1alpha1.HistoryCompleted, msg, e.now)
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "AsExpected", "the system runs "+st.CurrentVersion)
	setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
	e.r.event(cv, "Normal", "UpgradeCompleted", "Upgrade", fmt.Sprintf("upgraded %s -> %s in %s", ru.from, ru.to, e.s.FinishedAt.Sub(e.s.StartedAt).Round(time.Millisecond)))
}

// abandoned: spec.abandon stopped the run, and its record says so.
func (e *ending) abandoned() {
	st, cv := e.st, e.cv
	st.Phase = v1alpha1.PhaseAbandoned
	endHistory(st, v1alpha1.HistoryFailed, "abandoned: "+e.reason, e.now)
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "Abandoned", "abandoned at "+st.Plan.Progress.Summary+": "+e.reason)
	e.r.event(cv, "Warning", "UpgradeAbandoned", "Abandon", "abandoned: "+e.reason)
}

// waiting: a gate waits for spec.approvals.
func (e *ending) waiting() {
	st, cv := e.st, e.cv
	st.Phase = v1alpha1.PhaseWaitingForApproval
	markStale(e.latest, st.Plan)
	msg := waitingMessage(st.Plan.Waiting)
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "WaitingForApproval", msg)
	setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
	e.r.event(cv, "Normal", "UpgradeWaitingForApproval", "Gate", msg)
}

// untilReached: the run stopped at its until step.
func (e *ending) untilReached() {
	st, cv := e.st, e.cv
	st.Phase = v1alpha1.PhasePaused
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "UntilReached", untilMessage(e.ru.p.cv, e.s, st.Plan.Progress.Summary))
	setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
	e.r.event(cv, "Normal", "UpgradePaused", "Pause", e.s.Message)
}

// rolledBack: the upgrade failed and the system is back where it
// started.
func (e *ending) rolledBack() {
	ru, st, cv, s := e.ru, e.st, e.cv, e.s
	st.Phase = v1alpha1.PhaseRolledBack
	msg := fmt.Sprintf("the upgrade %s -> %s failed and was rolled back; the system runs %s", ru.from, ru.to, st.CurrentVersion)
	if f := s.LastFailure; f != nil {
		msg = fmt.Sprintf("the upgrade %s -> %s failed at component %s on hop %d (%s: %s) and was rolled back; the system runs %s", ru.from, ru.to, cmpStr(f.Component, f.Check), f.Hop+1, f.Code, firstLine(f.Error), st.CurrentVersion)
	}
	endHistory(st, v1alpha1.HistoryRolledBack, msg, e.now)
	setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionTrue, "UpgradeRolledBack", msg+"; change the spec to try again")
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "UpgradeRolledBack", "not upgrading: rolled back to "+st.CurrentVersion)
	e.r.event(cv, "Warning", "UpgradeRolledBack", "Rollback", msg)
}

// rollbackFailed: the upgrade failed and its rollback did not finish.
func (e *ending) rollbackFailed() {
	ru, st, cv, s := e.ru, e.st, e.cv, e.s
	st.Phase = v1alpha1.PhaseFailed
	msg := fmt.Sprintf("%s: the upgrade %s -> %s failed and its rollback did not finish: the system is between versions", s.Code, ru.from, ru.to)
	if requested(s) {
		msg = fmt.Sprintf("%s: the rollback of the upgrade %s -> %s (%s) did not finish: the system is between versions", s.Code, ru.from, ru.to, s.LastFailure.Error)
	} else if f := s.LastFailure; f != nil {
		msg += fmt.Sprintf(" (the upgrade failed at component %s on hop %d: %s)", cmpStr(f.Component, f.Check), f.Hop+1, f.Code)
	}
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	endHistory(st, v1alpha1.HistoryFailed, firstLine(msg), e.now)
	msg = withNext(msg, rollbackNext(s))
	e.r.failing(cv, st, "RollbackFailed", msg)
	st.ObservedRetry = e.latest.Spec.Retry // a failure: only a later spec.retry resumes it
	e.r.event(cv, "Warning", "UpgradeRollbackFailed", "Rollback", firstLine(msg))
}

// paused: spec.paused stopped the run.
func (e *ending) paused() {
	st, cv := e.st, e.cv
	st.Phase = v1alpha1.PhasePaused
	msg := pausedMessage(st, e.ru.to)
	if e.ru.p.revert && e.latest.Spec.Rollback != nil {
		msg = revertPausedMessage(e.latest, st, e.ru.from, e.ru.to)
	}
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "Paused", msg)
	e.r.event(cv, "Normal", "UpgradePaused", "Pause", "paused at "+st.Plan.Progress.Summary)
}

// windowClosed: the maintenance window closed during a hop, which
// finished; the next hop waits for the next window, and the reconcile
// the run's end wakes says when it opens (decision.outsideWindow).
func (e *ending) windowClosed() {
	st, cv := e.st, e.cv
	st.Phase = v1alpha1.PhasePaused
	msg := e.ru.p.window.windowStopMessage(st, e.ru.to, e.ru.p.window.NextOpen(e.ru.r.now()))
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "WaitingForMaintenanceWindow", msg)
	setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
	e.r.event(cv, "Normal", "UpgradePaused", "MaintenanceWindow", msg)
}

// stoppedForDeletion: the ClusterVersion is being deleted.
func (e *ending) stoppedForDeletion() {
	st, cv := e.st, e.cv
	st.Phase = v1alpha1.PhaseIdle
	msg := fmt.Sprintf("stopped at %s: the ClusterVersion is being deleted; the system runs %s", st.Plan.Progress.Summary, st.CurrentVersion)
	if ph := st.Plan.Partial; ph != nil { // paused partway through a hop before the deletion
		msg = fmt.Sprintf("stopped at %s: the ClusterVersion is being deleted; %s", st.Plan.Progress.Summary, between(st.CurrentVersion, ph))
	}
	endHistory(st, v1alpha1.HistoryPartial, msg, e.now)
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "Deleting", msg)
	e.r.event(cv, "Normal", "UpgradeStopped", "Delete", msg)
}

// redirected: a new target stopped the run once the hop in progress
// finished.
func (e *ending) redirected() {
	st, cv := e.st, e.cv
	st.Phase = v1alpha1.PhaseIdle
	msg := redirected(st, e.ru.p.target, e.latest.Spec.DesiredVersion)
	endHistory(st, v1alpha1.HistoryPartial, msg, e.now)
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "UpgradeRedirected", msg)
	e.r.event(cv, "Normal", "UpgradeRedirected", "Redirect", msg)
}

// aborted: desiredVersion was set back to where the run started.
func (e *ending) aborted() {
	ru, st, cv := e.ru, e.st, e.cv
	st.Phase = v1alpha1.PhaseIdle
	msg := fmt.Sprintf("aborted at %s: desiredVersion set back to %s; the system runs %s", st.Plan.Progress.Summary, ru.from, st.CurrentVersion)
	if ph := st.Plan.Partial; ph != nil { // paused partway through a hop before the abort
		msg = fmt.Sprintf("aborted at %s: desiredVersion set back to %s; %s", st.Plan.Progress.Summary, ru.from, between(st.CurrentVersion, ph))
	}
	endHistory(st, v1alpha1.HistoryPartial, msg, e.now)
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "UpgradeAborted", msg)
	e.r.event(cv, "Normal", "UpgradeAborted", "Abort", msg)
}

// failed: the upgrade failed, and was not rolled back.
func (e *ending) failed() {
	ru, st, cv, s := e.ru, e.st, e.cv, e.s
	st.Phase = v1alpha1.PhaseFailed
	msg := "the upgrade failed"
	if e.err != nil {
		msg = e.err.Error()
	}
	endHistory(st, v1alpha1.HistoryFailed, firstLine(msg), e.now)
	next := failedNext(ru.from)
	e.r.failing(cv, st, "UpgradeFailed", withNext(msg, next))
	// Recorded with the spec.retry of the object the failure is
	// written to: only a later change of spec.retry retries it.
	st.ObservedRetry = e.latest.Spec.Retry
	note := fmt.Sprintf("upgrade %s -> %s failed: %s", ru.from, ru.to, s.Code)
	if f := s.LastFailure; f != nil {
		note = fmt.Sprintf("upgrade %s -> %s failed: component %s on hop %d: %s", ru.from, ru.to, cmpStr(f.Component, f.Check), f.Hop+1, f.Code)
	}
	e.r.event(cv, "Warning", "UpgradeFailed", "Upgrade", note+"; "+next)
}

// abortedLate starts the history message of an upgrade that completed
// although an abort was asked: it came during the last hop.
const abortedLate = "completed: the abort to "

// redirected says how an upgrade toward target ended that a new target,
// desired, stopped once the hop in progress had finished (st is the
// status that records the stop): where the system is, and that the
// upgrade to desired goes on from there (or that it is there). Whether
// that upgrade can start is decide's to say (a Failing condition when it
// cannot).
func redirected(st *v1alpha1.ClusterVersionStatus, target string, desired v1alpha1.Target) string {
	msg := fmt.Sprintf("redirected at %s: desiredVersion changed from %s to %s; the upgrade to %s stopped once the hop in progress finished, and ", st.Plan.Progress.Summary, target, desired, target)
	switch {
	case st.Plan.Partial != nil: // paused partway through a hop before the new target came
		return msg + "the upgrade to " + string(desired) + " goes on from there if its route finishes that hop: " + between(st.CurrentVersion, st.Plan.Partial)
	case samePosition(st.CurrentVersion, string(desired)):
		return msg + "the system runs " + st.CurrentVersion + ", the new target"
	}
	return msg + "the upgrade to " + string(desired) + " starts from " + st.CurrentVersion + ", which the system runs"
}

// redirectedLate is the history message of an upgrade to to that
// completed although a new target, desired, was set: it came during the
// last hop, which finishes as for an abort.
func redirectedLate(to string, desired v1alpha1.Target) string {
	return fmt.Sprintf("completed: desiredVersion changed to %s during the last hop, which finished; the upgrade to %s starts from %s", desired, desired, to)
}

// rollbackNext says what to do about a rollback that did not finish: a
// retry retries the component rollbacks that failed; one that stopped
// only at irreversible components changes nothing.
func rollbackNext(s *record.Status) string {
	var irreversible []string
	for i, h := range s.Hops {
		for _, c := range h.Components {
			switch {
			case c.Phase == record.RollbackFailed && c.Code == record.CodeRollbackFailed:
				return "increment spec.retry to retry the rollbacks that failed, or abandon the upgrade (spec.abandon)"
			case c.Phase == record.RollbackFailed:
				irreversible = append(irreversible, fmt.Sprintf("%s %s on hop %d", c.Name, c.ToVersion, i+1))
			}
		}
	}
	return "the rollback stopped at irreversible components, which stay at their target (" + strings.Join(irreversible, ", ") +
		"), so a retry changes nothing: bring the system to one release by hand, then abandon the upgrade (spec.abandon)"
}

// recordedFailure is the error of a run record that ended failed, for
// finish, when the Execute call that failed is gone.
func recordedFailure(s *record.Status) error {
	msg := s.Message
	if f := s.LastFailure; f != nil && f.Error != "" {
		msg = fmt.Sprintf("component %s on hop %d: %s: %s", cmpStr(f.Component, f.Check), f.Hop+1, f.Code, f.Error)
	}
	if msg == "" {
		msg = "hop " + fmt.Sprint(s.CurrentHop+1) + " did not succeed"
	}
	return fmt.Errorf("%w: %s (recorded in the run's record)", runner.ErrRunFailed, msg)
}

// withNext ends msg with next, keeping next whole when msg is truncated.
func withNext(msg, next string) string {
	const limit = 4096 - 2
	if room := limit - len(next); len(msg) > room {
		msg = msg[:max(room-3, 0)] + "..."
	}
	return msg + "; " + next
}

// failedNext says what the user may do about a Failed upgrade that
// started from from; the Failing condition and the Event end with it.
func failedNext(from string) string {
	return "increment spec.retry to retry the failed component(s), set desiredVersion back to " + from + " to abort, spec.rollback to roll back what the upgrade changed, or abandon (spec.abandon)"
}

// waitingMessage says what waits for approval and what to set.
func waitingMessage(ws []v1alpha1.WaitingStep) string {
	var waits, adds []string
	for _, w := range ws {
		wait := w.Step
		if w.Reason != "" {
			wait += " (" + w.Reason + ")"
		}
		waits = append(waits, wait)
		adds = append(adds, "{step: "+w.Step+", by: <who approves>}")
	}
	if len(ws) == 0 {
		return "waiting for approval"
	}
	return "waiting for approval of " + strings.Join(waits, ", ") + "; to approve, add " + strings.Join(adds, " or ") + " to spec.approvals"
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// untilMessage says where a run stopped at its until step and what goes
// on from there: clearing or moving spec.until, or, for an until step of
// the operator's executor options, restarting the operator without it.
func untilMessage(cv *v1alpha1.ClusterVersion, s *record.Status, progress string) string {
	if cv.Spec.Until != "" {
		return fmt.Sprintf("stopped after %s as spec.until asks, at %s components: clear spec.until, or set it to a later step, to go on", cv.Spec.Until, progress)
	}
	msg, _, _ := strings.Cut(s.Message, ";")
	return fmt.Sprintf("%s, at %s components: the step is the operator's (runner.WithUntil in its executor options); restart the operator without it to go on", msg, progress)
}
