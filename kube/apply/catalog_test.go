package apply_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// TestCatalogHops runs testdata/catalog from v26.03 to v26.06 and then to
// v26.09 through the runner's executor, its manifest components applied to
// the API server (the inline ones are no-ops): every object of v26.09 is
// there with hopdag's labels, the ConfigMap metrics-server v0.8.0 dropped
// is pruned, and each component's inventory is in the cluster. The
// catalog's health checks poll every 5-10s; the test shortens their
// intervals to 50ms, and its controller goroutine writes the status of the
// Deployments and DaemonSets (no kubelet runs).
func TestCatalogHops(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	c, err := release.LoadDir("../../testdata/catalog")
	require.NoError(t, err)
	for i := range c.Components {
		for j := range c.Components[i].HealthChecks {
			c.Components[i].HealthChecks[j].Interval = release.D(50 * time.Millisecond)
		}
	}
	// The provider's namespace is the cluster's, not the catalog's.
	_, err = dyn.Resource(namespaces).Apply(ctx, "cluster-system", &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "cluster-system"}}}, metav1.ApplyOptions{FieldManager: "test"})
	require.NoError(t, err)

	inv := namespace(t)
	// One instance for every run: -count=N reuses the API server, where the
	// objects outside the test's namespace (kube-system's) are still the
	// previous run's, and an apply refuses an object another instance owns.
	// (A second run still waits, as long as the test's timeout, for
	// kube-system/metrics-server-config, which the first run's prune left
	// being deleted: no garbage collector finishes a foreground deletion.)
	const instance = "catalog-hops"
	a, rec := newApplier(t, inv)
	controller(t, components.LabelInstance+"="+instance)
	inline := components.NewInline()
	for _, h := range []string{"bkeagent", "containerd", "etcd", "kubernetes-master", "kubernetes-worker"} {
		inline.Register(h, runner.RunnerFunc(func(context.Context, runner.Task) error { return nil }))
	}
	ok := func(context.Context, runner.CheckTask) error { return nil }
	router := components.NewRouter().
		Register(release.TypeInline, inline).
		Register(release.TypeManifest, components.NewManifest(a, components.WithInstance(instance),
			components.WithValues(map[string]any{"registry": "registry.local:5000"})))
	exec := runner.New(router, runner.WithCheck("cluster-healthy", ok), runner.WithCheck("etcd-backup", ok),
		runner.WithCheck("nodes-ready", ok), runner.WithCheck("registry-mirror-reachable", ok), runner.WithCheck("conformance-smoke", ok))

	for _, route := range [][2]string{{"v26.03", "v26.06"}, {"v26.06", "v26.09"}} {
		p, err := runner.NewPlan(c, path.State{"": release.MustParseVersion(route[0])}, path.State{"": release.MustParseVersion(route[1])}, runner.ForExecutor(exec))
		require.NoError(t, err)
		st, err := exec.Execute(ctx, p, nil)
		require.NoError(t, err, "%s -> %s", route[0], route[1])
		require.Equal(t, record.Succeeded, st.Phase, "%s -> %s", route[0], route[1])
	}
	var pruned []string
	for _, ch := range rec.take() {
		if strings.Contains(ch, " pruned") {
			pruned = append(pruned, ch)
		}
	}
	require.Len(t, pruned, 1, "only what metrics-server v0.8.0 dropped")
	// A later run (-count=N) finds it still being deleted: no garbage
	// collector finishes the foreground deletion.
	assert.Regexp(t, `^ConfigMap kube-system/metrics-server-config pruned( \(already being deleted\))?$`, pruned[0])
	assert.False(t, live(t, configmaps, "kube-system", "metrics-server-config"))
	for _, o := range [][3]string{{"cluster-system", "bke-provider", "provider"}, {"kube-system", "coredns", "coredns"}, {"kube-system", "metrics-server", "metrics-server"}} {
		d := get(t, deployments, o[0], o[1])
		require.NotNil(t, d, "Deployment %s/%s", o[0], o[1])
		assert.Equal(t, o[2], d.GetLabels()[components.LabelComponent])
	}
	cm := get(t, configmaps, "cluster-upgrade", "upgrade-context")
	require.NotNil(t, cm)
	assert.Equal(t, "v1.2.0", cm.Object["data"].(map[string]any)["componentVersion"])

	invs, err := a.Inventories(ctx, instance)
	require.NoError(t, err)
	var names []string
	for _, i := range invs {
		names = append(names, i.Component+"@"+i.Version)
	}
	assert.Equal(t, []string{"calico@v3.30.2", "coredns@v1.12.3", "kube-proxy@v1.34.1", "metrics-server@v0.8.0", "pre-upgrade-resources@v1.2.0", "provider@v1.5.0"}, names)
}
