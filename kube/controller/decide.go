package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/internal/english"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// decision is one reconcile's decision as decide takes it, step by step:
// what it read and where the upgrade stands.
type decision struct {
	r   *Reconciler
	ctx context.Context
	cv  *v1alpha1.ClusterVersion
	st  *v1alpha1.ClusterVersionStatus
	now metav1.Time

	cat              *release.Catalog
	current, desired position
	ph               *v1alpha1.PartialHop // the hop a stopped run left partway
	// inFlight: a run started and did not end; from, to and target are
	// its upgrade's (the spec's otherwise).
	inFlight bool
	from, to position
	target   string
	// What planRoute planned, and the runner cluster found for it.
	p  *runner.Plan
	rn runner.Runner
	// retry: spec.retry asked to resume a Failed upgrade.
	retry bool
	// wait: decide again after it, when nothing changes before (a
	// maintenance window opens).
	wait time.Duration
	// window is spec.maintenanceWindows and the rollout's, compiled.
	window runWindows
	// revert: spec.rollback asks to roll back the upgrade from -> to
	// (reverting).
	revert bool
}

// step is one step of a decision: done says the decision is taken, with
// the run to start (if any) and the error to return.
type step func() (done bool, next *plan, err error)

// decide sets the status for what it sees, and returns the run to start,
// if any. Its steps, in order: observe (the catalog, the versions, the
// updates), stopped (an upgrade in flight that was abandoned, aborted or
// redirected), reverting (spec.rollback), settled (nothing to do),
// cluster (the runner, and the cluster of spec.clusterRef answers),
// planRoute (the route and its plan), held (abandon, retry, pause,
// approvals, until), outsideWindow and start.
func (r *Reconciler) decide(ctx context.Context, cv *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) (*plan, time.Duration, error) {
	d := &decision{r: r, ctx: ctx, cv: cv, st: st, now: metav1.NewTime(r.now())}
	for _, s := range []step{d.observe, d.stopped, d.reverting, d.settled, d.cluster, d.planRoute, d.held, d.outsideWindow} {
		if done, next, err := s(); done {
			return next, d.wait, err
		}
	}
	return d.start(), 0, nil
}

// outsideWindow holds an upgrade while spec.maintenanceWindows are
// closed, saying when the next opens, and decides again then: one that
// has not started (Idle, the plan that waits shown), and one whose run
// stopped partway (Paused, at the end of a window or by a restart),
// which resumes in the next window.
func (d *decision) outsideWindow() (bool, *plan, error) {
	cv, st := d.cv, d.st
	if d.revert {
		return false, nil, nil // a rollback restores what was changed: not held
	}
	cal, err := d.r.windowsOf(d.ctx, cv)
	if err != nil {
		d.r.failing(cv, st, "InvalidMaintenanceWindow", err.Error())
		if !d.inFlight {
			st.Phase = v1alpha1.PhaseIdle
		}
		return decided()
	}
	d.window = cal
	now := d.now.Time
	if open, _ := cal.Open(now); open || cal.Always() {
		return false, nil, nil
	}
	next := cal.NextOpen(now)
	if !next.IsZero() {
		d.wait = max(next.Sub(now), time.Second)
	}
	setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
	if d.inFlight {
		// The plan keeps its progress; a run that was Upgrading when
		// its process stopped is Paused like one the window stopped.
		if st.Phase == v1alpha1.PhaseUpgrading {
			st.Phase = v1alpha1.PhasePaused
		}
		setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "WaitingForMaintenanceWindow", cal.windowStopMessage(st, d.to.String(), next))
		return decided()
	}
	// Show the upgrade that waits to start; the hop a stopped run left
	// partway stays named.
	st.Phase = v1alpha1.PhaseIdle
	st.Plan = summary(d.p, nil, d.target)
	st.Plan.Partial = d.ph
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "WaitingForMaintenanceWindow",
		"the upgrade to "+d.to.String()+" waits for a maintenance window ("+cal.named+"): "+cal.nextOpening(next))
	return decided()
}

// decided is a step's answer that the decision is taken, with nothing to
// start.
func decided() (bool, *plan, error) { return true, nil, nil }

