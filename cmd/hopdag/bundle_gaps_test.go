package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

// keygen never overwrites a key or a certificate: the signatures made
// with them would no longer verify. It refuses, naming the file, and
// writes neither.
func TestBundleKeygenRefusesExisting(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing []string // of NAME.key, NAME.crt
		want     string   // the file named
	}{
		{"both exist", []string{".key", ".crt"}, ".key"},
		{"the key exists", []string{".key"}, ".key"},
		{"the certificate exists", []string{".crt"}, ".crt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "release")
			for _, ext := range tc.existing {
				require.NoError(t, os.WriteFile(name+ext, []byte("earlier "+ext), 0o600))
			}
			code, out, errOut := invoke("bundle", "keygen", name)
			assert.Equal(t, exitInvalid, code, "keygen over %v; stdout %q", tc.existing, out)
			assert.Contains(t, errOut, name+tc.want, "the message names the file")
			assert.Contains(t, errOut, "exists")
			for _, ext := range []string{".key", ".crt"} {
				data, err := os.ReadFile(name + ext)
				if slices.Contains(tc.existing, ext) {
					require.NoError(t, err)
					assert.Equal(t, "earlier "+ext, string(data), "%s is left as it was", ext)
				} else {
					assert.ErrorIs(t, err, fs.ErrNotExist, "%s is not written", ext)
				}
			}
		})
	}
}
