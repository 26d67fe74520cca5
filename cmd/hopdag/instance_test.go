package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// teamCatalog writes a catalog whose one component, web, installs the
// ConfigMap NAME-config in namespace NAME at v1.0.
func teamCatalog(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	doc := fmt.Sprintf(`apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: v1.0}
spec: {version: v1.0, components: [{name: web, version: "1.0"}]}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: v0.0}
spec: {version: v0.0, components: []}
---
apiVersion: hopdag.io/v1alpha1
kind: UpgradePath
metadata: {name: paths}
spec: {rules: [{from: v0.0, to: v1.0}]}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: web-1.0}
spec:
  name: web
  version: "1.0"
  manifests:
    - template: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: %[1]s-config, namespace: %[1]s}
`, name)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(doc), 0o644))
	return dir
}

// Two catalogs that share a cluster (here an --apply-dir), each with a
// component named web: with an --instance each, installing the second
// leaves the first one's objects alone (with the same instance, the
// second install pruned them as web's previous objects).
func TestInstanceKeepsInstallationsApart(t *testing.T) {
	cluster := t.TempDir()
	for _, team := range []string{"team-x", "team-y"} {
		code, out, stderr := hopdagRun(t, "", "run", teamCatalog(t, team), "--from", "v0.0", "--to", "v1.0", "--apply-dir", cluster, "--instance", team)
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	}
	for _, team := range []string{"team-x", "team-y"} {
		data, err := os.ReadFile(filepath.Join(cluster, team, "configmap_"+team+"-config.yaml"))
		require.NoError(t, err, "%s's ConfigMap", team)
		assert.Contains(t, string(data), "hopdag.io/instance: "+team)
	}

	code, _, stderr := hopdagRun(t, "", "run", teamCatalog(t, "team-z"), "--from", "v0.0", "--to", "v1.0", "--apply-dir", cluster, "--instance", "Team_Z")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `--instance "Team_Z": want 1 to 40 lowercase letters, digits and '-'`)
}

// Two installations that render the same object: the second is refused,
// in the command line's terms (--instance, --take-over), and writes
// nothing; --take-over takes the object over.
func TestTakeOver(t *testing.T) {
	cluster := t.TempDir()
	cat := teamCatalog(t, "shared")
	args := func(instance string, more ...string) []string {
		return append([]string{"run", cat, "--from", "v0.0", "--to", "v1.0", "--apply-dir", cluster, "--instance", instance}, more...)
	}
	code, out, stderr := hopdagRun(t, "", args("ia")...)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	file := filepath.Join(cluster, "shared", "configmap_shared-config.yaml")

	code, out, stderr = hopdagRun(t, "", args("ib")...)
	assert.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.Contains(t, out+stderr, `refused: it belongs to component "web" of instance "ia"`)
	assert.Contains(t, out+stderr, "give both installations the same --instance, or remove the object from one of the two components, or take it over with --take-over")
	assert.NotContains(t, out+stderr, "components.With")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(data), "hopdag.io/instance: ia", "the refused run wrote nothing")

	code, out, stderr = hopdagRun(t, "", args("ib", "--take-over", "--state", t.TempDir())...)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	data, err = os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(data), "hopdag.io/instance: ib", "taken over")
}
