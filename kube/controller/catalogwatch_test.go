package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// TestCatalogWatchUpdatesAvailable: a release added to the catalog of an
// idle ClusterVersion's namespace (its Release, the ComponentVersion it
// ships that no other release does, then the UpgradePath rule to it) shows
// in status.availableUpdates, with nothing touching the ClusterVersion:
// the reconciler watches the catalog kinds. Without the watch nothing
// re-queues the idle ClusterVersion (an idle Reconcile asks for no
// requeue, and the cache's resync is hours away) and the wait times out.
func TestCatalogWatchUpdatesAvailable(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	startOperator(t, opConfig{})
	ctx := context.Background()

	cv := newCV(ns, "v26.09", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	idle := waitFor(t, c, key, 30*time.Second, "idle at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.09"
	})
	require.Empty(t, idle.Status.AvailableUpdates, "v26.09 is the newest release of %s", catalogDir)
	require.Empty(t, idle.Status.ConditionalUpdates)
	// The reconciles that the ClusterVersion's own status writes queued
	// run now, before the catalog changes: a late one would read the new
	// catalog, and pass the test without a watch.
	time.Sleep(time.Second)

	// v26.12 is v26.09 with bkeagent v1.6.0.
	var bke v1alpha1.ComponentVersion
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bkeagent-v1.5.0"}, &bke))
	newBke := &v1alpha1.ComponentVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bkeagent-v1.6.0"}, Spec: *bke.Spec.DeepCopy()}
	newBke.Spec.Version = "v1.6.0"
	require.NoError(t, c.Create(ctx, newBke))
	var prev v1alpha1.Release
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "openfuyao-v26.09"}, &prev))
	rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "openfuyao-v26.12"}, Spec: *prev.Spec.DeepCopy()}
	rel.Spec.Version = "v26.12"
	bumped := 0
	for i := range rel.Spec.Components {
		if rel.Spec.Components[i].Name == "bkeagent" {
			rel.Spec.Components[i].Version = newBke.Spec.Version
			bumped++
		}
	}
	require.Equal(t, 1, bumped, "v26.09 ships bkeagent once")
	require.NoError(t, c.Create(ctx, rel))
	// The rule comes last: until it exists, v26.12 cannot be reached, so
	// the UpgradePath's update is the event that must re-queue the
	// ClusterVersion.
	var up v1alpha1.UpgradePath
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "openfuyao-upgrade-paths"}, &up))
	up.Spec.Rules = append(up.Spec.Rules, v1alpha1.Rule{From: "v26.09", To: "v26.12"})
	require.NoError(t, c.Update(ctx, &up))

	got := waitFor(t, c, key, 30*time.Second, "offering v26.12", func(cv *v1alpha1.ClusterVersion) bool {
		return len(cv.Status.AvailableUpdates) > 0
	})
	assert.Equal(t, []v1alpha1.Update{{Version: "v26.12", Hops: 1, Next: "v26.09 -> v26.12"}}, got.Status.AvailableUpdates)
	assert.Empty(t, got.Status.ConditionalUpdates)
	assert.Equal(t, idle.Generation, got.Generation, "the spec was not touched")
	assert.Equal(t, v1alpha1.PhaseIdle, got.Status.Phase, "a new target starts nothing")
	assert.Equal(t, v1alpha1.Target("v26.09"), got.Spec.DesiredVersion)
}
