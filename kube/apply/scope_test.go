package apply_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
)

// issuerCRD is a CRD of kind Issuer in group with the given scope.
func issuerCRD(group, scope string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: issuers.%[1]s}
spec:
  group: %[1]s
  scope: %[2]s
  names: {plural: issuers, singular: issuer, kind: Issuer, listKind: IssuerList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, group, scope)
}

// TestClusterScopedAcrossComponents is the regression test of a custom
// resource without a namespace whose CRD another component installs:
// component "crds" applies the CRD, component "issuer" (another
// Manifest.Run, through an Applier whose discovery cache predates the
// CRD) applies an Issuer that sets no namespace. A cluster-scoped one is
// created cluster-scoped (before the fix the Manifest gave it the
// component's namespace and the apply refused it), a namespaced one in
// the component's namespace; each is owned by "issuer", keeps its identity
// when the next version renders it again (not pruned, same UID), and is
// pruned by the version after that, which no longer renders it.
func TestClusterScopedAcrossComponents(t *testing.T) {
	for _, tt := range []struct {
		scope   string
		cluster bool
	}{
		{"Cluster", true},
		{"Namespaced", false},
	} {
		t.Run(tt.scope, func(t *testing.T) {
			ctx := context.Background()
			ns := namespace(t)
			group := ns + ".example.io"
			issuers := gvr(group, "v1", "issuers")
			at, where := ns, ns+"/"
			if tt.cluster {
				at, where = "", ""
			}

			a, _ := newApplier(t, ns)
			b, rec := newApplier(t, ns)
			// b's discovery cache is filled before the CRD exists, so
			// that the run of "issuer" has to refresh it.
			cluster, known, err := b.ClusterScoped(group, "Issuer")
			require.NoError(t, err)
			require.False(t, known, "ClusterScoped(%s, Issuer) before its CRD: known = true (cluster %v), want false", group, cluster)

			require.NoError(t, components.NewManifest(a, components.WithInstance(ns)).
				Run(ctx, task(nil, cv("crds", "v1.0", ns, issuerCRD(group, tt.scope)))))

			m := components.NewManifest(b, components.WithInstance(ns))
			issuer := "apiVersion: " + group + "/v1\nkind: Issuer\nmetadata: {name: main}\nspec: {size: %d}\n"
			settings := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"
			v1 := cv("issuer", "v1.0", ns, fmt.Sprintf(issuer, 1))
			v2 := cv("issuer", "v2.0", ns, fmt.Sprintf(issuer, 2)+"---\n"+settings)
			v3 := cv("issuer", "v3.0", ns, settings)

			require.NoError(t, m.Run(ctx, task(nil, v1)))
			assert.Equal(t, []string{"Issuer." + group + " " + where + "main created"}, rec.take())
			got := get(t, issuers, at, "main")
			require.NotNil(t, got, "Issuer %smain", where)
			assert.Equal(t, at, got.GetNamespace())
			assert.Equal(t, map[string]string{components.LabelComponent: "issuer", components.LabelInstance: ns, components.LabelManagedBy: "hopdag"}, got.GetLabels())
			uid := got.GetUID()
			invs, err := b.Inventories(ctx, ns)
			require.NoError(t, err)
			want := components.Ref{Group: group, Version: "v1", Kind: "Issuer", Namespace: at, Name: "main"}
			for _, inv := range invs {
				if inv.Component == "issuer" {
					assert.Equal(t, []components.Ref{want}, inv.Objects, "issuer's inventory")
				}
			}

			require.NoError(t, m.Run(ctx, task(v1, v2)))
			assert.Equal(t, []string{
				"Issuer." + group + " " + where + "main configured",
				"ConfigMap " + ns + "/settings created",
			}, rec.take(), "v2 renders the same Issuer: nothing pruned")
			got = get(t, issuers, at, "main")
			require.NotNil(t, got)
			assert.Equal(t, uid, got.GetUID(), "the Issuer v1 created")

			require.NoError(t, m.Run(ctx, task(v2, v3)))
			assert.Equal(t, []string{
				"ConfigMap " + ns + "/settings unchanged",
				"Issuer." + group + " " + where + "main pruned",
			}, rec.take())
			assert.False(t, live(t, issuers, at, "main"), "v3 prunes the Issuer")

			cluster, known, err = b.ClusterScoped(group, "Issuer")
			require.NoError(t, err)
			assert.Equal(t, [2]bool{tt.cluster, true}, [2]bool{cluster, known}, "ClusterScoped(%s, Issuer) = (cluster, known)", group)
		})
	}
}

// TestClusterScopedBuiltIn checks ClusterScoped's answers for built-in
// kinds and a kind no API serves.
func TestClusterScopedBuiltIn(t *testing.T) {
	needCluster(t)
	a, _ := newApplier(t, "default")
	for _, tt := range []struct {
		group, kind    string
		cluster, known bool
	}{
		{"", "Namespace", true, true},
		{"", "ConfigMap", false, true},
		{"rbac.authorization.k8s.io", "ClusterRole", true, true},
		{"apps", "Deployment", false, true},
		{"nothing.example.io", "Nothing", false, false},
	} {
		cluster, known, err := a.ClusterScoped(tt.group, tt.kind)
		require.NoError(t, err, "ClusterScoped(%q, %q)", tt.group, tt.kind)
		assert.Equal(t, [2]bool{tt.cluster, tt.known}, [2]bool{cluster, known}, "ClusterScoped(%q, %q) = (cluster, known)", tt.group, tt.kind)
	}
}
