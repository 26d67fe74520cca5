package controller_test

import (
	"context"
	"fmt"
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
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// settableClock is a clock for controller.WithClock, and set, which sets
// it to an RFC 3339 time (set it before the first read).
func settableClock(t *testing.T) (set func(string), now func() time.Time) {
	var clock atomic.Pointer[time.Time]
	set = func(s string) {
		tm, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		clock.Store(&tm)
	}
	return set, func() time.Time { return *clock.Load() }
}

// TestMaintenanceWindow: an upgrade set while the ClusterVersion's
// maintenance window is closed waits, saying when the window opens, and
// runs nothing; once the clock is inside the window it starts and
// completes. A window that does not parse fails, naming the field.
func TestMaintenanceWindow(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	set, now := settableClock(t)
	set("2026-12-07T10:00:00Z")
	op := startOperator(t, opConfig{opts: []controller.Option{controller.WithClock(now)}})
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

// TestMaintenanceWindowEnds: the window closes during the first of three
// hops. That hop finishes (its components not yet started too: its
// provider, of the second batch, starts after the close), the second does
// not start: the ClusterVersion is Paused between releases, its Progressing
// condition and an UpgradePaused Event say the window closed and when the
// next opens. A reconcile outside the window leaves it there; in the next
// window it resumes and completes, running no component twice.
func TestMaintenanceWindowEnds(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	set, now := settableClock(t)
	// Saturdays 02:00-06:00 in Paris: 01:00-05:00 UTC in December.
	set("2026-12-12T04:59:00Z")
	rn := runnertest.New()
	rn.OnStart = func(tk runner.Task) {
		if tk.HopIndex == 0 && tk.Component == "provider" {
			set("2026-12-12T05:00:00Z") // the window closes while hop 1 runs
		}
	}
	startOperator(t, opConfig{rn: rn, opts: []controller.Option{controller.WithClock(now)}})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	cv.Spec.MaintenanceWindows = []v1alpha1.MaintenanceWindow{{Schedule: "0 2 * * SAT", Duration: metav1.Duration{Duration: 4 * time.Hour}, TimeZone: "Europe/Paris"}}
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)

	got := waitFor(t, c, key, 60*time.Second, "paused after hop 1", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return cv.Status.Phase == v1alpha1.PhasePaused && p != nil && p.Reason == "WaitingForMaintenanceWindow"
	})
	assert.Equal(t, "v26.06-rc.3", got.Status.CurrentVersion, "hop 1, in progress when the window closed, finished")
	assert.Nil(t, got.Status.Plan.Partial, "no hop stopped partway")
	p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Equal(t, "stopped at 7/19 components toward v26.09: the maintenance window (spec.maintenanceWindows) closed, the hop in progress finished and the next starts in the next window: the next opens at 2026-12-19T01:00:00Z", p.Message)
	hop1 := map[string]bool{}
	for _, r := range rn.Records() {
		assert.NoError(t, r.Err, "component %s was interrupted", r.Component)
		assert.Equal(t, 0, r.Hop, "%s ran on hop %d, after the window closed", r.Component, r.Hop+1)
		hop1[r.Component] = true
	}
	assert.True(t, hop1["provider"], "hop 1's provider, started as the window closed, ran")
	require.Eventually(t, func() bool { return len(eventNotes(t, c, ns, "UpgradePaused")) > 0 }, 10*time.Second, 50*time.Millisecond, "the UpgradePaused Event")
	assert.Equal(t, []string{p.Message}, eventNotes(t, c, ns, "UpgradePaused"))

	// Outside the window a reconcile resumes nothing.
	n := len(rn.Records())
	set("2026-12-15T12:00:00Z")
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.AcceptRisks = []string{"none"} })
	waitFor(t, c, key, 30*time.Second, "the spec change observed", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return cv.Status.ObservedGeneration == cv.Generation && cv.Status.Phase == v1alpha1.PhasePaused && p != nil && p.Reason == "WaitingForMaintenanceWindow"
	})
	assert.Len(t, rn.Records(), n, "nothing ran outside the window")

	// In the next window it resumes where it stopped.
	set("2026-12-19T01:30:00Z")
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.AcceptRisks = nil })
	got = waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	assert.Equal(t, v1alpha1.HistoryCompleted, got.Status.History[0].State)
	assert.Equal(t, "v26.06-rc.2", got.Status.History[0].From, "one upgrade, from where it started")
	seen := map[string]bool{}
	for _, r := range rn.Records() {
		k := fmt.Sprintf("hop %d %s", r.Hop+1, r.Component)
		assert.False(t, seen[k], "%s ran twice", k)
		seen[k] = true
	}
}

// TestRolloutWindowsBoundEachHop: the maintenance windows of the
// UpgradeRollout that set a ClusterVersion's desiredVersion bound each
// hop of its upgrade, as the ClusterVersion's own do: the window closes
// during hop 1, hop 1 finishes, the ClusterVersion is Paused between
// releases naming the rollout's windows, and it resumes in the rollout's
// next window, running no component twice. (The rollout's windows only
// held clusters' starts: a cluster started in them ran every hop after
// they closed.)
func TestRolloutWindowsBoundEachHop(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	set, now := settableClock(t)
	// Saturdays 02:00-06:00 in Paris: 01:00-05:00 UTC in December.
	set("2026-12-12T04:59:00Z")
	rn := runnertest.New()
	rn.OnStart = func(tk runner.Task) {
		if tk.HopIndex == 0 && tk.Component == "provider" {
			set("2026-12-12T05:00:00Z") // the window closes while hop 1 runs
		}
	}
	ctx := context.Background()
	// The rollout, as the fleet controller would have it (no fleet
	// controller runs here: the ClusterVersion reconciler reads it).
	require.NoError(t, c.Create(ctx, &v1alpha1.UpgradeRollout{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"},
		Spec: v1alpha1.UpgradeRolloutSpec{DesiredVersion: "v26.09", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Schedule: "0 2 * * SAT", Duration: metav1.Duration{Duration: 4 * time.Hour}, TimeZone: "Europe/Paris"}}}}))
	startOperator(t, opConfig{rn: rn, opts: []controller.Option{controller.WithClock(now)}})
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	cv.Annotations = map[string]string{v1alpha1.RolloutAnnotation: "fleet"}
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)

	got := waitFor(t, c, key, 60*time.Second, "paused after hop 1", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return cv.Status.Phase == v1alpha1.PhasePaused && p != nil && p.Reason == "WaitingForMaintenanceWindow"
	})
	assert.Equal(t, "v26.06-rc.3", got.Status.CurrentVersion, "hop 1, in progress when the window closed, finished")
	p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Equal(t, "stopped at 7/19 components toward v26.09: the maintenance window (UpgradeRollout fleet's spec.maintenanceWindows) closed, the hop in progress finished and the next starts in the next window: the next opens at 2026-12-19T01:00:00Z", p.Message)
	for _, r := range rn.Records() {
		assert.Equal(t, 0, r.Hop, "%s ran on hop %d, after the rollout's window closed", r.Component, r.Hop+1)
	}

	// A rollout's window that opens resumes it; a ClusterVersion's own
	// window, closed then, would still hold it (both must be open).
	set("2026-12-19T01:30:00Z")
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.AcceptRisks = []string{"none"} })
	got = waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	assert.Equal(t, "v26.06-rc.2", got.Status.History[0].From, "one upgrade, from where it started")
	seen := map[string]bool{}
	for _, r := range rn.Records() {
		k := fmt.Sprintf("hop %d %s", r.Hop+1, r.Component)
		assert.False(t, seen[k], "%s ran twice", k)
		seen[k] = true
	}
}
