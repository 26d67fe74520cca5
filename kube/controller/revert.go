package controller

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// reverting turns spec.rollback into the run that rolls the last upgrade
// (status.history[0]) back, whether it completed, failed or stopped
// partway: that upgrade is planned again, from where it started to where
// it went, and its record is resumed as a rollback (runner.Revert, in
// the run's session). Once it is RolledBack, or when there is nothing to
// roll back, nothing starts while spec.rollback is set, and the status
// says so.
func (d *decision) reverting() (bool, *plan, error) {
	r, cv, st := d.r, d.cv, d.st
	rb := cv.Spec.Rollback
	if rb == nil || endedFor(cv, st, v1alpha1.ConditionFailing, "RollbackRefused") {
		return rb != nil, nil, nil
	}
	held := ""
	switch {
	case len(st.History) == 0:
		held = "no upgrade ran, so there is nothing to roll back"
	case st.Phase == v1alpha1.PhaseAbandoned:
		held = "the last upgrade was abandoned, and an abandoned run is not rolled back"
	case (st.Phase == v1alpha1.PhaseRolledBack || st.History[0].State == v1alpha1.HistoryRolledBack) && samePosition(st.CurrentVersion, st.History[0].From):
		// Back where the upgrade started. (A rule's onFailure: rollback
		// leaves the hops before the failed one completed: those are
		// rolled back now.)
		held = "rolled back to " + st.CurrentVersion
	}
	if held != "" {
		msg := fmt.Sprintf("%s; spec.rollback is set (%s), so the upgrade to %s does not start: clear spec.rollback to start it", held, rb.Reason, d.desired)
		if st.Phase != v1alpha1.PhaseRolledBack && st.Phase != v1alpha1.PhaseAbandoned {
			st.Phase = v1alpha1.PhaseIdle
		}
		setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "RollbackRequested", msg)
		return decided()
	}
	if f := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionFailing); st.Phase == v1alpha1.PhaseFailed && f != nil && f.Reason == "RollbackFailed" {
		// Its rollback failed: like any failure, it is tried again when
		// spec.retry changes (the Failing message says so).
		if cv.Spec.Retry == st.ObservedRetry {
			return decided()
		}
		st.ObservedRetry = cv.Spec.Retry
		r.event(cv, "Normal", "UpgradeRetried", "Retry", fmt.Sprintf("spec.retry %d: retrying the rollback of %s -> %s", cv.Spec.Retry, st.History[0].From, st.History[0].To))
	}
	h := st.History[0]
	from, err := parsePosition(h.From)
	if err == nil {
		d.to, err = parsePosition(h.To)
	}
	if err != nil {
		r.failing(cv, st, "RollbackRefused", fmt.Sprintf("spec.rollback: the last upgrade %s -> %s in status.history cannot be read: %v; clear spec.rollback", h.From, h.To, err))
		return decided()
	}
	d.from, d.target, d.inFlight, d.revert = from, h.To, true, true
	return false, nil, nil
}

// startRevert writes the status of the rollback that starts (or resumes)
// now: the history's last entry is open again, saying so.
func (d *decision) startRevert() {
	cv, st := d.cv, d.st
	st.Plan = summary(d.p, nil, d.target)
	h := &st.History[0]
	msg := "rolling back on request: " + cv.Spec.Rollback.Reason
	if h.CompletionTime != nil || h.Message != msg {
		d.r.event(cv, "Normal", "UpgradeRollingBack", "Rollback", fmt.Sprintf("rolling back %s -> %s to %s through its DAG: %s", h.From, h.To, h.From, cv.Spec.Rollback.Reason))
	}
	h.State, h.CompletionTime, h.Message = v1alpha1.HistoryPartial, nil, msg
}