// observe loads the catalog and writes what holds whatever happens next:
// the reachable updates and the Available condition.
func (d *decision) observe() (bool, *plan, error) {
	r, cv, st := d.r, d.cv, d.st
	cat, err := r.catalogs.Load(d.ctx, r.client, cv.Namespace)
	if err != nil {
		if !errors.Is(err, release.ErrInvalidCatalog) {
			return true, nil, err
		}
		listed{}.setIn(st)
		if meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionAvailable) == nil {
			// Never observed: whether the catalog has the current version
			// cannot be told until it loads.
			setCondition(st, cv, v1alpha1.ConditionAvailable, metav1.ConditionUnknown, "CatalogInvalid",
				"the catalog in namespace "+cv.Namespace+" does not load (see Failing), so whether it has "+st.CurrentVersion+" is not known")
		}
		r.failing(cv, st, "CatalogInvalid", err.Error())
		return decided()
	}
	d.cat = cat
	if d.current, err = parsePosition(st.CurrentVersion); err != nil {
		r.failing(cv, st, "UnknownVersion", err.Error())
		return decided()
	}
	if d.desired, err = parsePosition(st.DesiredVersion); err != nil {
		r.failing(cv, st, "UnknownVersion", err.Error())
		return decided()
	}
	l, uerr := r.updates.get(cv, cat, d.current)
	l.setIn(st)
	if ok, missing := known(cat, cv.Spec.Track, d.current); ok {
		setCondition(st, cv, v1alpha1.ConditionAvailable, metav1.ConditionTrue, "AsExpected", "the system runs "+d.current.String())
	} else {
		if uerr != nil {
			missing = uerr.Error()
		}
		setCondition(st, cv, v1alpha1.ConditionAvailable, metav1.ConditionFalse, "UnknownVersion", missing)
	}
	d.ph = partialOf(st)
	if d.ph != nil {
		setCondition(st, cv, v1alpha1.ConditionAvailable, metav1.ConditionTrue, "BetweenVersions", between(d.current.String(), d.ph))
	}
	return false, nil, nil
}

// stopped finds the upgrade in flight, if any, and ends it when the spec
// abandoned it, or aborted or redirected it while its run was stopped.
func (d *decision) stopped() (bool, *plan, error) {
	r, cv, st := d.r, d.cv, d.st
	// In flight: a run started and did not end. A Failed run's entry is
	// closed (a retry opens it again); the others' is open, so that a
	// ClusterVersion paused before its upgrade started (the plan shown is
	// then the one that waits to start) is not taken for one.
	d.inFlight = st.Plan != nil && (st.Phase == v1alpha1.PhaseFailed ||
		(st.Phase == v1alpha1.PhaseUpgrading || st.Phase == v1alpha1.PhasePaused || st.Phase == v1alpha1.PhaseWaitingForApproval) && openHistory(st))
	d.from, d.to, d.target = d.current, d.desired, d.desired.String()
	if !d.inFlight {
		return false, nil, nil
	}
	d.from, _ = parsePosition(st.Plan.From) // written by summary: they parse
	d.to, _ = parsePosition(st.Plan.To)
	d.target = cmp.Or(st.Plan.Target, st.Plan.To) // a status written before Target existed
	switch {
	case cv.Spec.Abandon != nil:
		return true, nil, r.abandon(d.ctx, cv, st, cv.Spec.Abandon.Reason)
	case !samePosition(d.target, d.desired.String()):
		// Aborted (desired back to the start) or redirected while the
		// run was stopped: this upgrade ends here, Partial.
		msg := "aborted: desiredVersion set back to " + d.desired.String()
		reason := "UpgradeAborted"
		if !d.from.satisfies(d.desired) {
			msg, reason = "superseded: desiredVersion changed to "+d.desired.String(), "UpgradeSuperseded"
		}
		if d.ph != nil {
			msg += "; " + between(d.current.String(), d.ph)
		}
		if st.Phase == v1alpha1.PhaseFailed && len(st.History) > 0 && st.History[0].State == v1alpha1.HistoryFailed && st.History[0].Message != "" {
			msg += "; it had failed: " + st.History[0].Message // what failed stays said
		}
		endHistory(st, v1alpha1.HistoryPartial, msg, d.now)
		st.Plan.Phase = string(record.Cancelled)
		st.Phase = v1alpha1.PhaseIdle
		r.event(cv, "Normal", reason, "Abort", msg)
		d.inFlight = false
		d.from, d.to, d.target = d.current, d.desired, d.desired.String()
	}
	return false, nil, nil
}

