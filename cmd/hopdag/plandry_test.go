package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A field another manager owns (kubectl create, here) stops plan's dry run
// and run with a conflict that names the owner; --force-conflicts takes the
// fields over, as kubectl apply --server-side --force-conflicts does.
func TestForceConflicts(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	byKubectl := metav1.CreateOptions{FieldManager: "kubectl-create"}
	_, err := c.dyn.Resource(namespaces).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": kubeNS}}}, byKubectl)
	require.NoError(t, err)
	_, err = c.dyn.Resource(configMaps).Namespace(kubeNS).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings", "namespace": kubeNS},
		"data": map[string]any{"version": "0.9", "mode": "manual"}}}, byKubectl)
	require.NoError(t, err)
	const conflict = `conflicts with "kubectl-create" on .data.mode, .data.version`

	plan := kubeRunArgs(c, "v0.0", "v1.0", "")
	plan[0] = "plan"
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"plan", plan, 1, conflict},
		{"plan --force-conflicts", append(plan, "--force-conflicts"), 0, "ConfigMap " + kubeNS + "/settings configured"},
		{"run", kubeRunArgs(c, "v0.0", "v1.0", ""), 1, conflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := hopdagEnv(t, nil, tt.args...)
			assert.Equal(t, tt.code, code, "hopdag %s\nstdout:\n%s\nstderr:\n%s", strings.Join(tt.args, " "), out, stderr)
			assert.Contains(t, out+stderr, tt.want)
			assert.Equal(t, "0.9", dataOf(c.get(t, configMaps, kubeNS, "settings"), "version"), "kubectl's value stays")
		})
	}

	t.Run("run --force-conflicts", func(t *testing.T) {
		defer c.deploymentController(t)()
		args := kubeRunArgs(c, "v0.0", "v1.0", "", "--force-conflicts")
		code, out, stderr := hopdagEnv(t, nil, args...)
		require.Equal(t, 0, code, "hopdag %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, stderr)
		assert.Contains(t, out, "config: ConfigMap "+kubeNS+"/settings configured")
		settings := c.get(t, configMaps, kubeNS, "settings")
		assert.Equal(t, "1.0", dataOf(settings, "version"))
		assert.Equal(t, "classic", dataOf(settings, "mode"))
		for _, mf := range settings.GetManagedFields() {
			if mf.Manager == "kubectl-create" {
				assert.NotContains(t, mf.FieldsV1.GetRawString(), `"f:version"`, "hopdag took .data.version over")
			}
		}
	})

	t.Run("needs a cluster", func(t *testing.T) {
		for _, args := range [][]string{
			{"run", kubeCatalog, "--from", "v0.0", "--to", "v1.0", "--apply-dir", t.TempDir(), "--force-conflicts"},
			{"run", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--simulate", "--force-conflicts"},
		} {
			code, _, stderr := invoke(args...)
			assert.Equal(t, exitUsage, code, "hopdag %s: %s", strings.Join(args, " "), stderr)
			assert.Contains(t, stderr, "--force-conflicts")
		}
	})
}

// Plan's dry run covers its first hop only: it says how to see the next
// hop's (run hop 1, then plan from where it left the system), not to dry
// run them all, which would show them against the cluster as it is.
func TestLaterHops(t *testing.T) {
	tests := []struct {
		name     string
		dir      string
		from, to string
		want     string
	}{
		{"two hops", kubeCatalog, "v0.0", "v2.0",
			"Hop 2 (v1.0 -> v2.0) starts from the cluster hop 1 leaves, which no dry run changes: run hop 1 (hopdag run with --until v1.0), then hopdag plan --from v1.0 --to v2.0 dry-runs the next."},
		{"three hops", catalog, "v26.06-rc.2", "v26.09",
			"Hops 2 to 3 start from the cluster hop 1 leaves, which no dry run changes: run hop 1 (hopdag run with --until v26.06-rc.3), then hopdag plan --from v26.06-rc.3 --to v26.09 dry-runs the next."},
		{"across tracks", "../../testdata/two-track", "platform=13.01.0,kubernetes=v1.33.0", "platform=27.03.0,kubernetes=v1.35.0",
			"from the cluster hop 1 leaves, which no dry run changes: run hop 1 (hopdag run with --until 13.01.2), then hopdag plan --from kubernetes=v1.33.0,platform=13.01.2 --to platform=27.03.0,kubernetes=v1.35.0 dry-runs the next."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCLI(env{stdout: io.Discard, stderr: io.Discard}, "plan", commands["plan"])
			c.dir = tt.dir
			require.NoError(t, c.fs.Parse([]string{"--from", tt.from, "--to", tt.to}))
			p, err := c.newPlan()
			require.NoError(t, err)
			require.Greater(t, len(p.Hops), 1)
			assert.Contains(t, laterHops(p, tt.from, tt.to), tt.want)
		})
	}
}
