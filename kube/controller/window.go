package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/internal/windows"
	"github.com/hopdag/hopdag/kube/rollout"
)

// runWindows are the maintenance windows an upgrade keeps within: the
// ClusterVersion's spec.maintenanceWindows and, when an UpgradeRollout
// set its desiredVersion (v1alpha1.RolloutAnnotation), the rollout's;
// named says which, for the messages.
type runWindows struct {
	rollout.Windows
	named string
}

// windowsOf compiles cv's maintenance windows and those of the
// UpgradeRollout that set its desiredVersion, if it still targets it (a
// rollout deleted, or of another target now, bounds nothing). An error
// names the windows that do not compile.
func (r *Reconciler) windowsOf(ctx context.Context, cv *v1alpha1.ClusterVersion) (runWindows, error) {
	own, err := windows.Calendar(cv.Spec.MaintenanceWindows)
	if err != nil {
		return runWindows{}, fmt.Errorf("ClusterVersion %s/%s: spec.maintenanceWindows: %w", cv.Namespace, cv.Name, err)
	}
	w := runWindows{Windows: rollout.Windows{own}, named: "spec.maintenanceWindows"}
	ref := cv.Annotations[v1alpha1.RolloutAnnotation]
	if ref == "" {
		return w, nil
	}
	key := types.NamespacedName{Namespace: cv.Namespace, Name: ref}
	if ns, name, ok := strings.Cut(ref, "/"); ok {
		key = types.NamespacedName{Namespace: ns, Name: name}
	}
	var ur v1alpha1.UpgradeRollout
	if err := r.client.Get(ctx, key, &ur); err != nil {
		// Gone, or no UpgradeRollout kind: it bounds nothing.
		if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			r.logger.Warn("controller: reading the UpgradeRollout that started the ClusterVersion, for its maintenance windows; going by the ClusterVersion's own",
				"clusterversion", keyOf(cv), "upgraderollout", key, "error", err)
		}
		return w, nil
	}
	if string(ur.Spec.DesiredVersion) != string(cv.Spec.DesiredVersion) || len(ur.Spec.MaintenanceWindows) == 0 {
		return w, nil
	}
	theirs, err := windows.Calendar(ur.Spec.MaintenanceWindows)
	if err != nil {
		return runWindows{}, fmt.Errorf("UpgradeRollout %s/%s (which started ClusterVersion %s): spec.maintenanceWindows: %w", ur.Namespace, ur.Name, cv.Name, err)
	}
	w.Windows = append(w.Windows, theirs)
	w.named = "UpgradeRollout " + ref + "'s spec.maintenanceWindows"
	if !own.Always() {
		w.named = "spec.maintenanceWindows and " + w.named
	}
	return w, nil
}

// nextOpening says when the next window of w opens, as "opens at T"
// (UTC), or that none ever does.
func (w runWindows) nextOpening(next time.Time) string {
	if next.IsZero() {
		return "none ever opens; change " + w.named
	}
	return "the next opens at " + next.UTC().Format(time.RFC3339)
}

// windowStopMessage says where a run that the end of its maintenance
// window stopped is, and when it goes on.
func (w runWindows) windowStopMessage(st *v1alpha1.ClusterVersionStatus, to string, next time.Time) string {
	msg := fmt.Sprintf("stopped at %s components toward %s: the maintenance window (%s) closed, the hop in progress finished and the next starts in the next window: %s",
		st.Plan.Progress.Summary, to, w.named, w.nextOpening(next))
	if ph := partialOf(st); ph != nil {
		msg += "; " + between(st.CurrentVersion, ph)
	}
	return msg
}
