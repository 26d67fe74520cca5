package apply_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// TestManifestPhases runs a component's declared manifest phases against
// the real API server: drain sets the traffic ConfigMap's weight to 0,
// upgrade applies the new config, test (a handler step) sees the cluster
// between the two (drained, upgraded, the old object not pruned yet), and
// rollout sets the weight back to 100, after which what v1 had and v2's
// phases do not render is pruned and the inventory holds v2's objects.
func TestManifestPhases(t *testing.T) {
	ns := namespace(t)
	a, _ := newApplier(t, ns)
	ctx := context.Background()
	traffic := func(w string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: traffic}\ndata: {weight: '" + w + "'}\n"
	}
	v1 := cv("web", "v1.0", ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config}\ndata: {v: '1'}\n---\n"+
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old}\n")
	v2 := cv("web", "v2.0", ns, "")
	v2.Manifests, v2.Handler = nil, "web"
	v2.Phases = []release.LifecyclePhase{
		{Name: "drain", Manifests: []release.Manifest{{Name: "drain.yaml", Template: traffic("0")}}},
		{Name: "upgrade", Manifests: []release.Manifest{{Name: "upgrade.yaml", Template: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config}\ndata: {v: '2'}\n---\n" +
			"apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: web}\n"}}},
		{Name: "test", Handler: "test"},
		{Name: "rollout", Manifests: []release.Manifest{{Name: "rollout.yaml", Template: traffic("100")}}},
	}
	data := func(name string) map[string]any {
		u := get(t, configmaps, ns, name)
		if u == nil {
			return nil
		}
		d, _ := u.Object["data"].(map[string]any)
		return d
	}
	tested := false
	steps := components.Steps{"test": func(context.Context, runner.Task) error {
		tested = true
		assert.Equal(t, map[string]any{"weight": "0"}, data("traffic"), "drained during test")
		assert.Equal(t, map[string]any{"v": "2"}, data("config"), "upgraded during test")
		assert.True(t, live(t, configmaps, ns, "old"), "nothing pruned before the last manifest phase")
		return nil
	}}
	r := components.NewRouter().
		Register(release.TypeManifest, components.NewManifest(a)).
		Register(release.TypeInline, components.NewInline().Register("web", steps))
	require.NoError(t, r.Validate(v2))
	require.NoError(t, r.Run(ctx, task(nil, v1)))
	require.NoError(t, r.Run(ctx, task(v1, v2)))
	assert.True(t, tested, "the test phase ran")

	assert.Equal(t, map[string]any{"weight": "100"}, data("traffic"))
	assert.False(t, live(t, configmaps, ns, "old"), "pruned after rollout")
	assert.True(t, live(t, serviceAccs, ns, "web"))
	for _, name := range []string{"traffic", "config"} {
		u := get(t, configmaps, ns, name)
		require.NotNil(t, u, name)
		assert.True(t, components.OwnedBy(u.GetLabels(), components.DefaultInstance, "web"), "%s carries web's ownership labels", name)
	}
	invs, err := a.Inventories(ctx, components.DefaultInstance)
	require.NoError(t, err)
	require.Len(t, invs, 1)
	assert.Equal(t, "v2.0", invs[0].Version)
	var refs []string
	for _, r := range invs[0].Objects {
		refs = append(refs, r.String())
	}
	assert.ElementsMatch(t, []string{"ConfigMap " + ns + "/traffic", "ConfigMap " + ns + "/config", "ServiceAccount " + ns + "/web"}, refs)

	// Rolled back: v1's objects again, what v2's phases added pruned, and
	// ConfigMap old, which rollout pruned, back once its deletion ended
	// (collect plays the garbage collector envtest does not run).
	collect(t, nil, components.DefaultInstance, configmaps, serviceAccs)
	require.NoError(t, r.Rollback(ctx, task(v1, v2)))
	assert.Equal(t, map[string]any{"v": "1"}, data("config"))
	assert.True(t, live(t, configmaps, ns, "old"), "the object v2 pruned is back")
	assert.False(t, live(t, configmaps, ns, "traffic"))
	assert.False(t, live(t, serviceAccs, ns, "web"))
}
