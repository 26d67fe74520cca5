package controller

import (
	"fmt"
	"time"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/internal/windows"
	"github.com/hopdag/hopdag/kube/rollout"
)

// calendarOf compiles spec.maintenanceWindows (nil: none, always open).
func calendarOf(cv *v1alpha1.ClusterVersion) (*rollout.Calendar, error) {
	return windows.Calendar(cv.Spec.MaintenanceWindows)
}

// nextOpening says when the next window opens, as "opens at T" (UTC), or
// that none ever does.
func nextOpening(next time.Time) string {
	if next.IsZero() {
		return "none ever opens; change spec.maintenanceWindows"
	}
	return "the next opens at " + next.UTC().Format(time.RFC3339)
}

// windowStopMessage says where a run that the end of its maintenance
// window stopped is, and when it goes on.
func windowStopMessage(st *v1alpha1.ClusterVersionStatus, to string, next time.Time) string {
	msg := fmt.Sprintf("stopped at %s components toward %s: the maintenance window (spec.maintenanceWindows) closed, the hop in progress finished and the next starts in the next window: %s",
		st.Plan.Progress.Summary, to, nextOpening(next))
	if ph := partialOf(st); ph != nil {
		msg += "; " + between(st.CurrentVersion, ph)
	}
	return msg
}
