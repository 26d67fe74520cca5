package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/runner"
)

// rollbackCatalog writes a catalog v1.0 -> v2.0 of exec components a <-
// c <- b: b's upgrade fails; every command logs "run NAME" or
// "rollback NAME" to log. c's 2.0 is irreversible when irreversible is
// true; otherwise its rollback fails the first time (a transient
// failure) and succeeds after.
func rollbackCatalog(t *testing.T, irreversible bool) (dir, log string) {
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
			switch {
			case name == "c" && irreversible:
				extra = "  irreversible: schema migration\n"
			case name == "c":
				once := filepath.Join(dir, "c-failed-once")
				rollback = sh(fmt.Sprintf("echo rollback %s >>%s; test -e %s || { touch %s; echo c cannot roll back yet >&2; exit 1; }", name, log, once, once))
			}
			fmt.Fprintf(&b, "apiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata: {name: %s-%s}\nspec:\n  name: %s\n  version: %q\n  type: exec\n  dependencies: %s\n  command: %s\n  rollback: %s\n%s---\n",
				name, v, name, v, deps, run, rollback, extra)
		}
	}
	b.WriteString("apiVersion: hopdag.io/v1alpha1\nkind: UpgradePath\nmetadata: {name: paths}\nspec:\n  rules: [{from: v1.0, to: v2.0}]\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(b.String()), 0o644))
	return dir, log
}

// logLines returns the lines of log (nil for none), and empties it.
func logLines(t *testing.T, log string) []string {
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
		name         string
		irreversible bool
		first        []string // what the first run ran, in order
		hint         string
		again        []string // what running again ran
		againHint    string
	}{
		{
			name: "transient rollback failure", first: []string{"run a", "run c", "run b", "rollback b", "rollback c"},
			hint:  "v1.0 -> v2.0 rollback failed: the status is saved in STATE; run the same command again to retry the rollback of c on hop 1\n",
			again: []string{"rollback c", "rollback a"}, againHint: "v1.0 -> v2.0 rolled back: its status in STATE is final",
		},
		{
			name: "irreversible", irreversible: true, first: []string{"run a", "run c", "run b", "rollback b"},
			hint: "v1.0 -> v2.0 rollback failed: the rollback stopped at irreversible components, which stay at their target (c 2.0 on hop 1), " +
				"and so does what they depend on (a 2.0 on hop 1): running the same command again changes nothing. " +
				"Bring the system to one release by hand, abandon this run (hopdag abandon --state STATE), " +
				"then start the next upgrade --from v1.0 with this --state if the system is back there, or with a new --state from wherever it is\n",
			again: nil, againHint: "running the same command again changes nothing",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, log := rollbackCatalog(t, tc.irreversible)
			state := t.TempDir()
			args := []string{"run", dir, "--from", "v1.0", "--to", "v2.0", "--state", state, "--on-failure", "rollback", "--max-parallel", "1", "--lease-ttl", testLeaseTTL}
			code, _, stderr := invoke(args...)
			require.Equal(t, exitInvalid, code, stderr)
			assert.Equal(t, tc.first, logLines(t, log), "the first run")
			assert.Contains(t, stderr, strings.ReplaceAll(tc.hint, "STATE", state))
			assert.NotContains(t, stderr, "run the same command again to resume")

			code, _, stderr = invoke(args...)
			assert.Equal(t, exitInvalid, code, stderr)
			assert.Equal(t, tc.again, logLines(t, log), "running again")
			assert.Contains(t, stderr, strings.ReplaceAll(tc.againHint, "STATE", state))
			assert.NotContains(t, stderr, "runner: ", "the run failed as a run, not with an error of its own: %s", stderr)
		})
	}
}

// resumeHint says what a resume would do for each kind of status.
func TestResumeHintRollback(t *testing.T) {
	comp := func(name string, phase runner.Phase, code runner.Code) runner.ComponentStatus {
		return runner.ComponentStatus{Name: name, ToVersion: "2.0", Phase: phase, Code: code}
	}
	status := func(phase, hop runner.Phase, cs ...runner.ComponentStatus) *runner.Status {
		return &runner.Status{Phase: phase, From: "v1.0", To: "v2.0", Hops: []runner.HopStatus{{From: "v1.0", To: "v2.0", Phase: hop, Components: cs}}}
	}
	tests := []struct {
		name string
		st   *runner.Status
		want string
	}{
		{"failed", status(runner.Failed, runner.Failed, comp("b", runner.Failed, runner.CodeComponentFailed)),
			"the status is saved in S; run the same command again to resume\n"},
		{"rollback interrupted", status(runner.Cancelled, runner.RollingBack, comp("b", runner.RolledBack, ""), comp("a", runner.RollingBack, "")),
			"the status is saved in S; run the same command again to finish the rollback\n"},
		{"rollback failed", status(runner.RollbackFailed, runner.RollbackFailed, comp("b", runner.RollbackFailed, runner.CodeRollbackFailed), comp("c", runner.RollbackFailed, runner.CodeIrreversible)),
			"the status is saved in S; run the same command again to retry the rollback of b on hop 1\n"},
		{"irreversible", status(runner.RollbackFailed, runner.RollbackFailed, comp("c", runner.RollbackFailed, runner.CodeIrreversible)),
			"the rollback stopped at irreversible components, which stay at their target (c 2.0 on hop 1): running the same command again changes nothing. " +
				"Bring the system to one release by hand, abandon this run (hopdag abandon --state S), then start the next upgrade --from v1.0 with this --state if the system is back there, or with a new --state from wherever it is\n"},
		{"rolled back", status(runner.RolledBack, runner.RolledBack, comp("b", runner.RolledBack, "")),
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
