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

// A --from state that leaves out a track tied to one it names planned as
// if the missing track did not exist: platform=13.01.2 alone went straight
// to 27.03.0, which needs kubernetes >= v1.33. plan and targets refuse it
// and say how to give the missing track, as a flag.
func TestStateLeavesOutTiedTrack(t *testing.T) {
	const want = "hopdag %s: path: invalid option: the current state leaves out track kubernetes, tied to track platform " +
		"(release 13.01.0 on track platform supports kubernetes >= v1.32.0, < v1.34.0): " +
		"give its version in the state: --from platform=%s,kubernetes=VERSION\n"
	tests := []struct {
		name string
		args []string
		from string
	}{
		{"plan", []string{"plan", twoTrack, "--from", "platform=13.01.2", "--to", "platform=27.03.0"}, "13.01.2"},
		{"targets", []string{"targets", twoTrack, "--from", "platform=13.01.0"}, "13.01.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := invoke(tt.args...)
			assert.Equal(t, exitInvalid, code, "hopdag %s: stdout:\n%s", strings.Join(tt.args, " "), stdout)
			assert.Empty(t, stdout)
			assert.Equal(t, fmt.Sprintf(want, tt.name, tt.from), stderr)
		})
	}
}

// writeCatalog writes a catalog of releases (track:version, "" the default
// track) with one component each, and the UpgradePath documents paths, to a
// new directory.
func writeCatalog(t *testing.T, releases []string, paths string) string {
	t.Helper()
	var rel, comp strings.Builder
	for i, tv := range releases {
		track, v, _ := strings.Cut(tv, ":")
		fmt.Fprintf(&rel, "---\napiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata:\n  name: r%d\nspec:\n  version: %q\n  track: %q\n  components:\n    - {name: c%d, version: %q}\n", i, v, track, i, v)
		if sup, ok := strings.CutPrefix(track, "platform"); ok && sup == "" {
			fmt.Fprintf(&rel, "  supports:\n    kubernetes: %q\n", map[string]string{"1.0": ">= v1.0.0, < v1.2.0", "2.0": ">= v1.1.0"}[v])
		}
		fmt.Fprintf(&comp, "---\napiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata:\n  name: c%d\nspec:\n  name: c%d\n  version: %q\n  type: inline\n  handler: c%d\n  expectedDuration: 1m\n", i, i, v, i)
	}
	dir := t.TempDir()
	for name, data := range map[string]string{"releases.yaml": rel.String(), "components.yaml": comp.String(), "upgradepath.yaml": paths} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	return dir
}

// targets showed a deprecated target version, and a route through a
// deprecated edge or version, unmarked, where plan warns; and for --from a
// state it left out the targets behind risks that one-track targets lists.
// Each row now says why it is deprecated, and both list what is behind
// risks.
func TestTargetsMarks(t *testing.T) {
	oneTrack := writeCatalog(t, []string{":v1.0", ":v1.1", ":v1.2", ":v1.3", ":v2.0"}, `apiVersion: hopdag.io/v1alpha1
kind: UpgradePath
metadata:
  name: default
spec:
  rules:
    - {from: v1.0, to: v1.1}
    - {from: v1.1, to: v1.2, deprecated: skips the v1.1 data migration}
    - {from: v1.2, to: v2.0}
    - from: v1.0
      to: v1.3
      risks:
        - {name: r1, message: needs a new kernel}
  versions:
    - {version: v1.1, deprecated: "CVE-2026-1234: do not install"}
`)
	twoTrack := writeCatalog(t, []string{"platform:1.0", "platform:2.0", "kubernetes:v1.0.0", "kubernetes:v1.1.0", "kubernetes:v1.2.0"}, `apiVersion: hopdag.io/v1alpha1
kind: UpgradePath
metadata:
  name: platform
spec:
  track: platform
  rules:
    - from: "1.0"
      to: "2.0"
      risks:
        - {name: needs-iso, message: upload the ISO first}
---
apiVersion: hopdag.io/v1alpha1
kind: UpgradePath
metadata:
  name: kubernetes
spec:
  track: kubernetes
  rules:
    - {from: v1.0.0, to: v1.1.0}
    - {from: v1.1.0, to: v1.2.0}
  versions:
    - {version: v1.1.0, deprecated: "CVE-2026-1234: do not install"}
`)
	tests := []struct {
		golden string
		args   []string
	}{
		{"targets-deprecated.golden", []string{"targets", oneTrack, "--from", "v1.0"}},
		{"targets-deprecated-accept.golden", []string{"targets", oneTrack, "--from", "v1.0", "--accept", "r1"}},
		{"targets-deprecated-routes.golden", []string{"targets", oneTrack, "--from", "v1.0", "--routes"}},
		{"targets-state-marks.golden", []string{"targets", twoTrack, "--from", "platform=1.0,kubernetes=v1.0.0"}},
		{"targets-routes.golden", []string{"targets", catalog, "--from", "v26.06-rc.2", "--routes"}},
		{"targets-two-track-routes.golden", []string{"targets", "../../testdata/two-track", "--from", "platform=13.01.0,kubernetes=v1.33.0", "--routes"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			code, out, stderr := invoke(tt.args...)
			require.Equal(t, exitOK, code, "hopdag %s: stderr:\n%s", strings.Join(tt.args, " "), stderr)
			golden(t, tt.golden, out)
		})
	}
}

// targets printed every target's whole route: on a 4,000-version chain
// about 100 MB (quadratic). The table gives the next hop, so its size grows
// linearly with the versions; --routes still prints whole routes.
func TestTargetsOutputLinear(t *testing.T) {
	const n = 1000
	var rels []string
	var rules strings.Builder
	for i := range n {
		rels = append(rels, fmt.Sprintf(":v1.%d.0", i))
		if i > 0 {
			fmt.Fprintf(&rules, "    - {from: v1.%d.0, to: v1.%d.0}\n", i-1, i)
		}
	}
	dir := writeCatalog(t, rels, "apiVersion: hopdag.io/v1alpha1\nkind: UpgradePath\nmetadata:\n  name: chain\nspec:\n  rules:\n"+rules.String())
	code, out, stderr := invoke("targets", dir, "--from", "v1.0.0")
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, n, "a header and a row per target")
	assert.Equal(t, "v1.999.0  999   v1.0.0 -> v1.1.0", lines[n-1], "the last row: hop count and next hop")
	assert.Less(t, len(out), 64*n, "hopdag targets on a %d-version chain printed %d bytes, want under %d (whole routes?)", n, len(out), 64*n)

	code, out, stderr = invoke("targets", dir, "--from", "v1.0.0", "--routes")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "v1.997.0 -> v1.998.0 -> v1.999.0\n", "--routes prints whole routes")
}