// settled reports the cases with nothing to run: abandoned, rolled back,
// at the target, or back from an abort that reached a later version.
func (d *decision) settled() (bool, *plan, error) {
	cv, st, from, to, ph := d.cv, d.st, d.from, d.to, d.ph
	if st.Phase == v1alpha1.PhaseAbandoned && cv.Spec.Abandon != nil {
		// Stays abandoned until the spec asks for another upgrade: a new
		// target alone does not, and the status says so.
		if st.Plan != nil && !from.satisfies(to) && !samePosition(cmp.Or(st.Plan.Target, st.Plan.To), d.desired.String()) {
			setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "Abandoned", fmt.Sprintf(
				"abandoned: %s; spec.abandon is still set, so the upgrade to %s does not start: clear spec.abandon to start it", cv.Spec.Abandon.Reason, d.desired))
		}
		return decided()
	}
	if st.Phase == v1alpha1.PhaseRolledBack && !from.satisfies(to) && endedFor(cv, st, v1alpha1.ConditionFailing, "UpgradeRolledBack") {
		return decided() // a new upgrade starts at the next spec change
	}
	if !d.inFlight && from.satisfies(to) {
		st.Phase = v1alpha1.PhaseIdle
		msg := "the system runs " + from.String()
		if ph != nil {
			msg = between(from.String(), ph) + "; " + finishHop(ph)
		}
		setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "AsExpected", msg)
		setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
		return decided()
	}
	if !d.inFlight && to.before(from) && len(st.History) > 0 && abortEnded(st.History[0]) && setsBack(st.History[0].From, to.String()) {
		// An abort that stopped after a hop had completed: the system runs
		// a later version than the one the upgrade started from, and
		// going back is a downgrade. The abort did what it could; say
		// what to set instead of failing on the downgrade.
		st.Phase = v1alpha1.PhaseIdle
		msg := fmt.Sprintf("the upgrade from %s was aborted after reaching %s, and going back to %s is a downgrade, which is refused: set desiredVersion to %s to accept where the system is, or to a later version to go on",
			to, from, to, from)
		if ph != nil {
			msg = fmt.Sprintf("the upgrade from %s was aborted after reaching %s, partway through the hop after it: %s; going back to %s is a downgrade, which is refused: %s",
				to, from, between(from.String(), ph), to, finishHop(ph))
		}
		setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "UpgradeAborted", msg)
		setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
		return decided()
	}
	return false, nil, nil
}

// planRoute resolves the route from -> to and plans it; a route or plan
// that fails is said in Failing.
func (d *decision) planRoute() (bool, *plan, error) {
	r, cv, st := d.r, d.cv, d.st
	// The route first, alone: no route is said before the runner (for a
	// workload cluster, its client) is made.
	if _, err := resolve(d.cat, &cv.Spec, d.from, d.to); err != nil {
		reason := "NoRoute"
		switch {
		case errors.Is(err, path.ErrUnknownVersion):
			reason = "UnknownVersion"
		case errors.Is(err, path.ErrUnknownTrack):
			reason = "UnknownTrack"
		}
		if d.inFlight {
			// The upgrade cannot go on: it is Failed, and a retry (once
			// the catalog has a route again) is asked like any other.
			r.failing(cv, st, reason, withNext(err.Error(), failedNext(st.Plan.From)))
			st.Phase, st.ObservedRetry = v1alpha1.PhaseFailed, cv.Spec.Retry
		} else {
			r.failing(cv, st, reason, err.Error())
			st.Phase = v1alpha1.PhaseIdle
		}
		return decided()
	}
	exec := runner.New(d.rn, r.executorOptions(cv)...)
	var err error
	if d.p, err = planOf(d.cat, &cv.Spec, d.from, d.to, runner.ForExecutor(exec)); err != nil {
		r.failing(cv, st, "PlanInvalid", err.Error())
		return decided()
	}
	if first := summary(d.p, nil, d.target).Hops; !d.inFlight && d.ph != nil && (len(first) == 0 || first[0] != d.ph.Hop) {
		// The components the stopped hop completed run its target's
		// versions: a route that does not start with that hop would
		// take them to versions planned from the release before it.
		r.failing(cv, st, "BetweenVersions", fmt.Sprintf("%s; the route to %s does not start with hop %s, so it would take those components back or past versions it was not planned from: %s", between(d.from.String(), d.ph), d.to, d.ph.Hop, finishHop(d.ph)))
		st.Phase = v1alpha1.PhaseIdle
		return decided()
	}
	return false, nil, nil
}

