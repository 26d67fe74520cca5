package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A rolled-back run says what to do from the command line: its status is
// final, so a new --state starts over, or the same --state takes the next
// upgrade from where it left the system (running it again is refused, and
// says so in CLI terms); nothing names Go API.
func TestRolledBackSaysWhatToDo(t *testing.T) {
	state := t.TempDir()
	base := []string{"run", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--simulate", "--speed", "20000"}
	code, _, stderr := invoke(append(base, "--state", state, "--fail", "calico", "--on-failure", "rollback")...)
	require.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "v26.06-rc.2 -> v26.06-rc.3 rolled back: its status in "+state+" is final: start over with a new --state")
	assert.NotContains(t, stderr, "run the same command again to resume")

	code, _, stderr = invoke(append(base, "--state", state)...)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "was rolled back")
	assert.Contains(t, stderr, "its status is final: start over with a new --state")
	assert.Contains(t, stderr, ", or run the next upgrade --from v26.06-rc.2 (where it left the system) with this --state",
		"the refusal says, as the rollback did, that this --state takes the next upgrade")
	assert.NotContains(t, stderr, "empty status")

	code, _, stderr = invoke(append(base, "--state", t.TempDir())...)
	assert.Equal(t, 0, code, "a new --state starts over: %s", stderr)
}

// A run waiting at a gate gives the hopdag approve command with its
// --state, not Go API.
func TestGateMessageNamesTheCommand(t *testing.T) {
	state := t.TempDir()
	code, out, stderr := invoke("run", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--simulate", "--speed", "20000", "--state", state, "--gate", "v26.06-rc.3")
	require.Equal(t, exitWaiting, code, stderr)
	assert.Contains(t, out, "waiting for approval of v26.06-rc.3; approve with: hopdag approve --state "+state+" v26.06-rc.3, then run again")
	assert.NotContains(t, out, "Status.Approve")
	_, table, _ := invoke("status", "--state", state)
	assert.NotContains(t, table, "Status.Approve")
}

// The JSON and YAML status and the audit log say the same as the table: a
// gate's message names hopdag approve, not Go API; hopdag approve takes
// --log-file as abandon does and records the approval there.
func TestGateMessageEverywhere(t *testing.T) {
	state, log := t.TempDir(), filepath.Join(t.TempDir(), "audit.log")
	code, _, stderr := invoke("run", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--simulate", "--speed", "20000", "--state", state, "--gate", "v26.06-rc.3", "--log-file", log)
	require.Equal(t, exitWaiting, code, stderr)
	want := "waiting for approval of v26.06-rc.3; approve with: hopdag approve --state " + state + " v26.06-rc.3, then run again"
	for _, o := range []string{"json", "yaml"} {
		_, out, _ := invoke("status", "--state", state, "-o", o)
		assert.Contains(t, out, want, "status -o %s", o)
		assert.NotContains(t, out, "Status.Approve", "status -o %s", o)
	}
	audit, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Contains(t, string(audit), want)
	assert.NotContains(t, string(audit), "Status.Approve")

	code, out, stderr := invoke("approve", "--state", state, "--by", "alice", "--log-file", log, "v26.06-rc.3")
	require.Equal(t, exitOK, code, "approve --log-file: stdout:\n%s\nstderr:\n%s", out, stderr)
	recs := auditLines(t, log)
	var approve *auditRecord
	for i := range recs {
		if recs[i].Kind == "approve" {
			approve = &recs[i]
		}
	}
	if assert.NotNil(t, approve, "the audit log records the approval") {
		assert.Equal(t, "v26.06-rc.3", approve.Step)
		assert.Equal(t, "alice", approve.By)
	}
	last := recs[len(recs)-1]
	assert.Equal(t, "exit", last.Kind)
	assert.EqualValues(t, 0, *last.Status)
}

// A library message that names Go API names the flag instead.
func TestRegistryMessageNamesTheFlag(t *testing.T) {
	code, _, stderr := invoke("plan", "oci://127.0.0.1:1/demo/exec:v2.0", "--from", "v1.0", "--to", "v2.0", "--cache=")
	assert.Equal(t, exitInvalid, code, stderr)
	assert.Contains(t, stderr, "allow the cache fallback (--cache-fallback) to use a bundle pulled before")
	assert.NotContains(t, stderr, "WithCache")
}

// Route closures name the flags that open them.
func TestPrereleaseClosureNamesFlags(t *testing.T) {
	assert.Equal(t, "v2-rc.1 is a prerelease: a route between GA versions enters none unless prereleases are allowed (--prereleases, or a --channel that lists it)",
		cliText("v2-rc.1 is a prerelease: a route between GA versions enters none unless prereleases are allowed (path.AllowPrereleases, or a channel listing it: path.WithChannel)"))
	assert.Equal(t, "v2 is not in channel beta (--channel)", cliText("v2 is not in channel beta (path.WithChannel)"))
}
