package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
)

// --until stops the run after a hop (exit 0, the status says so); a gate
// stops it before a hop (exit 3) until hopdag approve; then it finishes.
func TestRunUntilGateApprove(t *testing.T) {
	state := t.TempDir()
	base := []string{"run", "-", "--from", "v26.06-rc.2", "--to", "v26.09", "--simulate", "--speed", "20000", "--state", state}
	code, out, stderr := invoke(append(base, "--until", "v26.06-rc.3")...)
	assert.Equal(t, 0, code, "--until: stderr:\n%s", stderr)
	assert.Contains(t, stderr, "hopdag run: stopped after v26.06-rc.3 as asked (until v26.06-rc.3); run again without it to continue\n", "what to do next is a note on stderr")
	assert.NotContains(t, stderr, "stopped as asked: stopped")
	assert.Contains(t, out, "status v26.06-rc.2 -> v26.09: Paused")

	code, out, stderr = invoke(append(base, "--gate", "v26.09")...)
	assert.Equal(t, exitWaiting, code, "--gate: stderr:\n%s\nstdout:\n%s", stderr, out)
	assert.Contains(t, stderr, "hopdag run: waiting for approval of v26.09")

	code, out, stderr = invoke("approve", "--state", state, "--by", "alice", "v26.06")
	assert.Equal(t, 1, code, "approve a step that does not wait: stdout:\n%s", out)
	assert.Contains(t, stderr, "step is not waiting for approval: v26.06 (waiting: v26.09)")

	code, out, stderr = invoke("approve", "--state", state, "--by", "alice", "v26.09")
	assert.Equal(t, 0, code, "approve: stderr:\n%s", stderr)
	assert.Contains(t, out, "approved v26.09 (by alice at ")

	code, out, stderr = invoke(append(base, "--gate", "v26.09")...)
	assert.Equal(t, 0, code, "after approval: stderr:\n%s\nstdout:\n%s", stderr, out)
	assert.Contains(t, out, "status v26.06-rc.2 -> v26.09: Succeeded")

	code, _, stderr = invoke("approve", "--by", "alice", "v26.09")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--state is required")
}

// A --gate is recorded with the run: the same command without --gate
// still stops at it (an approval is never implied by a restart), nothing
// past it runs, hopdag status names it; hopdag approve lets the run go on.
func TestGateSurvivesRestart(t *testing.T) {
	state := t.TempDir()
	base := []string{"run", "-", "--from", "v26.06-rc.2", "--to", "v26.09", "--simulate", "--speed", "20000", "--state", state}
	code, out, stderr := invoke(append(base, "--gate", "v26.09")...)
	require.Equal(t, exitWaiting, code, "--gate: stderr:\n%s\nstdout:\n%s", stderr, out)

	code, out, stderr = invoke(base...)
	assert.Equal(t, exitWaiting, code, "restart without --gate: stderr:\n%s\nstdout:\n%s", stderr, out)
	assert.Contains(t, out, "waiting for approval of v26.09")
	_, js, _ := invoke("status", "--state", state, "-o", "json")
	var st record.Status
	require.NoError(t, json.Unmarshal([]byte(js), &st), js)
	assert.Equal(t, []string{"v26.09"}, st.Gates)
	last := st.Hops[len(st.Hops)-1]
	require.Equal(t, "v26.09", last.To)
	for _, c := range last.Components {
		assert.Equal(t, record.Pending, c.Phase, "%s on the gated hop ran", c.Name)
	}
	_, table, _ := invoke("status", "--state", state)
	assert.Contains(t, table, "gated: v26.09 (waiting)")

	code, _, stderr = invoke("approve", "--state", state, "--by", "alice", "v26.09")
	require.Equal(t, 0, code, "approve: stderr:\n%s", stderr)
	code, out, stderr = invoke(base...)
	assert.Equal(t, 0, code, "after approval: stderr:\n%s\nstdout:\n%s", stderr, out)
	assert.Contains(t, out, "status v26.06-rc.2 -> v26.09: Succeeded")
	_, table, _ = invoke("status", "--state", state)
	assert.Contains(t, table, "gated: v26.09 (approved by alice)")
}

