package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
)

// c's rollback in rollbackCatalog.
const (
	transient    = iota // fails the first time, succeeds after
	irreversible        // c 2.0 is irreversible
	slow                // the first time, works until stopped
)

// rollbackCatalog writes a catalog v1.0 -> v2.0 of exec components a <-
// c <- b: b's upgrade fails; every command logs "run NAME" or
// "rollback NAME" to log. c's rollback is as cRollback says; a slow one
// creates dir/started once it runs.
func rollbackCatalog(t *testing.T, cRollback int) (dir, log string) {
	t.Helper()
	dir = t.TempDir()
	log = filepath.Join(dir, "log")
	var b strings.Builder
	for _, v := range []string{"1.0", "2.0"} {
		fmt.Fprintf(&b, "apiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata: {name: r%s}\nspec: {version: v%s, components: [{name: a, version: %q}, {name: c, version: %q}, {name: b, version: %q}]}\n---\n", v, v, v, v, v)
	}
	sh := func(script string) string { return fmt.Sprintf("{args: [sh, -c, %q]}", script) }
	for _, name := range []string{"a", "c", "b"} {
		for _, v := range []string{"1.0", "2.0"} {
			deps := map[string]string{"a": "[]", "c": "[a]", "b": "[c]"}[name]
			run := sh(fmt.Sprintf("echo run %s >>%s", name, log))
			if name == "b" && v == "2.0" {
				run = sh(fmt.Sprintf("echo run %s >>%s; echo b is broken >&2; exit 1", name, log))
			}
			rollback := sh(fmt.Sprintf("echo rollback %s >>%s", name, log))
			extra := ""
			once := filepath.Join(dir, "started")
			switch {
			case name != "c":
			case cRollback == irreversible:
				extra = "  irreversible: schema migration\n"
			case cRollback == transient:
				rollback = sh(fmt.Sprintf("echo rollback %s >>%s; test -e %s || { touch %s; echo c cannot roll back yet >&2; exit 1; }", name, log, once, once))
			case cRollback == slow:
				rollback = sh(fmt.Sprintf("echo rollback %s >>%s; test -e %s || { touch %s; exec sleep 60; }", name, log, once, once))
			}
			fmt.Fprintf(&b, "apiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata: {name: %s-%s}\nspec:\n  name: %s\n  version: %q\n  type: exec\n  dependencies: %s\n  command: %s\n  rollback: %s\n%s---\n",
				name, v, name, v, deps, run, rollback, extra)
		}
	}
	b.WriteString("apiVersion: hopdag.io/v1alpha1\nkind: UpgradePath\nmetadata: {name: paths}\nspec:\n  rules: [{from: v1.0, to: v2.0}]\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(b.String()), 0o644))
	return dir, log
}

// runLog returns the lines of log (nil for none), and empties it.
func runLog(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	require.NoError(t, os.Truncate(log, 0))
	if len(b) == 0 {
		return nil
	}
	return strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' })
}

// A rollback that failed is retried by running the same command again,
// and hopdag run says so; one that stopped at an irreversible component
// is not, and hopdag run says what the operator must do instead of
// telling them to run again (which would change nothing).
func TestRollbackFailedResumeHint(t *testing.T) {
	tests := []struct {
		name      string
		cRollback int
		first     []string // what the first run ran, in order
		hint      string
		again     []string // what running again ran
		againHint string
	}{
		{
			name: "transient rollback failure", cRollback: transient, first: []string{"run a", "run c", "run b", "rollback b", "rollback c"},
			hint:  "v1.0 -> v2.0 rollback failed: the status is saved in STATE; run the same command again to retry the rollback of c on hop 1\n",
			again: []string{"rollback c", "rollback a"}, againHint: "v1.0 -> v2.0 rolled back: its status in STATE is final",
		},
		{
			name: "irreversible", cRollback: irreversible, first: []string{"run a", "run c", "run b", "rollback b"},
			hint: "v1.0 -> v2.0 rollback failed: the rollback stopped at irreversible components, which stay at their target (c 2.0 on hop 1), " +
				"and so does what they depend on (a 2.0 on hop 1): running the same command again changes nothing. " +
				"Bring the system to one release by hand, abandon this run (hopdag abandon --state STATE), " +
				"then start the next upgrade --from v1.0 with this --state if the system is back there, or with a new --state from wherever it is\n",
			again: nil, againHint: "running the same command again changes nothing",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, log := rollbackCatalog(t, tc.cRollback)
			state := t.TempDir()
			args := []string{"run", dir, "--from", "v1.0", "--to", "v2.0", "--state", state, "--on-failure", "rollback", "--max-parallel", "1", "--lease-ttl", testLeaseTTL}
			code, _, stderr := invoke(args...)
			require.Equal(t, exitInvalid, code, stderr)
			assert.Equal(t, tc.first, runLog(t, log), "the first run")
			assert.Contains(t, stderr, strings.ReplaceAll(tc.hint, "STATE", state))
			assert.NotContains(t, stderr, "run the same command again to resume")

			code, _, stderr = invoke(args...)
			assert.Equal(t, exitInvalid, code, stderr)
			assert.Equal(t, tc.again, runLog(t, log), "running again")
			assert.Contains(t, stderr, strings.ReplaceAll(tc.againHint, "STATE", state))
			assert.NotContains(t, stderr, "runner: ", "the run failed as a run, not with an error of its own: %s", stderr)
		})
	}
}

