package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A catalog run from a bundle has no directory: .Values.catalog is not
// set to the reference, so a command that reads it is refused before
// anything runs, naming the --set that gives it, and --state stays
// uncreated. Given with --set, it runs.
func TestBundleRunCatalogValue(t *testing.T) {
	dir := t.TempDir()
	ref := "oci-layout://" + filepath.Join(dir, "layout") + ":v2.0"
	code, _, stderr := invoke("bundle", "push", execCatalog, ref)
	require.Equal(t, exitOK, code, "push: %s", stderr)

	state := filepath.Join(dir, "state")
	args := []string{"run", ref, "--from", "v1.0", "--to", "v2.0", "--cache=", "--state", state, "--set", "out=" + filepath.Join(dir, "out")}
	code, out, stderr := invoke(args...)
	assert.Equal(t, exitInvalid, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.Contains(t, stderr, "the template value catalog is not set (.Values.catalog in app 1.1, cache 1.1, config 1.1, db 1.1, app 2.0 and db 2.0): give it with --set catalog=VALUE")
	assert.NotContains(t, stderr, "oci-layout:", "the reference is no directory to reach files in")
	_, err := os.Stat(state)
	assert.ErrorIs(t, err, os.ErrNotExist, "a refused run created --state")

	code, out, stderr = invoke(append(args, "--set", "catalog="+absPath(t, execCatalog))...)
	assert.Equal(t, exitOK, code, "with --set catalog=DIR; stdout:\n%s\nstderr:\n%s", out, stderr)
}

// bundle push warns that the files commands reach through .Values.catalog
// stay behind, naming the components; a catalog without such commands
// gets no warning.
func TestBundlePushWarnsCatalogValue(t *testing.T) {
	for _, tt := range []struct {
		name, catalog, warn string
	}{
		{"exec catalog", execCatalog, "warning: app 1.0, app 1.1, app 2.0, cache 1.0, cache 1.1, config 1.0, config 1.1, db 1.0, db 1.1 and db 2.0 read .Values.catalog"},
		{"sample catalog", catalog, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ref := "oci-layout://" + filepath.Join(t.TempDir(), "layout") + ":v1"
			code, out, stderr := invoke("bundle", "push", tt.catalog, ref)
			require.Equal(t, exitOK, code, "push: %s", stderr)
			assert.Contains(t, out, "pushed ")
			if tt.warn == "" {
				assert.Empty(t, stderr)
				return
			}
			assert.Contains(t, stderr, tt.warn)
			assert.Contains(t, stderr, "--set catalog=DIR")
		})
	}
}
