package components_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

func withYAML(o components.Object, yaml string) components.Object {
	o.YAML = yaml
	return o
}

func TestDirLayout(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "out") // created by Apply
	d := components.NewDir(root)
	objs := []components.Object{
		withYAML(obj("Namespace", "", "apps"), "kind: Namespace\n"),
		withYAML(obj("CustomResourceDefinition", "", "foos.example.com"), "kind: CustomResourceDefinition\n"),
		withYAML(obj("Deployment", "apps", "web"), "kind: Deployment\n"),
		withYAML(obj("ClusterRole", "", "system:web"), "kind: ClusterRole\n"),
	}
	require.NoError(t, d.Apply(ctx, objs, components.ApplyOptions{}))
	assert.Equal(t, []string{
		"_cluster/clusterrole_system:web.yaml",
		"_cluster/customresourcedefinition_foos.example.com.yaml",
		"_cluster/namespace_apps.yaml",
		"apps/deployment_web.yaml",
	}, listDir(t, root))
	data, err := os.ReadFile(filepath.Join(root, "apps/deployment_web.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "kind: Deployment\n", string(data))
	info, err := os.Stat(filepath.Join(root, "apps/deployment_web.yaml"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), info.Mode().Perm())

	// The same object, changed: the file is replaced; unchanged: left alone.
	before, _ := os.Stat(filepath.Join(root, "_cluster/namespace_apps.yaml"))
	require.NoError(t, d.Apply(ctx, []components.Object{objs[0], withYAML(obj("Deployment", "apps", "web"), "kind: Deployment\nv: 2\n")}, components.ApplyOptions{}))
	data, _ = os.ReadFile(filepath.Join(root, "apps/deployment_web.yaml"))
	assert.Equal(t, "kind: Deployment\nv: 2\n", string(data))
	after, _ := os.Stat(filepath.Join(root, "_cluster/namespace_apps.yaml"))
	assert.True(t, os.SameFile(before, after), "an unchanged file is not rewritten")

	// Delete removes files, then the namespace directory once empty.
	require.NoError(t, d.Delete(ctx, []components.Object{obj("Deployment", "apps", "web"), obj("Secret", "apps", "never-written")}))
	assert.NoDirExists(t, filepath.Join(root, "apps"))
	require.NoError(t, d.Delete(ctx, []components.Object{obj("Namespace", "", "apps")}))
	assert.Equal(t, []string{"_cluster/clusterrole_system:web.yaml", "_cluster/customresourcedefinition_foos.example.com.yaml"}, listDir(t, root))

	ok, err := d.Ready(ctx, release.HealthCheck{Name: "any"}, nil)
	assert.True(t, ok)
	assert.NoError(t, err)
}

func TestDirRefusesUnsafeNames(t *testing.T) {
	root := t.TempDir()
	d := components.NewDir(root)
	for _, o := range []components.Object{
		obj("ConfigMap", "..", "x"),
		obj("ConfigMap", "a/b", "x"),
		obj("ConfigMap", "a", "../../etc/passwd"),
		obj("Con/figMap", "a", "x"),
		obj("ConfigMap", "a", `x\y`),
	} {
		t.Run(o.String(), func(t *testing.T) {
			err := d.Apply(context.Background(), []components.Object{withYAML(o, "x: 1\n")}, components.ApplyOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "cannot be written to a file")
			assert.Error(t, d.Delete(context.Background(), []components.Object{o}))
		})
	}
	assert.Empty(t, listDir(t, root))
}

// Readers never see a partly written file while it is rewritten: each read
// is the old content or the new one.
func TestDirAtomicWrites(t *testing.T) {
	root := t.TempDir()
	d := components.NewDir(root)
	// Two large versions, so that a non-atomic write would be seen half done.
	v1 := "kind: ConfigMap\ndata: " + strings.Repeat("a", 256<<10) + "\n"
	v2 := "kind: ConfigMap\ndata: " + strings.Repeat("b", 256<<10) + "\n"
	o := obj("ConfigMap", "ns", "big")
	require.NoError(t, d.Apply(context.Background(), []components.Object{withYAML(o, v1)}, components.ApplyOptions{}))
	file := filepath.Join(root, "ns", "configmap_big.yaml")

	var stop atomic.Bool
	var reads, torn atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				data, err := os.ReadFile(file)
				if err != nil {
					torn.Add(1)
					continue
				}
				reads.Add(1)
				if s := string(data); s != v1 && s != v2 {
					torn.Add(1)
				}
			}
		})
	}
	for i := range 16 {
		y := v1
		if i%2 == 0 {
			y = v2
		}
		require.NoError(t, d.Apply(context.Background(), []components.Object{withYAML(o, y)}, components.ApplyOptions{}))
	}
	stop.Store(true)
	wg.Wait()
	assert.Positive(t, reads.Load())
	assert.Zero(t, torn.Load(), "a reader saw a missing or partly written file")
	assert.Equal(t, []string{"ns/configmap_big.yaml"}, listDir(t, root), "no temporary file is left")
}

