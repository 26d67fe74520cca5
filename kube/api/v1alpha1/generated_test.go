package v1alpha1_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGeneratedFilesAreCurrent runs controller-gen into a temporary
// directory and compares its output with the committed deepcopy code, CRD,
// webhook and RBAC manifests: it fails when a type or a marker changed
// without `go generate`.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	gen := os.Getenv("HOPDAG_CONTROLLER_GEN")
	if gen == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("HOPDAG_CONTROLLER_GEN is not set in CI: .ci/run must eval \"$(tools/env.sh)\"")
		}
		t.Skip(`controller-gen not available: run eval "$(tools/env.sh controller-gen)" first`)
	}
	out := t.TempDir()
	for _, args := range [][]string{
		{"object", "paths=./api/...", "output:object:dir=" + filepath.Join(out, "object")},
		{"crd", "paths=./api/...", "output:crd:dir=" + filepath.Join(out, "crd")},
		{"webhook", "paths=./controller/...", "output:webhook:dir=" + filepath.Join(out, "webhook")},
		{"rbac:roleName=hopdag-operator", "paths=./controller/...", "paths=./fleet/...", "output:rbac:dir=" + filepath.Join(out, "rbac")},
	} {
		cmd := exec.Command(gen, args...)
		cmd.Dir = "../.." // the kube module's root
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "controller-gen %v:\n%s", args, b)
	}
	compare := func(generated, committed string) {
		t.Helper()
		want, err := os.ReadFile(generated)
		require.NoError(t, err)
		got, err := os.ReadFile(committed)
		require.NoError(t, err, "%s is missing: run go generate ./api/... ./controller/... in kube/", committed)
		assert.Equal(t, string(want), string(got), "%s is stale: run go generate ./api/... ./controller/... in kube/ (see the package documentation)", committed)
	}
	compare(filepath.Join(out, "object", "zz_generated.deepcopy.go"), "zz_generated.deepcopy.go")
	compare(filepath.Join(out, "webhook", "manifests.yaml"), "../../config/webhook/manifests.yaml")
	compare(filepath.Join(out, "rbac", "role.yaml"), "../../config/rbac/role.yaml")
	crds, err := filepath.Glob(filepath.Join(out, "crd", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, crds, 5, "controller-gen wrote %v, want one CRD per kind", crds)
	committed, err := filepath.Glob("../../config/crd/hopdag.io_*.yaml")
	require.NoError(t, err)
	assert.Len(t, committed, len(crds), "kube/config/crd holds %v: remove the files of kinds that no longer exist", committed)
	for _, f := range crds {
		compare(f, filepath.Join("../../config/crd", filepath.Base(f)))
	}
}
