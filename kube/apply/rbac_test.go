package apply_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/apply"
)

// TestShippedRoleSuffices upgrades a manifest component (ConfigMaps, which
// the role grants) through an Applier acting as a ServiceAccount bound to
// kube/config/rbac/role.yaml and nothing else: the Applier's own
// bookkeeping (creating its inventory namespace, reading and writing the
// inventory ConfigMaps) stays within the shipped ClusterRole. The objects
// a catalog applies are its author's to grant; what the Applier needs for
// itself is the role's.
func TestShippedRoleSuffices(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	b, err := os.ReadFile("../config/rbac/role.yaml")
	require.NoError(t, err)
	var role unstructured.Unstructured
	require.NoError(t, yaml.Unmarshal(b, &role.Object))
	require.Equal(t, "hopdag-operator", role.GetName())
	role.SetName("hopdag-operator-" + ns) // the tests share the API server
	_, err = dyn.Resource(gvr("rbac.authorization.k8s.io", "v1", "clusterroles")).Create(ctx, &role, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = dyn.Resource(gvr("rbac.authorization.k8s.io", "v1", "clusterroles")).Delete(context.Background(), role.GetName(), metav1.DeleteOptions{})
	})
	sa := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": map[string]any{"name": "hopdag", "namespace": ns}}}
	_, err = dyn.Resource(serviceAccs).Namespace(ns).Create(ctx, sa, metav1.CreateOptions{})
	require.NoError(t, err)
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": role.GetName()},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role.GetName()},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "namespace": ns, "name": "hopdag"}},
	}}
	_, err = dyn.Resource(gvr("rbac.authorization.k8s.io", "v1", "clusterrolebindings")).Create(ctx, binding, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = dyn.Resource(gvr("rbac.authorization.k8s.io", "v1", "clusterrolebindings")).Delete(context.Background(), role.GetName(), metav1.DeleteOptions{})
	})

	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":hopdag"}
	// RBAC is enforced: the account may not read Secrets.
	_, err = dyn.Resource(gvr("", "v1", "secrets")).Namespace(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "as the administrator")
	asDyn, err := dynamic.NewForConfig(as)
	require.NoError(t, err)
	_, err = asDyn.Resource(gvr("", "v1", "secrets")).Namespace(ns).List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "the API server must enforce RBAC for this test to show anything: listing Secrets as the ServiceAccount gave %v", err)

	inv := ns + "-inventory" // created by the Applier, as the ServiceAccount
	a, err := apply.New(as, apply.WithInventoryNamespace(inv))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = dyn.Resource(namespaces).Delete(context.Background(), inv, metav1.DeleteOptions{})
	})
	m := components.NewManifest(a, components.WithInstance(ns))
	cm := func(name string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n" }
	v1 := cv("app", "v1.0", ns, cm("old")+"---\n"+cm("kept"))
	require.NoError(t, m.Run(ctx, task(nil, v1)), "install under the shipped role")
	require.NoError(t, m.Run(ctx, task(v1, cv("app", "v2.0", ns, cm("kept")))), "upgrade and prune under the shipped role")
	assert.False(t, live(t, configmaps, ns, "old"), "v1's ConfigMap pruned")
	assert.True(t, live(t, configmaps, ns, "kept"))
	invs, err := a.Inventories(ctx, ns)
	require.NoError(t, err)
	require.Len(t, invs, 1)
	assert.Equal(t, "v2.0", invs[0].Version)
}
