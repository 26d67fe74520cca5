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

// A resume whose plan differs because a routing flag changed says which
// flags the route depends on, and how to start over, in the command
// line's terms.
func TestResumeRouteFlagsChanged(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for _, v := range []string{"v1.0", "v1.1", "v2.0-rc.1", "v2.0"} {
		fmt.Fprintf(&b, "---\napiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata: {name: app-%[1]s}\nspec: {name: app, version: %[1]s, command: {args: [\"true\"]}}\n", v)
		fmt.Fprintf(&b, "---\napiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata: {name: r-%[1]s}\nspec: {version: %[1]s, components: [{name: app, version: %[1]s}]}\n", v)
	}
	// Two routes of two hops: through v1.1, or (higher, so preferred once
	// prereleases are allowed) through v2.0-rc.1.
	b.WriteString("---\napiVersion: hopdag.io/v1alpha1\nkind: UpgradePath\nmetadata: {name: p}\nspec:\n  rules:\n" +
		"    - {from: v1.0, to: v1.1}\n    - {from: v1.1, to: v2.0}\n    - {from: v1.0, to: v2.0-rc.1}\n    - {from: v2.0-rc.1, to: v2.0}\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(b.String()), 0o644))
	state := filepath.Join(t.TempDir(), "state")
	run := []string{"run", dir, "--from", "v1.0", "--to", "v2.0", "--simulate", "--state", state}
	code, out, stderr := invoke(append(run, "--until", "v1.1")...)
	require.Equal(t, exitOK, code, "stopped at v1.1 as asked\nstdout:\n%s\nstderr:\n%s", out, stderr)
	require.Contains(t, out, "v1.0 -> v1.1")

	code, _, stderr = invoke(append(run, "--prereleases")...)
	assert.Equal(t, exitInvalid, code, stderr)
	assert.Contains(t, stderr, "hop 1 is v1.0 -> v1.1 in the status, v1.0 -> v2.0-rc.1 in the plan")
	assert.Contains(t, stderr, "or start over with a new --state; the route also depends on --accept, --channel, --prereleases and the catalog: give them as the run in "+state+" was started with")
	assert.NotContains(t, stderr, "no previous status")
}
