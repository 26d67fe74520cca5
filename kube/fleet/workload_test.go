package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/runner"
)

// TestFleetOfWorkloadClusters: one management API server and four
// workload API servers, each cluster at another version; a rollout to
// v26.09 with a canary and two waves (by the hopdag.io/wave label), two
// at a time, succeeds, each cluster along its own route; each cluster's
// objects land in its own API server and nowhere else, the status and
// Events in the management cluster.
func TestFleetOfWorkloadClusters(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newFleet(t, c, 0)
	ctx := context.Background()
	fleetOf := []struct {
		name, at, wave string
		hops           []string
	}{
		{"canary", "v26.06", "", []string{"v26.06 -> v26.09"}},
		{"eu-1", "v26.06-rc.2", "eu", []string{"v26.06-rc.2 -> v26.06-rc.3", "v26.06-rc.3 -> v26.06", "v26.06 -> v26.09"}},
		{"eu-2", "v26.06-rc.3", "eu", []string{"v26.06-rc.3 -> v26.06", "v26.06 -> v26.09"}},
		{"us-1", "v26.06.1", "us", []string{"v26.06.1 -> v26.09"}},
	}
	workloads := map[string]client.Client{}
	for _, cl := range fleetOf {
		env, wc := workloadCluster(t)
		workloads[cl.name] = wc
		require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cl.name + "-kubeconfig"}, Data: map[string][]byte{"value": env.KubeConfig}}))
		labels := map[string]string{"fleet": "prod"}
		if cl.wave != "" {
			labels["hopdag.io/wave"] = cl.wave
		}
		require.NoError(t, c.Create(ctx, &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cl.name, Labels: labels},
			Spec: v1alpha1.ClusterVersionSpec{InstalledVersion: v1alpha1.Target(cl.at), DesiredVersion: v1alpha1.Target(cl.at), ClusterRef: &v1alpha1.ClusterRef{Name: cl.name}}}))
	}
	operate(t, ns, func(_ types.NamespacedName, cluster *rest.Config) (runner.Runner, error) {
		return applyRunner(cluster, 20*time.Millisecond)
	}, controller.WithClusterCheckInterval(time.Second))
	two := intstr.FromInt32(2)
	require.NoError(t, c.Create(ctx, newRollout(ns, func(s *v1alpha1.UpgradeRolloutSpec) {
		s.DesiredVersion = "v26.09"
		s.Canaries = &v1alpha1.Canaries{Names: []string{"canary"}}
		s.Waves = &v1alpha1.Waves{Label: "hopdag.io/wave", Order: []string{"eu", "us"}}
		s.MaxConcurrency = &two
	})))
	ur := watchFleet(t, c, ns, 2, 3*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool {
		return ur.Status.Phase == "Completed" || ur.Status.Phase == "Failed"
	})
	require.Equal(t, "Completed", ur.Status.Phase, "%+v", ur.Status.Conditions)
	var waves []string
	for _, w := range ur.Status.Waves {
		var names []string
		for _, cs := range w.Clusters {
			names = append(names, cs.Name+"="+cs.State)
		}
		waves = append(waves, w.Name+fmt.Sprint(names))
	}
	assert.Equal(t, []string{"canary[canary=Succeeded]", "eu[eu-1=Succeeded eu-2=Succeeded]", "us[us-1=Succeeded]"}, waves)

	for _, cl := range fleetOf {
		cv := getCV(t, c, ns, cl.name)
		assert.Equal(t, "v26.09", cv.Status.CurrentVersion, cl.name)
		require.NotNil(t, cv.Status.Plan, cl.name)
		assert.Equal(t, cl.hops, cv.Status.Plan.Hops, "%s went along its own route", cl.name)
		assert.Equal(t, cl.at, cv.Status.History[0].From, cl.name)

		// Its objects are in its cluster: the v26.09 components, and
		// those of every hop of its route; none of another route's.
		got := map[string]bool{}
		var l corev1.ConfigMapList
		require.NoError(t, workloads[cl.name].List(ctx, &l, client.InNamespace("default")))
		for _, cm := range l.Items {
			got[cm.Name] = true
		}
		assert.True(t, got["hopdag-provider-v1-5-0"], "%s: the v26.09 provider in its cluster", cl.name)
		assert.Equal(t, cl.at == "v26.06-rc.2", got["hopdag-provider-v1-4-0-rc-3"], "%s: the v26.06-rc.3 provider in its cluster only when its route goes through v26.06-rc.3", cl.name)
	}
	var inManagement corev1.ConfigMapList
	require.NoError(t, c.List(ctx, &inManagement, client.InNamespace("default")))
	for _, cm := range inManagement.Items {
		assert.False(t, strings.HasPrefix(cm.Name, "hopdag-"), "component object %s in the management cluster", cm.Name)
	}
	assert.Contains(t, reasons(t, c, ns), "WaveCompleted", "the rollout's Events are in the management cluster")
}
