package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pushLayout pushes the test catalog to an OCI layout under dir and
// returns its reference; no registry is needed.
func pushLayout(t *testing.T, dir string) string {
	t.Helper()
	ref := "oci-layout://" + filepath.Join(dir, "layout") + ":v26.09"
	code, _, errOut := invoke("bundle", "push", catalog, ref, "--cache=")
	require.Equal(t, exitOK, code, "push: %s", errOut)
	return ref
}

// export and copy say what they did in English: "exported", "copied".
func TestBundleCopyExportWords(t *testing.T) {
	dir := t.TempDir()
	ref := pushLayout(t, dir)
	for _, tc := range []struct{ sub, dst, want string }{
		{"export", filepath.Join(dir, "offline.tar"), "exported " + ref},
		{"copy", "oci-layout://" + filepath.Join(dir, "copy") + ":v26.09", "copied " + ref},
	} {
		t.Run(tc.sub, func(t *testing.T) {
			code, out, errOut := invoke("bundle", tc.sub, ref, tc.dst, "--cache=")
			require.Equal(t, exitOK, code, "%s: %s", tc.sub, errOut)
			assert.Contains(t, out, tc.want, "bundle %s output", tc.sub)
		})
	}
}
