package fleet_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/fleet"
)

// TestRolloutWindows: a cluster starts only while the rollout's
// maintenance windows and its own ClusterVersion's are open. With the
// rollout's closed nothing starts; with one cluster's closed the others
// of its wave go on and it waits, Pending, its entry saying when its
// window opens, without taking a place of maxConcurrency (it has not
// started, so progressDeadline does not run for it either).
func TestRolloutWindows(t *testing.T) {
	needAPIServer(t)
	// Closed now: the first of January, 03:00 to 04:00 UTC.
	closed := []v1alpha1.MaintenanceWindow{{Schedule: "0 3 1 1 *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "UTC"}}
	next := nextNewYear(time.Now())
	tests := []struct {
		name    string
		rollout []v1alpha1.MaintenanceWindow // the rollout's windows
		own     string                       // the cluster whose own windows are closed
		started []string
	}{
		{name: "the rollout's window closed", rollout: closed},
		{name: "a cluster's window closed", own: "c2", started: []string{"c1", "c3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t)
			ns := newFleet(t, c, 3)
			if tt.own != "" {
				require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
					cv := getCV(t, c, ns, tt.own)
					cv.Spec.MaintenanceWindows = closed
					return c.Update(context.Background(), cv)
				}))
			}
			management(t, c, ns)
			require.NoError(t, c.Create(context.Background(), newRollout(ns, func(s *v1alpha1.UpgradeRolloutSpec) {
				s.MaintenanceWindows = tt.rollout
			})))
			ur := watchFleet(t, c, ns, 2, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool {
				return ur.Status.Phase == "WaitingForWindow" && ur.Status.Counts.Upgrading == 0
			})
			for _, name := range []string{"c1", "c2", "c3"} {
				cv := getCV(t, c, ns, name)
				if slices.Contains(tt.started, name) {
					assert.NotEmpty(t, cv.Annotations[fleet.Started], name)
					assert.Equal(t, "v26.06", cv.Status.CurrentVersion, name)
					continue
				}
				assert.Empty(t, cv.Annotations[fleet.Started], "%s started while its window was closed", name)
				assert.Equal(t, v1alpha1.Target("v26.06-rc.2"), cv.Spec.DesiredVersion, name)
			}
			waiting := tt.own
			if waiting == "" {
				waiting = "c1" // the canary waits first
			}
			cs := clusterOf(ur, waiting)
			assert.Equal(t, "Pending", cs.State)
			assert.Equal(t, "WaitingForWindow", cs.Reason)
			require.NotNil(t, cs.NextWindow, "%s says when its window opens", waiting)
			assert.True(t, cs.NextWindow.Time.Equal(next), "next window %s, want %s", cs.NextWindow.Time, next)
			p := meta.FindStatusCondition(ur.Status.Conditions, "Progressing")
			require.NotNil(t, p)
			assert.Contains(t, p.Message, next.Format(time.RFC3339))
			time.Sleep(2 * time.Second)
			assert.Empty(t, getCV(t, c, ns, waiting).Annotations[fleet.Started], "still waiting")
		})
	}
}

// nextNewYear is the next first of January, 03:00 UTC, after now.
func nextNewYear(now time.Time) time.Time {
	t := time.Date(now.UTC().Year()+1, 1, 1, 3, 0, 0, 0, time.UTC)
	if y := time.Date(now.UTC().Year(), 1, 1, 3, 0, 0, 0, time.UTC); y.After(now) {
		t = y
	}
	return t
}