// revert readies the run's record for the rollback spec.rollback asks
// (runner.Revert) under the run's lease, and returns it. done says the
// run ends there: the record was rolled back already (the end is written
// now), or it cannot be rolled back (Failing, reason RollbackRefused).
func (ru *run) revert(ctx context.Context, s *state.Session) (prev *record.Status, done bool) {
	prev = s.Prev
	if prev == nil || !recordOf(prev, ru.from, ru.to) {
		ru.revertRefused(ctx, fmt.Errorf("the run's record of %s -> %s is not in the store", ru.from, ru.to))
		return prev, true
	}
	err := runner.Revert(prev, ru.p.cv.Spec.Rollback.Reason, ru.r.now())
	switch {
	case errors.Is(err, runner.ErrRolledBack):
		// Rolled back to its start before the operator stopped, not
		// yet said.
		ru.finish(ctx, s.Store, s.Lease(), prev, err)
		return prev, true
	case err != nil:
		ru.revertRefused(ctx, err)
		return prev, true
	}
	return prev, false
}

// revertRefused records that the upgrade cannot be rolled back, and why:
// the status is put back as it was before the rollback started (the
// upgrade's own outcome stands: what failed is the request), Failing
// reason RollbackRefused saying why, until spec.rollback changes.
func (ru *run) revertRefused(ctx context.Context, err error) {
	r, cv := ru.r, ru.p.cv
	was := cv.Status.DeepCopy() // as the reconcile that started the rollback read it
	msg := fmt.Sprintf("spec.rollback: cannot roll back %s -> %s: %v; clear spec.rollback", ru.from, ru.to, err)
	ru.updateFor(ctx, func(_ *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) {
		st.Phase, st.Plan, st.CurrentVersion = was.Phase, was.Plan, was.CurrentVersion
		if len(was.History) > 0 && len(st.History) > 0 {
			st.History[0] = was.History[0]
		}
		r.failing(cv, st, "RollbackRefused", msg)
	})
	r.event(cv, "Warning", "RollbackRefused", "Rollback", msg)
}

// revertPausedMessage says that spec.paused holds the rollback of the
// upgrade from -> to.
func revertPausedMessage(cv *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus, from, to string) string {
	msg := fmt.Sprintf("paused: the rollback of the upgrade %s -> %s to %s (spec.rollback: %s) waits; clear spec.paused to go on", from, to, from, cv.Spec.Rollback.Reason)
	if ps := st.Plan; ps != nil && ps.Phase == string(record.RollingBack) {
		msg = fmt.Sprintf("paused while rolling back the upgrade %s -> %s to %s (spec.rollback: %s), at %s components; clear spec.paused to go on", from, to, from, cv.Spec.Rollback.Reason, ps.Progress.Summary)
	}
	return msg
}

// revertedOnRequest: spec.rollback rolled the upgrade back; the system is
// back where it started, and stays while spec.rollback is set.
func (e *ending) revertedOnRequest() {
	ru, st, cv := e.ru, e.st, e.cv
	st.Phase = v1alpha1.PhaseRolledBack
	msg := fmt.Sprintf("the upgrade %s -> %s was rolled back on request (%s); the system runs %s", ru.from, ru.to, e.s.LastFailure.Error, st.CurrentVersion)
	endHistory(st, v1alpha1.HistoryRolledBack, msg, e.now)
	setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "RollbackRequested", msg+"; clear spec.rollback to upgrade again")
	e.r.event(cv, "Normal", "UpgradeRolledBack", "Rollback", msg)
}

// stoppedForRollback: spec.rollback stopped the run at its safe point;
// the reconcile its end wakes starts the rollback.
func (e *ending) stoppedForRollback() {
	st, cv := e.st, e.cv
	st.Phase = v1alpha1.PhasePaused
	msg := fmt.Sprintf("stopped at %s for spec.rollback, which was cleared since: the upgrade to %s resumes", st.Plan.Progress.Summary, e.ru.to)
	if rb := e.latest.Spec.Rollback; rb != nil {
		msg = fmt.Sprintf("stopped at %s for spec.rollback (%s): the rollback to %s starts next", st.Plan.Progress.Summary, rb.Reason, e.ru.from)
	}
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "RollbackRequested", msg)
}

// requested reports whether s was rolled back on request
// (runner.Revert).
func requested(s *record.Status) bool {
	return s.LastFailure != nil && s.LastFailure.Code == record.CodeRollbackRequested
}
