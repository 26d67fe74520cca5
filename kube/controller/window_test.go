package controller_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
)

// TestMaintenanceWindow: an upgrade set while the ClusterVersion's
// maintenance window is closed waits, saying when the window opens, and
// runs nothing; once the clock is inside the window it starts and
// completes. A window that does not parse fails, naming the field.
func TestMaintenanceWindow(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	var clock atomic.Pointer[time.Time]
	set := func(s string) {
		tm, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		clock.Store(&tm)
	}
	set("2026-12-07T10:00:00Z")
	op := startOperator(t, opConfig{opts: []controller.Option{controller.WithClock(func() time.Time { return *clock.Load() })}})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.06-rc.3")
	// New Year's night, 00:00-02:00 in Paris.
	cv.Spec.MaintenanceWindows = []v1alpha1.MaintenanceWindow{{Schedule: "0 0 1 1 *", Duration: metav1.Duration{Duration: 2 * time.Hour}, TimeZone: "Europe/Paris"}}
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 30*time.Second, "waiting for its window", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return p != nil && p.Reason == "WaitingForMaintenanceWindow"
	})
	p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Equal(t, "the upgrade to v26.06-rc.3 waits for a maintenance window (spec.maintenanceWindows): the next opens at 2026-12-31T23:00:00Z", p.Message)
	assert.Equal(t, v1alpha1.PhaseIdle, got.Status.Phase)
	require.NotNil(t, got.Status.Plan, "the plan that waits is shown")
	assert.Empty(t, op.runner.Records(), "nothing ran outside the window")

	set("2026-12-31T23:30:00Z")
	require.NoError(t, updateSpec(c, key, func(s *v1alpha1.ClusterVersionSpec) { s.AcceptRisks = []string{"none"} })) // any change reconciles
	waitFor(t, c, key, 60*time.Second, "at v26.06-rc.3", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.06-rc.3" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	assert.NotEmpty(t, op.runner.Records())

	bad := newCV(ns, "v26.06-rc.2", "v26.06-rc.3")
	bad.Name = "bad-window"
	bad.Spec.MaintenanceWindows = []v1alpha1.MaintenanceWindow{{Schedule: "0 2 * *", Duration: metav1.Duration{Duration: time.Hour}}}
	require.NoError(t, c.Create(ctx, bad))
	got = waitFor(t, c, client.ObjectKeyFromObject(bad), 30*time.Second, "Failing InvalidMaintenanceWindow", func(cv *v1alpha1.ClusterVersion) bool {
		f := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionFailing)
		return f != nil && f.Reason == "InvalidMaintenanceWindow"
	})
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	assert.Contains(t, f.Message, "ClusterVersion "+ns+"/bad-window: spec.maintenanceWindows: window 0: schedule \"0 2 * *\"")
}
