package fleet

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/rollout"
)

// RollbackBy names the UpgradeRollout that asked a ClusterVersion to
// roll back (spec.abort with spec.rollback); it is written with the
// request, in one patch, so that each is asked once.
const RollbackBy = "hopdag.io/rollout-rollback"

// RollbackOfFailed, "true", says that the upgrade a rollout asked to roll
// back (RollbackBy) had failed: the cluster counts as failed; one whose
// upgrade had not failed counts as RolledBack, which is not a failure.
const RollbackOfFailed = "hopdag.io/rollout-rollback-failed"

// rollBack asks, when ur is aborted with spec.rollback, the
// ClusterVersions ur started to roll their upgrade to ur's target back
// (the ClusterVersion's spec.rollback: through each hop's DAG, last hop
// first, to the version it started from): with Failed, those whose
// upgrade failed (failedUpgrade); with Moved, every one whose upgrade
// started, whether it completed, failed or is in progress. A rollback
// is a run like an upgrade, and maxConcurrency bounds both: of the
// fleet's limit (limit), the members d counts in flight take their
// place. Those in flight are asked first (their run turns into the
// rollback, or their soak ends in it: no new place), then those whose
// upgrade failed, then the others, each in name order, as long as places
// are free; the rest wait for a later reconcile (waiting, in that
// order), behind the ones that hold the places (holding: those d counts
// in flight, then those asked now). A RollbackStarted Event names each
// one asked.
func (r *Reconciler) rollBack(ctx context.Context, key types.NamespacedName, ur *v1alpha1.UpgradeRollout, cvs []v1alpha1.ClusterVersion, d rollout.Decision, limit int) (waiting, holding []string, err error) {
	if !ur.Spec.Abort || ur.Spec.Rollback == "" {
		return nil, nil, nil
	}
	inFlight := map[string]bool{}
	for _, m := range d.Members {
		inFlight[m.Key] = m.InFlight
		if m.InFlight {
			holding = append(holding, m.Key)
		}
	}
	type ask struct {
		cv   *v1alpha1.ClusterVersion
		rank int // 0 in flight, 1 failed, 2 the others
	}
	var asks []ask
	for i := range cvs {
		cv := &cvs[i]
		switch {
		case !toRollBack(ur, cv):
		case inFlight[MemberKey(ur, cv)]:
			asks = append(asks, ask{cv, 0})
		case failedUpgrade(cv):
			asks = append(asks, ask{cv, 1})
		default:
			asks = append(asks, ask{cv, 2})
		}
	}
	slices.SortFunc(asks, func(a, b ask) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(MemberKey(ur, a.cv), MemberKey(ur, b.cv)))
	})
	free := limit - d.InFlight
	asked := map[string]string{}
	defer func() { r.expect.expect(key, RollbackBy, asked) }()
	for _, a := range asks {
		if a.rank > 0 {
			if free <= 0 {
				waiting = append(waiting, MemberKey(ur, a.cv))
				continue
			}
			free--
		}
		if err := r.askRollback(ctx, ur, a.cv); err != nil {
			return waiting, holding, err
		}
		asked[MemberKey(ur, a.cv)] = refOf(ur, a.cv)
		if a.rank > 0 {
			holding = append(holding, MemberKey(ur, a.cv))
		}
	}
	return waiting, holding, nil
}

// waitingNote is what the rollout's condition says of the clusters
// waiting to roll back: how many, the limit, and the first ones in
// flight that hold the places (a rollback that does not end, such as one
// whose cluster does not answer, holds its place as an upgrade does).
func waitingNote(waiting, holding []string, limit int, spec rollout.Spec) string {
	note := fmt.Sprintf("; %d waiting to roll back, at most %d in flight at once (maxConcurrency %s)", len(waiting), limit, spec.MaxConcurrency)
	if len(holding) > 0 {
		const show = 5
		names := strings.Join(holding[:min(len(holding), show)], ", ")
		if len(holding) > show {
			names += fmt.Sprintf(" and %d more", len(holding)-show)
		}
		note += ": in flight " + names
	}
	return note
}

// askRollback sets cv's spec.rollback, with the annotations that say
// who asked and whether its upgrade had failed, in one patch conditioned
// on cv as read, and tells it in a RollbackStarted Event.
func (r *Reconciler) askRollback(ctx context.Context, ur *v1alpha1.UpgradeRollout, cv *v1alpha1.ClusterVersion) error {
	cv = cv.DeepCopy() // the cache's
	orig := cv.DeepCopy()
	cv.Spec.Rollback = &v1alpha1.RollbackRequest{Reason: fmt.Sprintf("UpgradeRollout %s aborted with rollback %s", ur.Name, ur.Spec.Rollback)}
	cv.Annotations[RollbackBy] = refOf(ur, cv)
	if failedUpgrade(cv) {
		cv.Annotations[RollbackOfFailed] = "true"
	}
	if err := r.client.Patch(ctx, cv, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("fleet: UpgradeRollout %s/%s: rolling back ClusterVersion %s: %w", ur.Namespace, ur.Name, MemberKey(ur, cv), err)
	}
	h := cv.Status.History[0]
	how := "its upgrade to " + h.To + " failed"
	if !failedUpgrade(cv) {
		how = fmt.Sprintf("its upgrade to %s is %s", h.To, phaseWords(cv.Status.Phase))
	}
	r.eventf(ur, MemberKey(ur, cv), "Warning", "RollbackStarted", "Rollback", "aborted: rolling back %s to %s through its DAG (%s)", MemberKey(ur, cv), h.From, how)
	return nil
}

// toRollBack reports whether cv is one ur, aborted with spec.rollback,
// rolls back and has not asked yet: ur started its upgrade to ur's
// target (its newest history entry), which is neither abandoned nor
// rolled back to where it started, and, with rollback Failed, failed.
func toRollBack(ur *v1alpha1.UpgradeRollout, cv *v1alpha1.ClusterVersion) bool {
	st := &cv.Status
	if cv.Annotations[Rollout] != refOf(ur, cv) || cv.Annotations[Started] == "" || cv.Annotations[RollbackBy] != "" ||
		string(cv.Spec.DesiredVersion) != string(ur.Spec.DesiredVersion) || len(st.History) == 0 ||
		st.History[0].To != string(ur.Spec.DesiredVersion) {
		return false
	}
	switch {
	case st.Phase == v1alpha1.PhaseAbandoned:
		return false
	case st.Phase == v1alpha1.PhaseRolledBack && st.CurrentVersion == st.History[0].From:
		return false // back where it started
	case failedUpgrade(cv):
		return true
	}
	return ur.Spec.Rollback == "Moved"
}

// failedUpgrade reports whether cv's last upgrade failed: Failed, or
// RolledBack by its failure policy short of where it started (a rule's
// or spec.onFailure Rollback leaves the hops before the failed one).
func failedUpgrade(cv *v1alpha1.ClusterVersion) bool {
	st := &cv.Status
	return st.Phase == v1alpha1.PhaseFailed || st.Phase == v1alpha1.PhaseRolledBack
}

// phaseWords is how a phase reads in an Event: completed, or in progress.
func phaseWords(p v1alpha1.Phase) string {
	if p == v1alpha1.PhaseIdle {
		return "completed"
	}
	return "in progress (" + string(p) + ")"
}