// held reports what keeps a planned upgrade from running now: an abandon
// with nothing to abandon, a failure not yet retried, a pause, an
// approval not given, the until step; it records a retry.
func (d *decision) held() (bool, *plan, error) {
	r, cv, st, to := d.r, d.cv, d.st, d.to
	if !d.inFlight && cv.Spec.Abandon != nil {
		// An abandon request with no upgrade running (set together with
		// the new target, or before it): there is nothing to abandon, and
		// an upgrade started now would be abandoned at once. Nothing
		// starts until it is cleared; the status says so, and one Event
		// per message (not one per reconcile).
		msg := "spec.abandon is set and no upgrade is running: nothing to abandon; clear spec.abandon to start the upgrade to " + to.String()
		if p := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); p == nil || p.Reason != "NothingToAbandon" || p.Message != msg {
			r.event(cv, "Warning", "NothingToAbandon", "Abandon", msg)
		}
		setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "NothingToAbandon", msg)
		if st.Phase != v1alpha1.PhaseRolledBack { // a rollback's phase and Failing stay, saying what failed
			st.Phase = v1alpha1.PhaseIdle
			setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
		}
		return decided()
	}
	if d.inFlight && st.Phase == v1alpha1.PhaseFailed && !d.revert {
		if cv.Spec.Retry == st.ObservedRetry {
			return decided() // until spec.retry changes (the Failing message says so)
		}
		// A retry: recorded before the run starts, so that it is acted on
		// once. The run resumes from its record, retrying what failed.
		d.retry, st.ObservedRetry = true, cv.Spec.Retry
		if len(st.History) > 0 {
			st.History[0].State, st.History[0].CompletionTime, st.History[0].Message = v1alpha1.HistoryPartial, nil, ""
		}
		r.event(cv, "Normal", "UpgradeRetried", "Retry", fmt.Sprintf("spec.retry %d: retrying the upgrade %s -> %s at %s", cv.Spec.Retry, d.from, to, st.Plan.Progress.Summary))
	}
	if cv.Spec.Paused {
		st.Phase = v1alpha1.PhasePaused
		msg := "paused before the upgrade to " + to.String() + " started; clear spec.paused to start it"
		if d.revert {
			msg = revertPausedMessage(cv, st, d.from.String(), to.String())
		} else if d.inFlight {
			msg = pausedMessage(st, to.String())
		} else {
			// Show the upgrade that waits to start, not the last one;
			// the hop a stopped run left partway stays named.
			st.Plan = summary(d.p, nil, d.target)
			st.Plan.Partial = d.ph
		}
		setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "Paused", msg)
		setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
		return decided()
	}
	if d.inFlight && st.Phase == v1alpha1.PhaseWaitingForApproval && !d.revert {
		dropGoneStale(cv, st.Plan)
		if !approvable(cv, st.Plan) {
			d.waitForApproval()
			return decided()
		}
	}
	if d.inFlight && st.Phase == v1alpha1.PhasePaused && !d.revert && endedFor(cv, st, v1alpha1.ConditionProgressing, "UntilReached") {
		return decided() // stopped at the until step: resumed by the next spec change (spec.until cleared or moved)
	}
	return false, nil, nil
}

// waitForApproval says what the upgrade waits for, until spec.approvals
// names a step that waits; an entry naming another step (a typo, a
// later gate), or left from before the step waited, is shown, not
// ignored.
func (d *decision) waitForApproval() {
	r, cv, st := d.r, d.cv, d.st
	msg := waitingMessage(st.Plan.Waiting)
	stray, stale := strayApprovals(cv, st.Plan), staleApprovals(st.Plan)
	if len(stray) > 0 {
		msg = fmt.Sprintf("%s (spec.approvals names %s, which %s)", msg, strings.Join(stray, ", "), english.Choose(len(stray), "does not wait now and approves nothing until it does", "do not wait now and approve nothing until they do"))
	}
	if len(stale) > 0 {
		msg = fmt.Sprintf("%s (spec.approvals names %s from before the step waited, left from an earlier upgrade: an entry approves only once its step waits; remove the entry and add it again to approve)", msg, strings.Join(stale, ", "))
	}
	if len(stray) > 0 || len(stale) > 0 {
		if p := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); p == nil || p.Message != msg {
			r.event(cv, "Warning", "ApprovalNotWaiting", "Approve", msg)
		}
	}
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "WaitingForApproval", msg)
}

// start writes the status of an upgrade that starts (or resumes) now and
// returns its run.
func (d *decision) start() *plan {
	cv, st := d.cv, d.st
	if d.revert {
		d.startRevert()
	} else if !d.inFlight {
		st.Plan = summary(d.p, nil, d.target)
		st.History = append([]v1alpha1.UpdateHistory{{From: d.from.String(), To: d.to.String(), State: v1alpha1.HistoryPartial, StartedTime: d.now}}, st.History...)
		if len(st.History) > maxHistory {
			st.History = st.History[:maxHistory]
		}
	}
	st.Phase = v1alpha1.PhaseUpgrading
	// What a run that stopped was retrying is not this run's (it runs
	// those components again, when their turn comes).
	st.Plan.Retrying, st.Plan.Progress.Retrying = nil, 0
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionTrue, "Upgrading", progressing(st.Plan))
	if !storeFailing(st) { // cleared once the run has its record (run.execute)
		setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
	}
	return &plan{key: types.NamespacedName{Namespace: cv.Namespace, Name: cv.Name}, cv: cv.DeepCopy(), plan: d.p, runner: d.rn, target: d.target, fresh: !d.inFlight, retry: d.retry, window: d.window, revert: d.revert}
}
