package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hopdag plan stays the dry run of any executor (a Go program may run
// inline components), but warns, naming hopdag run, when hopdag run would
// refuse the plan at its plan step; it still exits 0.
func TestPlanWarnsWhatRunRefuses(t *testing.T) {
	code, out, stderr := invoke("plan", catalog, "--from", "v26.06", "--to", "v26.09")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "plan v26.06 -> v26.09")
	// Inline components are said once, in the plan's header: no warning.
	assert.True(t, strings.HasPrefix(out, "note: inline components bkeagent, containerd, "), out)
	assert.Contains(t, out, " are Go: a program that registers their handlers runs them, hopdag run --simulate simulates them\n")
	assert.Empty(t, stderr)

	code, _, stderr = invoke("plan", "testdata/exec-catalog", "--from", "v1.0", "--to", "v2.0")
	assert.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "warning", "an exec catalog runs from the command line")

	// A rule with onFailure: rollback whose exec components have no
	// spec.rollback: run refuses it at its plan step, plan warns.
	code, _, stderr = invoke("plan", "testdata/rollback-catalog", "--from", "v1.0", "--to", "v1.1")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "hopdag plan: warning: hopdag run would refuse this plan")
	assert.Contains(t, stderr, "component db: runner: cannot roll back: components: db 1.1: validate-rollback: no rollback command: declare spec.rollback.args")
	code, _, stderr = invoke("run", "testdata/rollback-catalog", "--from", "v1.0", "--to", "v1.1", "--state", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "component db: runner: cannot roll back: components: db 1.1: validate-rollback: no rollback command: declare spec.rollback.args")

	// The command line runs helm components too.
	code, _, stderr = invoke("plan", helmCatalog(t), "--from", "v0.0", "--to", "v2.0")
	assert.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "warning", "a helm catalog runs from the command line")

	_, out, _ = invoke("plan", "-h")
	assert.Contains(t, out, "warns when hopdag run would refuse")
}

// sharedCatalog is a catalog whose upgrade to v1.1 has components a and b
// both render ConfigMap NS/shared, NS being {{.Values.ns}} when values is
// true (and demo otherwise): run refuses it at its plan step.
func sharedCatalog(t *testing.T, values bool) string {
	t.Helper()
	ns := "demo"
	if values {
		ns = "{{.Values.ns}}"
	}
	var b strings.Builder
	b.WriteString("apiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata: {name: r1.0}\nspec: {version: v1.0, components: [{name: a, version: \"1.0\"}, {name: b, version: \"1.0\"}]}\n")
	b.WriteString("---\napiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata: {name: r1.1}\nspec: {version: v1.1, components: [{name: a, version: \"1.1\"}, {name: b, version: \"1.1\"}]}\n")
	for _, c := range []string{"a", "b"} {
		for _, v := range []string{"1.0", "1.1"} {
			name := c
			if v == "1.1" {
				name = "shared"
			}
			fmt.Fprintf(&b, "---\napiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata: {name: %s-%s}\nspec:\n  name: %s\n  version: \"%s\"\n  type: manifest\n  expectedDuration: 1s\n"+
				"  manifests:\n    - name: cm.yaml\n      template: |\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: %s, namespace: %s}\n", c, v, c, v, name, ns)
		}
	}
	b.WriteString("---\napiVersion: hopdag.io/v1alpha1\nkind: UpgradePath\nmetadata: {name: paths}\nspec:\n  rules: [{from: v1.0, to: v1.1}]\n")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(b.String()), 0o644))
	return dir
}

// rollbackValuesCatalog is a catalog whose upgrade to v1.1 rolls back on
// failure (onFailure: rollback) and whose exec component a runs and rolls
// back with commands that read .Values.out.
func rollbackValuesCatalog(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata: {name: r1.0}\nspec: {version: v1.0, components: [{name: a, version: \"1.0\"}]}\n")
	b.WriteString("---\napiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata: {name: r1.1}\nspec: {version: v1.1, components: [{name: a, version: \"1.1\"}]}\n")
	for _, v := range []string{"1.0", "1.1"} {
		fmt.Fprintf(&b, "---\napiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata: {name: a-%s}\nspec:\n  name: a\n  version: \"%s\"\n  type: exec\n"+
			"  command: {args: [touch, \"{{.Values.out}}/a\"]}\n  rollback: {args: [rm, -f, \"{{.Values.out}}/a\"]}\n", v, v)
	}
	b.WriteString("---\napiVersion: hopdag.io/v1alpha1\nkind: UpgradePath\nmetadata: {name: paths}\nspec:\n  rules: [{from: v1.0, to: v1.1, onFailure: rollback}]\n")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(b.String()), 0o644))
	return dir
}

