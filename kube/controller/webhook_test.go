package controller_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/release"
)

func TestCheckReachable(t *testing.T) {
	cat, err := release.LoadDir("../../testdata/catalog")
	require.NoError(t, err)
	cv := func(desired string, risks ...string) *v1alpha1.ClusterVersion {
		c := &v1alpha1.ClusterVersion{Spec: v1alpha1.ClusterVersionSpec{DesiredVersion: v1alpha1.Target(desired), AcceptRisks: risks}}
		c.Name = "cluster"
		return c
	}
	tests := []struct {
		name, from string
		cv         *v1alpha1.ClusterVersion
		want       string // "" accepts
	}{
		{"multi-hop target", "v26.06-rc.2", cv("v26.09"), ""},
		{"unknown version", "v26.06-rc.2", cv("v26.07"),
			"v26.07 is not a release of the catalog; reachable from v26.06-rc.2: v26.06-rc.3, v26.06, v26.06.1, v26.09; behind risks: v26.09-rc.1 (accept containerd-v2-config)"},
		{"downgrade", "v26.06", cv("v26.03"), "v26.03 cannot be reached from v26.06; reachable from v26.06: v26.06.1, v26.09; behind risks: v26.09-rc.1 (accept containerd-v2-config)"},
		{"risk not accepted", "v26.06", cv("v26.09-rc.1"), "v26.09-rc.1 cannot be reached from v26.06"},
		{"risk accepted", "v26.06", cv("v26.09-rc.1", "containerd-v2-config"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := controller.CheckReachable(cat, tt.cv, tt.from)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "CheckReachable error is an Invalid status error: %v", err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "spec.desiredVersion")
		})
	}
}

