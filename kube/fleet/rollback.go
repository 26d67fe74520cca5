package fleet

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// RollbackBy names the UpgradeRollout that asked a ClusterVersion to
// roll back (spec.abort with spec.rollback Failed); it is written with
// the request, in one patch, so that each is asked once.
const RollbackBy = "hopdag.io/rollout-rollback"

// rollBack asks, when ur is aborted with spec.rollback Failed, every
// ClusterVersion ur started whose upgrade to ur's target failed (phase
// Failed) to roll back: its run is resumed (spec.retry) with
// spec.onFailure RollbackRun, so that once its failed component fails
// again the run rolls back through its DAG, hop by hop, to the version
// it started from. A RollbackStarted Event names each.
func (r *Reconciler) rollBack(ctx context.Context, ur *v1alpha1.UpgradeRollout, cvs []v1alpha1.ClusterVersion) error {
	if !ur.Spec.Abort || ur.Spec.Rollback != "Failed" {
		return nil
	}
	for i := range cvs {
		cv := &cvs[i]
		if cv.Annotations[Rollout] != ur.Name || cv.Annotations[RollbackBy] != "" ||
			cv.Status.Phase != v1alpha1.PhaseFailed || cv.Spec.DesiredVersion != ur.Spec.DesiredVersion {
			continue
		}
		cv = cv.DeepCopy() // the cache's
		orig := cv.DeepCopy()
		cv.Spec.OnFailure = "RollbackRun"
		cv.Spec.Retry = max(cv.Spec.Retry, cv.Status.ObservedRetry) + 1
		cv.Annotations[RollbackBy] = ur.Name
		if err := r.client.Patch(ctx, cv, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("fleet: UpgradeRollout %s/%s: rolling back ClusterVersion %s: %w", ur.Namespace, ur.Name, cv.Name, err)
		}
		from := ""
		if len(cv.Status.History) > 0 {
			from = " to " + cv.Status.History[0].From
		}
		r.event(ur, "Warning", "RollbackStarted", fmt.Sprintf("aborted: rolling back %s%s (its upgrade to %s failed; resumed with onFailure RollbackRun)", cv.Name, from, ur.Spec.DesiredVersion))
	}
	return nil
}