// Given the values (--set), or on a catalog that needs none, plan checks
// the templates and the objects two components render as run's plan step
// does, and warns of what run would refuse; without the values a catalog
// needs, it leaves those to run.
func TestPlanChecksTemplatesWithValues(t *testing.T) {
	const refuse = "hopdag plan: warning: hopdag run would refuse this plan"
	const shared = "ConfigMap %s/shared is rendered by two components, a and b"
	tests := []struct {
		name string
		args []string
		want []string // in the warning; none: no warning
		not  []string // in neither plan's warning nor run's refusal
	}{
		{"exec: no values given", []string{execCatalog, "--from", "v1.0", "--to", "v2.0"}, nil, nil},
		{"exec: the values given", []string{execCatalog, "--from", "v1.0", "--to", "v2.0", "--set", "out=/tmp/x"}, nil, nil},
		{"exec: a value missing", []string{execCatalog, "--from", "v1.0", "--to", "v2.0", "--set", "foo=bar"},
			[]string{"the template value out is not set (.Values.out in app 1.1, cache 1.1, config 1.1, db 1.1, app 2.0 and db 2.0): give it with --set out=VALUE"}, nil},
		{"shared: no values needed", []string{sharedCatalog(t, false), "--from", "v1.0", "--to", "v1.1"}, []string{fmt.Sprintf(shared, "demo")}, nil},
		{"shared: values given", []string{sharedCatalog(t, true), "--from", "v1.0", "--to", "v1.1", "--set", "ns=prod"}, []string{fmt.Sprintf(shared, "prod")}, nil},
		{"shared: values not given", []string{sharedCatalog(t, true), "--from", "v1.0", "--to", "v1.1"}, nil, nil},
		// A rollback command that reads a value no --set gives is that
		// value missing, said once, not a rollback the component cannot do.
		{"rollback: no values given", []string{rollbackValuesCatalog(t), "--from", "v1.0", "--to", "v1.1"}, nil, nil},
		{"rollback: a value missing", []string{rollbackValuesCatalog(t), "--from", "v1.0", "--to", "v1.1", "--set", "foo=bar"},
			[]string{"the template value out is not set (.Values.out in a 1.1): give it with --set out=VALUE"}, []string{"cannot roll back", "map has no entry"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := invoke(append([]string{"plan"}, tt.args...)...)
			assert.Equal(t, 0, code, stderr)
			if len(tt.want) == 0 {
				assert.NotContains(t, stderr, "warning")
				return
			}
			assert.Contains(t, stderr, refuse)
			for _, w := range tt.want {
				assert.Contains(t, stderr, w)
			}
			for _, w := range tt.not {
				assert.NotContains(t, stderr, w)
			}
			// run refuses it, saying the same.
			code, _, stderr = invoke(append([]string{"run", "--apply-dir", t.TempDir()}, tt.args...)...)
			assert.Equal(t, 1, code, stderr)
			for _, w := range tt.want {
				assert.Contains(t, stderr, w, "hopdag run says it too")
			}
			for _, w := range tt.not {
				assert.NotContains(t, stderr, w, "hopdag run")
			}
		})
	}
}

// A plan whose components declare no expected duration says no duration
// (no "expected 0s", "(serial 0s)" or "critical path ... (0s)").
func TestPlanWithoutDurations(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(`apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: x-1}
spec: {name: x, version: "1.0", type: exec, command: {args: ["true"]}}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: x-2}
spec: {name: x, version: "2.0", type: exec, command: {args: ["true"]}}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: v1}
spec: {version: v1.0, components: [{name: x, version: "1.0"}]}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: v2}
spec: {version: v2.0, components: [{name: x, version: "2.0"}]}
---
apiVersion: hopdag.io/v1alpha1
kind: UpgradePath
metadata: {name: paths}
spec: {rules: [{from: v1.0, to: v2.0}]}
`), 0o644))
	code, out, stderr := invoke("plan", dir, "--from", "v1.0", "--to", "v2.0")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "plan v1.0 -> v2.0: 1 hop, 1 component\nhop 1/1 v1.0 -> v2.0: 1 component\n  batch 1: x\n  critical path: x\n", out)
	assert.NotContains(t, out, "0s")
}