// A write that fails leaves the old content and no temporary file.
func TestDirFailedWriteLeavesNoTemp(t *testing.T) {
	root := t.TempDir()
	d := components.NewDir(root)
	// The object's file name is taken by a non-empty directory: the rename fails.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "ns", "configmap_x.yaml", "inside"), 0o755))
	err := d.Apply(context.Background(), []components.Object{withYAML(obj("ConfigMap", "ns", "x"), "kind: ConfigMap\n")}, components.ApplyOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "components: ConfigMap ns/x: ")
	entries, err := os.ReadDir(filepath.Join(root, "ns"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the directory that was there: no temporary file")
	assert.Equal(t, "configmap_x.yaml", entries[0].Name())

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, d.Apply(cancelled, []components.Object{obj("A", "", "b")}, components.ApplyOptions{}), context.Canceled)
	assert.ErrorIs(t, d.Delete(cancelled, []components.Object{obj("A", "", "b")}), context.Canceled)
	ok, err := d.Ready(cancelled, release.HealthCheck{}, nil)
	assert.False(t, ok)
	assert.ErrorIs(t, err, context.Canceled)
}

// TestDirIdentityHasGroup: two objects of the same kind and name in
// different API groups are two files, and a Manifest through a Dir prunes
// from the Dir's inventory, leaving a file another component took over.
func TestDirIdentityHasGroup(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d := components.NewDir(root)
	m := components.NewManifest(d)
	v1 := manifestCV("backup", "v1.0", "apiVersion: example.com/v1\nkind: Backup\nmetadata: {name: b, namespace: ns}\n---\napiVersion: other.io/v1\nkind: Backup\nmetadata: {name: b, namespace: ns}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\n")
	require.NoError(t, m.Run(ctx, task(nil, v1, nil)))
	assert.Equal(t, []string{
		".hopdag/inventory/default/backup.yaml",
		"ns/backup.example.com_b.yaml", "ns/backup.other.io_b.yaml", "ns/configmap_c.yaml",
	}, listDir(t, root))

	// Someone else's component now owns the ConfigMap's file.
	taken := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: ns\n  labels: {hopdag.io/component: other, hopdag.io/instance: default}\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "ns/configmap_c.yaml"), []byte(taken), 0o644))
	v2 := manifestCV("backup", "v2.0", "apiVersion: example.com/v1\nkind: Backup\nmetadata: {name: b, namespace: ns}\n")
	require.NoError(t, m.Run(ctx, task(v1, v2, nil)))
	assert.Equal(t, []string{
		".hopdag/inventory/default/backup.yaml",
		"ns/backup.example.com_b.yaml", "ns/configmap_c.yaml",
	}, listDir(t, root), "other.io's Backup pruned; the ConfigMap labelled as another component's stays")
	invs, err := d.Inventories(ctx, components.DefaultInstance)
	require.NoError(t, err)
	require.Len(t, invs, 1)
	assert.Equal(t, components.Inventory{Instance: "default", Component: "backup", Version: "v2.0",
		Objects: []components.Ref{{Group: "example.com", Version: "v1", Kind: "Backup", Namespace: "ns", Name: "b"}}}, invs[0])
}

// TestDirPruneRegressions runs the three prune defects' regression tests
// (TestManifestPruneDefaultedNamespace, TestManifestPruneNeedsNoOldValues,
// TestManifestSharedObject) on the Dir applier, which shares the
// Recorder's inventory logic: what is left on disk is what a cluster
// would hold.
func TestDirPruneRegressions(t *testing.T) {
	ctx := context.Background()
	t.Run("namespace defaulted in v1, written out in v2", func(t *testing.T) {
		root := t.TempDir()
		m := components.NewManifest(components.NewDir(root))
		from := manifestCV("app", "v1.0", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\n")
		to := manifestCV("app", "v2.0", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app, namespace: default}\n")
		require.NoError(t, m.Run(ctx, task(nil, from, nil)))
		require.NoError(t, m.Run(ctx, task(from, to, nil)))
		assert.Contains(t, listDir(t, root), "default/deployment.apps_app.yaml", "v2's Deployment, the object v1 applied, is not pruned")
	})
	t.Run("a value only the old templates used", func(t *testing.T) {
		root := t.TempDir()
		d := components.NewDir(root)
		from := manifestCV("app", "v1.0.0", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mirror, namespace: ns}\ndata: {url: '{{ .Values.legacyMirror }}'}\n")
		to := manifestCV("app", "v1.1.0", configMap)
		require.NoError(t, components.NewManifest(d, components.WithValues(map[string]any{"legacyMirror": "old.local"})).Run(ctx, task(nil, from, nil)))
		require.NoError(t, components.NewManifest(d).Run(ctx, task(from, to, nil)), "the values of v1.1.0 lack legacyMirror")
		files := listDir(t, root)
		assert.Contains(t, files, "ns/configmap_a.yaml")
		assert.NotContains(t, files, "ns/configmap_mirror.yaml", "v1.0.0's ConfigMap pruned from the inventory, without rendering v1.0.0 again")
	})
	t.Run("an object two components render", func(t *testing.T) {
		root := t.TempDir()
		m := components.NewManifest(components.NewDir(root))
		ns := "apiVersion: v1\nkind: Namespace\nmetadata: {name: platform}\n"
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: platform}\n"
		b1 := manifestCV("b", "v1.0", ns+"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: platform}\n")
		require.NoError(t, m.Run(ctx, task(nil, b1, nil)))
		a1 := manifestCV("a", "v1.0", ns+"---\n"+cm)
		err := m.Run(ctx, task(nil, a1, nil))
		require.Error(t, err, "a applies the Namespace that b applied")
		assert.True(t, runner.IsPermanent(err), "refused for good: %v", err)
		assert.ErrorContains(t, err, "Namespace platform")
		// a without the Namespace, then a version of a without anything in
		// platform: b's Namespace and ConfigMap stay.
		a2 := manifestCV("a", "v2.0", cm)
		require.NoError(t, m.Run(ctx, task(a1, a2, nil)))
		require.NoError(t, m.Run(ctx, task(a2, manifestCV("a", "v3.0", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: apps}\n"), nil)))
		files := listDir(t, root)
		assert.Contains(t, files, "_cluster/namespace_platform.yaml", "b's Namespace")
		assert.Contains(t, files, "platform/configmap_b.yaml", "b's ConfigMap")
		assert.NotContains(t, files, "platform/configmap_cfg.yaml", "a's ConfigMap, pruned by v3.0")
	})
}
