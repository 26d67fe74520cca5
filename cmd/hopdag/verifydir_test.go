package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestVerifyKeyDirectoryCLI: --verify-key and --verify with a catalog
// directory (or - for the sample) are a usage error on every command that
// takes a catalog, not silently ignored: a directory carries no signature.
// The refused run writes no state.
func TestVerifyKeyDirectoryCLI(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	for _, args := range [][]string{
		{"validate", catalog, "--verify-key", "nonexist.crt"},
		{"targets", catalog, "--from", "v26.06-rc.2", "--verify-key", "nonexist.crt"},
		{"plan", catalog, "--from", "v26.06-rc.2", "--to", "v26.09", "--verify-key", "nonexist.crt"},
		{"graph", "--verify", "optional", catalog, "--from", "v26.06-rc.2", "--to", "v26.09"},
		{"run", catalog, "--from", "v26.06-rc.2", "--to", "v26.09", "--verify-key", "nonexist.crt", "--simulate", "--state", state},
		{"plan", "-", "--from", "v26.06-rc.2", "--to", "v26.09", "--verify-key", "nonexist.crt"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := invoke(args...)
			assert.Equal(t, exitUsage, code, "stdout %q stderr %q", out, errOut)
			assert.Contains(t, errOut, "hopdag "+args[0]+": --verify")
			assert.Contains(t, errOut, "which carries no signature")
			assert.NotContains(t, out, "hop")
		})
	}
	assert.NoDirExists(t, state, "the refused run wrote no state")
}