// A --gate that names no hop is refused in the command's terms.
func TestGateUnknownHop(t *testing.T) {
	code, _, stderr := invoke("run", "-", "--from", "v26.06-rc.2", "--to", "v26.09", "--simulate", "--speed", "20000", "--gate", "v9")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "hopdag run: --gate v9: the plan has no hop to v9")
	assert.NotContains(t, stderr, "simulate:")
}

// --until HOP/COMPONENT/PHASE refuses a phase the component does not
// have, listing those it has, before anything runs.
func TestUntilUnknownPhase(t *testing.T) {
	state := t.TempDir()
	code, out, stderr := invoke("run", "-", "--from", "v26.06-rc.2", "--to", "v26.09", "--simulate", "--speed", "20000", "--state", state,
		"--until", "v26.06-rc.3/provider/nosuch")
	assert.Equal(t, 1, code, "stdout:\n%s", out)
	assert.Contains(t, stderr, "until v26.06-rc.3/provider/nosuch: provider has no phase nosuch: a manifest component without spec.phases has no phases to stop at; stop after the component (HOP/provider)")
	assert.NotContains(t, out, "stopped after")
}

// --gate takes hops only: a component or phase in it is refused saying
// that those gates are declared in the catalog; an --until with an empty
// part says so; --grace must be positive, --lease-ttl at least
// state.MinTTL. Each before anything runs.
func TestStepFlagMistakes(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"gate of a component", []string{"--gate", "v26.09/calico"}, exitInvalid,
			"--gate v26.09/calico: --gate takes hops (their target versions: v26.06-rc.3, v26.06, v26.09); a component's or a phase's gate is declared in the catalog (gate: on the ComponentVersion, or on one of its phases)"},
		{"until with an empty component", []string{"--until", "v26.09/"}, exitUsage, "--until v26.09/: the component after \"v26.09/\" is empty; want HOP, HOP/COMPONENT or HOP/COMPONENT/PHASE"},
		{"until with an empty phase", []string{"--until", "v26.09/calico/"}, exitUsage, "--until v26.09/calico/: the phase after \"v26.09/calico/\" is empty"},
		{"until with an empty hop", []string{"--until", "/calico"}, exitUsage, "--until /calico: the hop before \"/calico\" is empty"},
		{"grace of zero", []string{"--grace", "0s"}, exitUsage, "--grace 0s: want more than 0"},
		{"lease of a second", []string{"--lease-ttl", "1s"}, exitUsage, "--lease-ttl 1s: want at least 5s (the lease is refreshed every third of it"},
		{"lease of zero", []string{"--lease-ttl", "0s"}, exitUsage, "--lease-ttl 0s: want at least 5s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			args := append([]string{"run", "-", "--from", "v26.06-rc.2", "--to", "v26.09", "--simulate", "--speed", "20000", "--state", state}, tt.args...)
			code, out, stderr := invoke(args...)
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
			assert.Contains(t, stderr, tt.want)
			assert.Empty(t, out)
			assert.NoDirExists(t, state)
		})
	}
}

// gatedCatalog is a catalog of one exec component, a, whose upgrade from
// v1 to v2 is gated by its rule with a reason, and whose v2 is gated
// itself with another.
const gatedCatalog = `apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: r1}
spec: {version: v1.0, components: [{name: a, version: "1.0"}, {name: b, version: "1.0"}]}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: r2}
spec: {version: v2.0, components: [{name: a, version: "2.0"}, {name: b, version: "2.0"}]}
---
apiVersion: hopdag.io/v1alpha1
kind: UpgradePath
metadata: {name: p}
spec: {rules: [{from: v1.0, to: v2.0, gate: {reason: take a db backup first}}]}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: a-1}
spec: {name: a, version: "1.0", type: exec, command: {args: ["true"]}}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: a-2}
spec: {name: a, version: "2.0", type: exec, command: {args: ["true"]}, gate: {reason: look at the canary}}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: b-1.0}
spec: {name: b, version: "1.0", type: exec, command: {args: ["true"]}}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: b-2.0}
spec: {name: b, version: "2.0", type: exec, command: {args: ["true"]}, gate: {}}
`

