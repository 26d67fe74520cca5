package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/runner"
)

// workloadCluster starts an API server of its own, a workload cluster,
// and returns it with a client of it.
func workloadCluster(t *testing.T) (*envtest.Environment, client.Client) {
	t.Helper()
	env := &envtest.Environment{}
	wcfg, err := env.Start()
	require.NoError(t, err, "starting a workload cluster's API server")
	t.Cleanup(func() { _ = env.Stop() })
	wc, err := client.New(wcfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return env, wc
}

// applyRunner applies each component as a ConfigMap
// hopdag-COMPONENT-VERSION in the default namespace of the cluster of
// cfg, taking delay for each, and trying again while the cluster does
// not answer (as a manifest runner waits for readiness): the run of a
// cluster whose API server stopped hangs.
func applyRunner(cfg *rest.Config, delay time.Duration) (runner.Runner, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 2 * time.Second
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		name := "hopdag-" + t.Component + "-" + strings.NewReplacer("+", "-", ".", "-").Replace(t.To.Version.String())
		for {
			err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
			if err == nil || apierrors.IsAlreadyExists(err) {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
			return nil
		}
	}), nil
}

// TestUnreachableClusterCountsAfterDeadline: three ClusterVersions
// upgrade workload clusters through their kubeconfig Secrets; the API
// server of c2's cluster stops mid-rollout. c2's run hangs, its
// ClusterVersion says ClusterUnreachable, and once progressDeadline has
// passed the rollout counts it failed, within the budget of 1, names it
// in its status with the cause, and completes with the others, whose
// objects are in their own clusters.
func TestUnreachableClusterCountsAfterDeadline(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newFleet(t, c, 0)
	ctx := context.Background()
	envA, wa := workloadCluster(t)
	envB, wb := workloadCluster(t)
	for name, env := range map[string]*envtest.Environment{"c1": envA, "c2": envB, "c3": envA} {
		require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-kubeconfig"}, Data: map[string][]byte{"value": env.KubeConfig}}))
		require.NoError(t, c.Create(ctx, &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"fleet": "prod"}},
			Spec: v1alpha1.ClusterVersionSpec{InstalledVersion: "v26.06-rc.2", DesiredVersion: "v26.06-rc.2", ClusterRef: &v1alpha1.ClusterRef{Name: name}}}))
	}
	runnerFor := func(_ types.NamespacedName, cluster *rest.Config) (runner.Runner, error) {
		return applyRunner(cluster, 150*time.Millisecond)
	}
	operate(t, ns, runnerFor, controller.WithClusterCheckInterval(300*time.Millisecond))
	two, one := intstr.FromInt32(2), intstr.FromInt32(1)
	require.NoError(t, c.Create(ctx, newRollout(ns, func(s *v1alpha1.UpgradeRolloutSpec) {
		s.Canaries, s.Waves, s.MaxConcurrency, s.MaxFailures = nil, nil, &two, &one
		s.ProgressDeadline = &metav1.Duration{Duration: 15 * time.Second}
	})))

	// c2 has started upgrading its cluster: stop that cluster's API server.
	require.Eventually(t, func() bool {
		var l corev1.ConfigMapList
		return wb.List(ctx, &l, client.InNamespace("default")) == nil && len(l.Items) > 2
	}, 60*time.Second, 50*time.Millisecond, "c2's first objects in its cluster")
	require.NoError(t, envB.Stop())
	stopped := time.Now()

	ur := watchFleet(t, c, ns, 2, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool {
		return ur.Status.Phase == "Completed" || ur.Status.Phase == "Failed"
	})
	assert.Equal(t, "Completed", ur.Status.Phase, "one failure is within the budget")
	assert.Equal(t, 2, ur.Status.Counts.Succeeded)
	assert.Equal(t, 1, ur.Status.Counts.Failed)
	c2 := clusterOf(ur, "c2")
	assert.Equal(t, "Failed", c2.State)
	assert.Equal(t, "DeadlineExceeded", c2.Reason)
	assert.Contains(t, c2.Message, "ClusterUnreachable: ")
	assert.Contains(t, c2.Message, "the API server "+strings.TrimSuffix(envB.Config.Host, "/")+" does not answer")
	started, err := time.Parse(time.RFC3339, getCV(t, c, ns, "c2").Annotations["hopdag.io/rollout-started"])
	require.NoError(t, err)
	assert.False(t, time.Now().Before(started.Add(15*time.Second)), "c2 counted failed before its deadline (stopped %v after it started)", stopped.Sub(started))

	cv2 := getCV(t, c, ns, "c2")
	assert.Equal(t, v1alpha1.PhaseUpgrading, cv2.Status.Phase, "c2's run waits for its cluster")
	var objs corev1.ConfigMapList
	require.NoError(t, wa.List(ctx, &objs, client.InNamespace("default")))
	assert.NotEmpty(t, objs.Items, "c1's and c3's objects are in their cluster")
	var inManagement corev1.ConfigMapList
	require.NoError(t, c.List(ctx, &inManagement, client.InNamespace("default")))
	for _, cm := range inManagement.Items {
		assert.False(t, strings.HasPrefix(cm.Name, "hopdag-"), "component object %s in the management cluster", cm.Name)
	}
}