// TestCheckReachableUnknownCurrent: when the version the system runs is
// the unknown one (a typo in installedVersion, a track with no releases),
// the refusal names that field and version, not the desired one, which
// is a release of the catalog.
func TestCheckReachableUnknownCurrent(t *testing.T) {
	cat, err := release.LoadDir("../../testdata/catalog")
	require.NoError(t, err)
	tests := []struct {
		name, installed, track string
		want                   []string
	}{
		{"unknown installed version", "v1.0", "",
			[]string{`spec.installedVersion: Invalid value: "v1.0": v1.0, the version the system runs, is not a release of the catalog`, "nearest known versions: v26.03"}},
		{"track without releases", "v26.06", "nosuch",
			[]string{`spec.track: Invalid value: "nosuch": track nosuch has no releases`, `the catalog's tracks: "" (the default track)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cv := &v1alpha1.ClusterVersion{Spec: v1alpha1.ClusterVersionSpec{InstalledVersion: v1alpha1.Target(tt.installed), DesiredVersion: "v26.06.1", Track: tt.track}}
			cv.Name = "cluster"
			err := controller.CheckReachable(cat, cv, tt.installed)
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err))
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "v26.06.1 is not a release", "v26.06.1 is a release")
		})
	}
}

func TestCheckUpdateAndDelete(t *testing.T) {
	upgrading := &v1alpha1.ClusterVersion{
		Spec: v1alpha1.ClusterVersionSpec{DesiredVersion: "v26.09"},
		Status: v1alpha1.ClusterVersionStatus{Phase: v1alpha1.PhaseUpgrading, CurrentVersion: "v26.06-rc.3", DesiredVersion: "v26.09",
			Plan: &v1alpha1.PlanSummary{From: "v26.06-rc.2", To: "v26.09", Hop: "v26.06-rc.3 -> v26.06", CurrentHop: 1,
				Hops: []string{"v26.06-rc.2 -> v26.06-rc.3", "v26.06-rc.3 -> v26.06", "v26.06 -> v26.09"}, Progress: v1alpha1.Progress{Done: 14, Total: 33, Summary: "14/33"}}},
	}
	upgrading.Name = "cluster"
	to := func(v string) *v1alpha1.ClusterVersion {
		c := upgrading.DeepCopy()
		c.Spec.DesiredVersion = v1alpha1.Target(v)
		return c
	}
	err := controller.CheckUpdate(upgrading, to("v26.06.1"))
	require.Error(t, err, "a new target mid-hop is refused")
	assert.True(t, apierrors.IsInvalid(err))
	assert.Contains(t, err.Error(), "hop v26.06-rc.3 -> v26.06 of the upgrade v26.06-rc.2 -> v26.09 is in progress (14/33 done): desiredVersion may only be set back to v26.06-rc.2")
	assert.Contains(t, err.Error(), "; wait for the upgrade to end, or abandon it (spec.abandon) and then set a new target", "what to do names what allows a new target")
	assert.NotContains(t, err.Error(), "or pause it", "a paused upgrade refuses a new target too")
	assert.NoError(t, controller.CheckUpdate(upgrading, to("v26.06-rc.2")), "the abort is allowed")
	assert.NoError(t, controller.CheckUpdate(upgrading, to("v26.09")), "no change is allowed")
	idle := upgrading.DeepCopy()
	idle.Status.Phase = v1alpha1.PhaseIdle
	assert.NoError(t, controller.CheckUpdate(idle, to("v26.06.1")), "an idle ClusterVersion may change target")
	// Paused or failed mid-hop: the hop's components have moved.
	for _, tc := range []struct {
		phase v1alpha1.Phase
		says  string
	}{
		{v1alpha1.PhasePaused, "is paused (14/33 done): desiredVersion may only be set back to v26.06-rc.2, which aborts the upgrade at the next safe point; resume it (spec.paused: false), or abandon it (spec.abandon) and then set a new target"},
		{v1alpha1.PhaseWaitingForApproval, "waits for approval (14/33 done): desiredVersion may only be set back to v26.06-rc.2, which aborts the upgrade at the next safe point; approve it (spec.approvals"},
		{v1alpha1.PhaseFailed, "failed (14/33 done): desiredVersion may only be set back to v26.06-rc.2"},
	} {
		stopped := upgrading.DeepCopy()
		stopped.Status.Phase = tc.phase
		err := controller.CheckUpdate(stopped, to("v26.06.1"))
		require.Error(t, err, "a new target while %s mid-hop", tc.phase)
		assert.Contains(t, err.Error(), tc.says)
		assert.NoError(t, controller.CheckUpdate(stopped, to("v26.06-rc.2")), "the abort is allowed while %s", tc.phase)
		abandon := to("v26.06.1")
		abandon.Spec.Abandon = &v1alpha1.AbandonRequest{Reason: "give up"}
		assert.NoError(t, controller.CheckUpdate(stopped, abandon), "with an abandon while %s", tc.phase)
		notStarted := stopped.DeepCopy()
		notStarted.Status.Plan.Progress.Done = 0
		assert.NoError(t, controller.CheckUpdate(notStarted, to("v26.06.1")), "%s before the first component", tc.phase)
	}

	err = controller.CheckDelete(upgrading)
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err))
	assert.Contains(t, err.Error(), "hop v26.06-rc.3 -> v26.06 of the upgrade v26.06-rc.2 -> v26.09 is in progress (14/33 done): deleting ClusterVersion")
	assert.NoError(t, controller.CheckDelete(idle))
	waiting := upgrading.DeepCopy()
	waiting.Status.Phase = v1alpha1.PhaseWaitingForApproval
	err = controller.CheckDelete(waiting)
	require.Error(t, err, "deleting an upgrade waiting for approval")
	assert.True(t, apierrors.IsForbidden(err))
	assert.Contains(t, err.Error(), "waits for approval (14/33 done): deleting ClusterVersion")
	notStarted := waiting.DeepCopy()
	notStarted.Status.Plan.Progress.Done = 0
	err = controller.CheckDelete(notStarted)
	require.Error(t, err, "deleting an upgrade waiting for approval before its first component")
	assert.Contains(t, err.Error(), "the upgrade to v26.09 waits for approval: deleting ClusterVersion")
	assert.Contains(t, err.Error(), "set desiredVersion back to v26.06-rc.2 to abort it, or abandon it (spec.abandon) and then delete it")
	// An upgrade that ended may be deleted; one rolled back or abandoned
	// may change target (a rollback leaves the system at a release). A
	// failed one may be deleted once nothing of it had run.
	for _, phase := range []v1alpha1.Phase{v1alpha1.PhaseRolledBack, v1alpha1.PhaseAbandoned, v1alpha1.PhaseFailed} {
		ended := upgrading.DeepCopy()
		ended.Status.Phase = phase
		if phase == v1alpha1.PhaseFailed {
			assert.Error(t, controller.CheckDelete(ended), "CheckDelete while %s with components done", phase)
			ended.Status.Plan.Progress.Done = 0
		}
		assert.NoError(t, controller.CheckDelete(ended), "CheckDelete while %s", phase)
		if phase != v1alpha1.PhaseFailed {
			assert.NoError(t, controller.CheckUpdate(ended, to("v26.06.1")), "CheckUpdate while %s", phase)
		}
	}
}
