package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// TestCatalogEditedWhilePaused: a Release the paused upgrade was planned
// from changes a version of a component that already moved; resuming
// fails on the stored record, and the Failing condition says what does
// help (put the catalog back, then retry), not only a retry, which would
// fail the same way. Putting it back and retrying completes the upgrade.
func TestCatalogEditedWhilePaused(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	startOperator(t, opConfig{rn: slowRunner(t, 300*time.Millisecond)})
	ctx := context.Background()

	cv := newCV(ns, "v26.06-rc.2", "v26.06-rc.3")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	waitFor(t, c, key, 30*time.Second, "bkeagent done", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Plan != nil && cv.Status.Plan.Progress.Done >= 2
	})
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Paused = true })
	waitFor(t, c, key, 30*time.Second, "paused", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhasePaused })

	var rel v1alpha1.Release
	rkey := client.ObjectKey{Namespace: ns, Name: "openfuyao-v26.06-rc.3"}
	require.NoError(t, c.Get(ctx, rkey, &rel))
	orig := rel.DeepCopy()
	for i := range rel.Spec.Components {
		if rel.Spec.Components[i].Name == "bkeagent" {
			rel.Spec.Components[i].Version = "v1.4.2"
		}
	}
	require.NoError(t, c.Update(ctx, &rel))
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Paused = false })
	got := waitFor(t, c, key, 30*time.Second, "failed", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseFailed })
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	require.NotNil(t, f)
	assert.Contains(t, f.Message, "status does not match plan")
	assert.Contains(t, f.Message, "; the catalog changed since the upgrade's record was written: put the catalog objects back as they were when it started (the difference is above) and increment spec.retry, set desiredVersion back to v26.06-rc.2 to abort, or abandon (spec.abandon)")

	require.NoError(t, c.Get(ctx, rkey, &rel))
	rel.Spec = orig.Spec
	require.NoError(t, c.Update(ctx, &rel))
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Retry++ })
	waitFor(t, c, key, 60*time.Second, "at v26.06-rc.3", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.06-rc.3"
	})
}
