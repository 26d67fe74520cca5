package catalog_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// TestTrackNameRefused: the API server refuses a track name that the
// loader would refuse (a "/", a space: see release.CheckTrackName), on
// every kind with a track, at kubectl apply rather than when the operator
// loads the catalog; a name of the allowed characters is admitted.
func TestTrackNameRefused(t *testing.T) {
	c := newClient(t)
	ns := newNamespace(t, c)
	ctx := context.Background()
	objects := func(track string) []client.Object {
		meta := metav1.ObjectMeta{Namespace: ns, GenerateName: "t-"}
		return []client.Object{
			&v1alpha1.Release{ObjectMeta: meta, Spec: v1alpha1.ReleaseSpec{Version: "v1.0", Track: track,
				Components: []v1alpha1.ComponentRef{{Name: "a", Version: "v1.0"}}}},
			&v1alpha1.UpgradePath{ObjectMeta: meta, Spec: v1alpha1.UpgradePathSpec{Track: track,
				Rules: []v1alpha1.Rule{{From: "v1.0", To: "v1.1"}}}},
			&v1alpha1.ClusterVersion{ObjectMeta: meta, Spec: v1alpha1.ClusterVersionSpec{DesiredVersion: "v1.0", Track: track}},
		}
	}
	for _, track := range []string{"k8s.io/x", "plat form", "a,b", "a=b"} {
		for _, o := range objects(track) {
			err := c.Create(ctx, o)
			require.Error(t, err, "%T with track %q", o, track)
			assert.True(t, apierrors.IsInvalid(err), "%T with track %q: %v", o, track, err)
			assert.Contains(t, err.Error(), "spec.track", "%T with track %q", o, track)
		}
	}
	for _, o := range objects("k8s.io_x-2") {
		require.NoError(t, c.Create(ctx, o), "%T with track k8s.io_x-2", o)
	}
}
