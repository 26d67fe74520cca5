package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValidateSingular: "1 upgrade rules", "1 component versions". Its
// rule from v1.0 to itself does nothing: validate lists the catalog's
// warnings (release.Catalog.Warnings) with file:line, and still succeeds.
func TestValidateSingular(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(`apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: etcd}
spec: {name: etcd, version: v1.0, handler: etcd}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: v1.0}
spec: {version: v1.0, components: [{name: etcd, version: v1.0}]}
---
apiVersion: hopdag.io/v1alpha1
kind: UpgradePath
metadata: {name: paths}
spec: {rules: [{from: v1.0, to: v1.0}]}
`), 0o644))
	code, out, stderr := invoke("validate", dir)
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	assert.Equal(t, "warning: catalog.yaml:14: spec.rules[0].to: rule upgrades from v1.0 to itself: it gives no edge; set to to the version the rule upgrades to, or remove the rule\n"+
		dir+": ok: 1 release, 1 component version, 1 upgrade rule (1 warning)\n", out)
}

// TestValidateCycle: validate reported a catalog with dependency cycles
// "ok"; it reports each cycle with the file:line of its ComponentVersions.
func TestValidateCycle(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(`apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: x}
spec: {name: x, version: v1.0, handler: x, dependencies: [y]}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: y}
spec: {name: y, version: v1.0, handler: y, dependencies: [x]}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: v1.0}
spec: {version: v1.0, components: [{name: x, version: v1.0}, {name: y, version: v1.0}]}
`), 0o644))
	code, out, stderr := invoke("validate", dir)
	assert.Equal(t, exitInvalid, code)
	assert.Equal(t, "catalog.yaml:4: spec.dependencies[0]: dependency cycle: x v1.0 (catalog.yaml:1) -> y v1.0 (catalog.yaml:6) -> x v1.0 (catalog.yaml:1) (in release v1.0); remove one of the dependencies on the cycle (each is in spec.dependencies of the component before it)\n"+dir+": 1 problem\n", out,
		"the report is data: every problem and the count on stdout")
	assert.Empty(t, stderr)
	code, _, stderr = invoke("plan", dir, "--to", "v1.0", "--from", "v1.0")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "catalog.yaml:4: spec.dependencies[0]: dependency cycle: x v1.0 (catalog.yaml:1) -> y v1.0 (catalog.yaml:6) -> x v1.0 (catalog.yaml:1)", "plan gives the same file:line")
}