// A rollback interrupted by a signal says so, in hopdag run's hint and
// in hopdag status (Cancelled, the message saying a resume finishes the
// rollback, not the upgrade's failure alone); running the same command
// again finishes it, and does not roll back again what was rolled back.
func TestRollbackInterruptedStatusAndResume(t *testing.T) {
	dir, log := rollbackCatalog(t, slow)
	state := t.TempDir()
	args := []string{"run", dir, "--from", "v1.0", "--to", "v2.0", "--state", state, "--on-failure", "rollback", "--max-parallel", "1", "--lease-ttl", testLeaseTTL, "--grace", "5s"}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := run(ctx, args, &out, &errOut)
		done <- result{code, out.String(), errOut.String()}
	}()
	// c's rollback creates started as it begins; there is no other event
	// to wait for from outside the process.
	started := filepath.Join(dir, "started")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "c's rollback did not start within 20s")
	}
	cancel(&interrupted{os.Interrupt})
	var res result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("hopdag run did not return within 30s of the interrupt")
	}
	assert.Equal(t, exitInterrupted, res.code, res.stderr)
	assert.Contains(t, res.stderr, "hopdag run: interrupted by SIGINT: the status is saved in "+state+"; run the same command again to finish the rollback\n")
	assert.Equal(t, []string{"run a", "run c", "run b", "rollback b", "rollback c"}, runLog(t, log), "the first run")

	code, table, stderr := invoke("status", "--state", state)
	assert.Equal(t, exitInvalid, code, stderr)
	assert.Contains(t, table, "status v1.0 -> v2.0: Cancelled (CANCELLED)")
	assert.Contains(t, table, "message: rollback interrupted (interrupted by SIGINT): resume the run to finish rolling back after: ")
	assert.Regexp(t, `(?m)^1 v1\.0 -> v2\.0\s+c\s+1\.0\s+2\.0\s+RollingBack\s.*rollback interrupted`, table, "c is still rolling back, and says why")

	code, _, stderr = invoke(args...)
	assert.Equal(t, exitInvalid, code, stderr)
	assert.Equal(t, []string{"rollback c", "rollback a"}, runLog(t, log), "the resumed run: b was rolled back before")
	assert.Contains(t, stderr, "v1.0 -> v2.0 rolled back: its status in "+state+" is final")
}

// resumeHint says what a resume would do for each kind of status.
func TestResumeHintRollback(t *testing.T) {
	comp := func(name string, phase record.Phase, code record.Code) record.ComponentStatus {
		return record.ComponentStatus{Name: name, ToVersion: "2.0", Phase: phase, Code: code}
	}
	status := func(phase, hop record.Phase, cs ...record.ComponentStatus) *record.Status {
		return &record.Status{Phase: phase, From: "v1.0", To: "v2.0", Hops: []record.HopStatus{{From: "v1.0", To: "v2.0", Phase: hop, Components: cs}}}
	}
	tests := []struct {
		name string
		st   *record.Status
		want string
	}{
		{"failed", status(record.Failed, record.Failed, comp("b", record.Failed, record.CodeComponentFailed)),
			"the status is saved in S; run the same command again to resume\n"},
		{"rollback interrupted", status(record.Cancelled, record.RollingBack, comp("b", record.RolledBack, ""), comp("a", record.RollingBack, "")),
			"the status is saved in S; run the same command again to finish the rollback\n"},
		{"rollback failed", status(record.RollbackFailed, record.RollbackFailed, comp("b", record.RollbackFailed, record.CodeRollbackFailed), comp("c", record.RollbackFailed, record.CodeIrreversible)),
			"the status is saved in S; run the same command again to retry the rollback of b on hop 1\n"},
		{"irreversible", status(record.RollbackFailed, record.RollbackFailed, comp("c", record.RollbackFailed, record.CodeIrreversible)),
			"the rollback stopped at irreversible components, which stay at their target (c 2.0 on hop 1): running the same command again changes nothing. " +
				"Bring the system to one release by hand, abandon this run (hopdag abandon --state S), then start the next upgrade --from v1.0 with this --state if the system is back there, or with a new --state from wherever it is\n"},
		{"rolled back", status(record.RolledBack, record.RolledBack, comp("b", record.RolledBack, "")),
			"its status in S is final: start over with a new --state, or run the next upgrade --from v1.0 (where it left the system) with this one\n"},
	}
	state := "S"
	c := &cli{state: &state}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, c.resumeHint(tc.st))
		})
	}
}
