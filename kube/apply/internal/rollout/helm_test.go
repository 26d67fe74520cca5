package rollout_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/cli"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/helm"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// helmRunner is a kube/helm Runner for the charts of testdata/charts,
// with Helm's cache and configuration in a directory of the test's own.
func helmRunner(t *testing.T) *helm.Runner {
	t.Helper()
	s := cli.New()
	dir := t.TempDir()
	s.RepositoryCache, s.RepositoryConfig, s.RegistryConfig = dir+"/cache", dir+"/repositories.yaml", dir+"/registry.json"
	return helm.New(cp.Config(), helm.WithChartRoot("testdata"), helm.WithSettings(s))
}

// webChart is version v of helm component web: chart testdata/charts/web
// released in ns, 3 pods of image tag tag, each Ready 1s after it starts
// (never Ready when ready is false: the chart labels them
// kwok.hopdag.io/ready=false, controlplane.LabelReady).
func webChart(v, ns, tag string, ready bool, timeout time.Duration) *release.ComponentVersion {
	return &release.ComponentVersion{
		Name: "web", Version: release.MustParseVersion(v), Type: release.TypeHelm,
		Timeout: release.D(timeout),
		Helm: &release.HelmChart{Chart: "charts/web", Version: "0.1.0", Namespace: ns,
			Values: fmt.Sprintf("tag: %s\nready: %t\nreadyDelay: 1s\n", tag, ready)},
	}
}

// TestHelmWaitRollout upgrades a Helm release whose Deployment really
// rolls out on the kwok nodes: `helm upgrade --wait` (Helm 4's kstatus
// watcher) returns when, and only when, the new ReplicaSet is Available
// and the old one has no pod left.
func TestHelmWaitRollout(t *testing.T) {
	t.Parallel()
	cs, ns := setup(t)
	r := helmRunner(t)
	ctx := context.Background()
	v1 := webChart("v1.0", ns, "v1", true, time.Minute)
	v2 := webChart("v2.0", ns, "v2", true, time.Minute)
	require.NoError(t, r.Run(ctx, runner.Task{Component: "web", To: v1, Attempt: 1}), "install v1.0")
	assert.Equal(t, map[string]int{"example.invalid/web:v1": 3}, liveImages(t, cs, ns, "app=web"), "the install waited for its pods")

	rs := watchReplicaSets(t, cs, ns)
	current := watchCurrent(t, appsv1.SchemeGroupVersion.WithResource("deployments"), ns, "web", 2)
	start := time.Now()
	err := r.Run(ctx, runner.Task{Component: "web", From: v1, To: v2, Attempt: 1})
	returned := time.Now()
	took := returned.Sub(start)
	t.Logf("helm upgrade v1.0 -> v2.0 with --wait: %s", took.Round(time.Millisecond))
	require.NoError(t, err)
	current.assertPrompt(t, "Deployment web", returned)

	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, d.Generation, d.Status.ObservedGeneration, "observedGeneration")
	assert.Equal(t, []int32{3, 3, 3}, []int32{d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas}, "Deployment replicas, updated, available")
	assert.Equal(t, map[string]int{"example.invalid/web:v2": 3}, liveImages(t, cs, ns, "app=web"), "live pods by image")
	assert.True(t, rs.overlapped(), "the old and the new ReplicaSet never had pods at the same time")
	assert.GreaterOrEqual(t, took, 3*time.Second, "the wait returned before three pods could each get Ready in turn")
}

// TestHelmWaitNeverCompletes upgrades a Helm release to pods that run but
// never get Ready, through a runner.Executor with the Rollback policy: the
// upgrade fails when the component's timeout ends, naming the Deployment
// and its kstatus message, and the rollback takes the release back to
// v1.0, whose pods are the only ones left.
func TestHelmWaitNeverCompletes(t *testing.T) {
	t.Parallel()
	cs, ns := setup(t)
	r := helmRunner(t)
	ctx := context.Background()
	const timeout = 4 * time.Second
	v1 := webChart("v1.0", ns, "v1", true, time.Minute)
	v2 := webChart("v2.0", ns, "v2", false, timeout)
	require.NoError(t, r.Run(ctx, runner.Task{Component: "web", To: v1, Attempt: 1}), "install v1.0")

	rel := func(v string) release.Release {
		return release.Release{Version: release.MustParseVersion(v), Components: []release.ComponentRef{{Name: "web", Version: release.MustParseVersion(v)}}}
	}
	cat, err := release.NewCatalog([]release.Release{rel("v1.0"), rel("v2.0")}, []release.ComponentVersion{*v1, *v2},
		[]release.UpgradePath{{Rules: []release.Rule{{From: release.MustParseConstraint("v1.0"), To: release.MustParseVersion("v2.0")}}}})
	require.NoError(t, err)
	e := runner.New(components.NewRouter().Register(release.TypeHelm, r), runner.WithFailurePolicy(runner.Rollback))
	plan, err := runner.NewPlan(cat, path.MustParseState("v1.0"), path.MustParseState("v2.0"), runner.ForExecutor(e))
	require.NoError(t, err)

	// What kstatus says of the Deployment while v2.0's pod stays unready,
	// read before the rollback undoes it.
	during := make(chan *appsv1.Deployment, 1)
	go func() {
		time.Sleep(timeout - time.Second)
		d, _ := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		during <- d
	}()
	start := time.Now()
	st, err := e.Execute(ctx, plan, nil)
	took := time.Since(start)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	assert.GreaterOrEqual(t, took, timeout, "the upgrade waited until its timeout")
	assert.Equal(t, record.RolledBack, st.Phase, "run phase (%s)", st.Message)
	msg := st.Hops[0].Components[0].Error
	stuck := <-during
	require.NotNil(t, stuck, "the Deployment read during the wait")
	live := kstatus(t, stuck)
	assert.Equal(t, status.InProgressStatus, live.Status, "kstatus of the Deployment during the wait")
	assert.Equal(t, "Updated: 1/3", live.Message, "kstatus message of the Deployment during the wait")
	assert.Contains(t, msg, "helm: web@v2.0: upgrade release "+ns+"/web:", "the error names the release: %s", msg)
	assert.Contains(t, msg, "; not ready: Deployment.apps "+ns+"/web: InProgress: "+live.Message, "the error names the Deployment and its kstatus message: %s", msg)

	// Rolled back: Helm's rollback waited for v1.0's Deployment, whose
	// pods (the old ReplicaSet's, which kept serving) are the only ones.
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "example.invalid/web:v1", d.Spec.Template.Spec.Containers[0].Image, "the Deployment's image after the rollback")
	assert.Equal(t, status.CurrentStatus, kstatus(t, d).Status, "the Deployment's kstatus after the rollback")
	assert.Equal(t, []int32{3, 3, 3}, []int32{d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas}, "Deployment replicas, updated, available")
	assert.Eventually(t, func() bool {
		got := liveImages(t, cs, ns, "app=web")
		return len(got) == 1 && got["example.invalid/web:v1"] == 3
	}, 10*time.Second, 100*time.Millisecond, "live pods by image after the rollback: want only 3 of v1")
}
