// Package windows compiles the maintenance windows of the API
// (v1alpha1.MaintenanceWindow, on a ClusterVersion and on an
// UpgradeRollout) into the calendar kube/rollout decides with, in one
// place for the ClusterVersion reconciler and the rollout controller.
package windows

import (
	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/rollout"
)

// Calendar compiles ws; none is nil, a calendar always open.
func Calendar(ws []v1alpha1.MaintenanceWindow) (*rollout.Calendar, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	out := make([]rollout.Window, len(ws))
	for i, w := range ws {
		out[i] = rollout.Window{Schedule: w.Schedule, Duration: w.Duration.Duration, TimeZone: w.TimeZone}
	}
	return rollout.Compile(out)
}
