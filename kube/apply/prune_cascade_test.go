package apply_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
)

// TestPruneNamespaceOfOthers: a component that stops rendering its
// Namespace, or its CRD, leaves it in place while deleting it would
// delete another component's objects with it (the API server's namespace
// controller and CRD finalizer would), and says so in the ChangeSet; a
// Namespace that holds only what the prune itself deletes goes, after its
// objects. The Recorder and Dir keep the same rule
// (components.TestPruneKeepsCascadingOwners).
func TestPruneNamespaceOfOthers(t *testing.T) {
	ctx := context.Background()
	nsObj := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", name)
	}
	cm := func(ns, name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\n", name, ns)
	}

	t.Run("namespace holding another component's ConfigMap", func(t *testing.T) {
		ns := namespace(t)
		platform := ns + "-p"
		a, rec := newApplier(t, ns)
		m := components.NewManifest(a, components.WithInstance(ns))
		a1 := cv("a", "v1.0", ns, nsObj(platform)+"---\n"+cm(platform, "a"))
		require.NoError(t, m.Run(ctx, task(nil, a1)))
		require.NoError(t, m.Run(ctx, task(nil, cv("b", "v1.0", ns, cm(platform, "b")))))
		rec.take()

		require.NoError(t, m.Run(ctx, task(a1, cv("a", "v2.0", ns, cm(ns, "x")))))
		got := rec.take()
		require.Len(t, got, 3, "x applied, a and the Namespace pruned or skipped: %q", got)
		assert.Equal(t, "ConfigMap "+platform+"/a pruned", got[1], "a's ConfigMap goes first")
		assert.Equal(t, "Namespace "+platform+` skipped (not pruned: deleting it would delete 1 live object with it: ConfigMap `+platform+`/b (component "b" of instance "`+ns+`"); prune it again once they are gone, or delete it by hand)`, got[2])
		n := get(t, namespaces, "", platform)
		require.NotNil(t, n, "the Namespace is live")
		assert.Nil(t, n.GetDeletionTimestamp(), "and not being deleted")
		assert.True(t, live(t, configmaps, platform, "b"), "b's ConfigMap is live")
	})

	t.Run("namespace holding only what the prune deletes", func(t *testing.T) {
		ns := namespace(t)
		platform := ns + "-p"
		a, rec := newApplier(t, ns)
		m := components.NewManifest(a, components.WithInstance(ns))
		a1 := cv("a", "v1.0", ns, nsObj(platform)+"---\n"+cm(platform, "a"))
		require.NoError(t, m.Run(ctx, task(nil, a1)))
		rec.take()
		// No garbage collector runs here: a's ConfigMap keeps its
		// deletionTimestamp (foreground), which must not hold the
		// Namespace.
		require.NoError(t, m.Run(ctx, task(a1, cv("a", "v2.0", ns, cm(ns, "x")))))
		assert.Equal(t, []string{
			"ConfigMap " + ns + "/x created",
			"ConfigMap " + platform + "/a pruned",
			"Namespace " + platform + " pruned",
		}, rec.take())
	})

	t.Run("CRD whose custom resources another component owns", func(t *testing.T) {
		ns := namespace(t)
		group := ns + ".example.com"
		a, rec := newApplier(t, ns)
		m := components.NewManifest(a, components.WithInstance(ns), components.WithClusterScoped("CustomResourceDefinition.apiextensions.k8s.io"))
		a1 := cv("a", "v1.0", ns, fmt.Sprintf(crd, "widget", group))
		require.NoError(t, m.Run(ctx, task(nil, a1)))
		widget := fmt.Sprintf("apiVersion: %s/v1\nkind: Widget\nmetadata: {name: w, namespace: %s}\n", group, ns)
		require.NoError(t, m.Run(ctx, task(nil, cv("b", "v1.0", ns, widget))))
		rec.take()

		require.NoError(t, m.Run(ctx, task(a1, cv("a", "v2.0", ns, cm(ns, "x")))))
		got := rec.take()
		require.Len(t, got, 2, "%q", got)
		assert.Equal(t, "CustomResourceDefinition.apiextensions.k8s.io widgets."+group+` skipped (not pruned: deleting it would delete 1 live object with it: Widget.`+group+" "+ns+`/w (component "b" of instance "`+ns+`"); prune it again once they are gone, or delete it by hand)`, got[1])
	})
}