// A run stopped at a gate says why the gate is there (the reason the
// catalog gives the hop, which the table has no other place for), and
// once the step is approved, run and status stop telling the operator
// to approve it: they say it is approved and to run again.
func TestGateReasonAndApproved(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(gatedCatalog), 0o644))
	state := filepath.Join(t.TempDir(), "state")
	base := []string{"run", dir, "--from", "v1.0", "--to", "v2.0", "--simulate", "--speed", "20000", "--state", state}
	hop := "waiting for approval of v2.0 (take a db backup first); approve with: hopdag approve --state " + state + " v2.0, then run again"

	code, out, stderr := invoke(base...)
	require.Equal(t, exitWaiting, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.Contains(t, stderr, "hopdag run: "+hop+"\n", "run names the gate's reason")
	code, table, _ := invoke("status", "--state", state)
	assert.Equal(t, exitRunning, code)
	assert.Contains(t, table, "message: "+hop+"\n")

	code, _, stderr = invoke("approve", "--state", state, "--by", "alice", "v2.0")
	require.Equal(t, 0, code, "approve: stderr:\n%s", stderr)
	code, table, _ = invoke("status", "--state", state)
	assert.Equal(t, exitRunning, code, "approved, not yet run again: not finished")
	assert.Contains(t, table, "message: v2.0 approved by alice; run again to continue\n")
	assert.NotContains(t, table, "approve with")
	_, js, _ := invoke("status", "--state", state, "-o", "json")
	var st record.Status
	require.NoError(t, json.Unmarshal([]byte(js), &st), js)
	assert.Equal(t, "v2.0 approved by alice; run again to continue", st.Message)

	code, out, stderr = invoke(base...)
	require.Equal(t, exitWaiting, code, "the component's gate: stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.Contains(t, stderr, "hopdag run: waiting for approval of v2.0/a (look at the canary), v2.0/b; approve with: hopdag approve --state "+state+" v2.0/a; hopdag approve --state "+state+" v2.0/b, then run again\n")

	code, _, stderr = invoke("approve", "--state", state, "--by", "bob", "v2.0/a")
	require.Equal(t, 0, code, "approve: stderr:\n%s", stderr)
	_, table, _ = invoke("status", "--state", state)
	assert.Contains(t, table, "message: waiting for approval of v2.0/b; approve with: hopdag approve --state "+state+" v2.0/b, then run again (v2.0/a approved by bob)\n")
}

func TestApprover(t *testing.T) {
	tests := []struct{ by, user, want string }{
		{"alice", "bob", "alice"},
		{"", "bob", "bob"},
		{"", "", "operator"},
		{"alice", "", "alice"},
	}
	for _, tt := range tests {
		if got := approver(tt.by, tt.user); got != tt.want {
			t.Errorf("approver(%q, %q) = %q, want %q", tt.by, tt.user, got, tt.want)
		}
	}
}

// Without --by, the approval is recorded as $USER; the help says so
// whoever reads it (TestHelpAndUsageGolden runs with USER set, too).
func TestApproveByDefaultsToUser(t *testing.T) {
	t.Setenv("USER", "carol")
	state := t.TempDir()
	base := []string{"run", "-", "--from", "v26.06-rc.2", "--to", "v26.09", "--simulate", "--speed", "20000", "--state", state}
	code, out, stderr := invoke(append(base, "--gate", "v26.09")...)
	require.Equal(t, exitWaiting, code, "--gate: stderr:\n%s\nstdout:\n%s", stderr, out)
	code, out, stderr = invoke("approve", "--state", state, "v26.09")
	require.Equal(t, 0, code, "approve: stderr:\n%s", stderr)
	assert.Contains(t, out, "approved v26.09 (by carol at ")
	_, help, _ := invoke("approve", "--help")
	assert.Contains(t, help, "(default: $USER, else operator)")
	assert.NotContains(t, help, "carol")
}
