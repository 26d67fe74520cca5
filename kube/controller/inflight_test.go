package controller_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// While a run goes, availableUpdates follow the version it has reached:
// once a hop completed they are what `hopdag targets` says from there.
func TestUpdatesFollowTheRun(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	startOperator(t, opConfig{rn: slowRunner(t, 200*time.Millisecond)})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	cat, err := release.LoadDir(catalogDir)
	require.NoError(t, err)
	targets := func(from string) []string {
		ts, err := path.Targets(cat, path.MustParseState(from))
		require.NoError(t, err)
		var out []string
		for _, tg := range ts {
			out = append(out, tg.Version.Original())
		}
		return out
	}
	waitFor(t, c, key, 60*time.Second, "mid-run, past the first hop, with the updates from there", func(cv *v1alpha1.ClusterVersion) bool {
		if cv.Status.Phase != v1alpha1.PhaseUpgrading || cv.Status.CurrentVersion == "v26.06-rc.2" {
			return false
		}
		var av []string
		for _, u := range cv.Status.AvailableUpdates {
			av = append(av, u.Version)
		}
		return slices.Equal(av, targets(cv.Status.CurrentVersion))
	})
	// The run ends here: a ClusterVersion left mid-upgrade would be
	// resumed by the operators of the tests after this one.
	waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
}
