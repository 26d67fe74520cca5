package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// TestRunnerFor upgrades two ClusterVersions side by side with
// WithRunnerFor: each one's components run through the runner made for
// it, asked for once, and never through New's runner or the other's.
func TestRunnerFor(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	var mu sync.Mutex
	made := map[types.NamespacedName]*runnertest.Runner{}
	asked := map[types.NamespacedName]int{}
	runnerFor := func(cv types.NamespacedName, cluster *rest.Config) (runner.Runner, error) {
		mu.Lock()
		defer mu.Unlock()
		asked[cv]++
		made[cv] = runnertest.New()
		assert.Nil(t, cluster, "a ClusterVersion without spec.clusterRef has no cluster of its own")
		return made[cv], nil
	}
	// The namespaces come first: an operator started before them would
	// watch every namespace, the ClusterVersions earlier tests left too
	// (a 4,000-version catalog among them).
	nss := []string{newNamespace(t, c), newNamespace(t, c)}
	op := startOperator(t, opConfig{opts: []controller.Option{controller.WithRunnerFor(runnerFor)}})
	ctx := context.Background()

	var keys []types.NamespacedName
	for _, ns := range nss {
		applyCatalog(t, c, ns, catalogDir)
		cv := newCV(ns, "v26.06", "v26.09")
		require.NoError(t, c.Create(ctx, cv))
		keys = append(keys, client.ObjectKeyFromObject(cv))
	}
	for _, k := range keys {
		waitFor(t, c, k, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
			return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
		})
	}

	assert.Empty(t, op.runner.Records(), "New's runner is not used with WithRunnerFor")
	require.Eventually(t, func() bool { return len(eventNotes(t, c, keys[0].Namespace, "UpgradeStarted")) > 0 }, 10*time.Second, 50*time.Millisecond, "the UpgradeStarted Event")
	assert.Equal(t, []string{"upgrading v26.06 -> v26.09 in 1 hop"}, eventNotes(t, c, keys[0].Namespace, "UpgradeStarted"))
	mu.Lock()
	for _, k := range keys {
		assert.Equal(t, 1, asked[k], "the runner of %s is asked for once", k)
		require.NotNil(t, made[k], "a runner was made for %s", k)
		assert.NotEmpty(t, made[k].Records(), "%s ran through its own runner", k)
	}
	assert.Len(t, asked, len(keys), "runners are made only for the ClusterVersions that run")
	mu.Unlock()

	// A ClusterVersion deleted and created again gets a new runner.
	k := keys[0]
	var old v1alpha1.ClusterVersion
	require.NoError(t, c.Get(ctx, k, &old))
	require.NoError(t, c.Delete(ctx, &old))
	require.Eventually(t, func() bool { return c.Get(ctx, k, &old) != nil }, 30*time.Second, 50*time.Millisecond, "deleted")
	again := newCV(k.Namespace, "v26.06", "v26.09")
	require.NoError(t, c.Create(ctx, again))
	waitFor(t, c, k, 60*time.Second, "at v26.09 again", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle && len(cv.Status.History) > 0
	})
	mu.Lock()
	assert.Equal(t, 2, asked[k], "a ClusterVersion created again under its name is asked for a new runner")
}
