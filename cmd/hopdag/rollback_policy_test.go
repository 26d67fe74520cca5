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

// twoHopCatalog writes a catalog v1.0 -> v2.0 -> v3.0 of exec components a
// <- b: b 3.0's upgrade fails; every command logs "run NAME VERSION" or
// "rollback NAME VERSION" to log. a 3.0's rollback, the first time, creates
// dir/started and works until stopped.
func twoHopCatalog(t *testing.T) (dir, log string) {
	t.Helper()
	dir = t.TempDir()
	log = filepath.Join(dir, "log")
	versions := []string{"1.0", "2.0", "3.0"}
	var b strings.Builder
	for _, v := range versions {
		fmt.Fprintf(&b, "apiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata: {name: r%s}\nspec: {version: v%s, components: [{name: a, version: %q}, {name: b, version: %q}]}\n---\n", v, v, v, v)
	}
	sh := func(script string) string { return fmt.Sprintf("{args: [sh, -c, %q]}", script) }
	once := filepath.Join(dir, "started")
	for _, name := range []string{"a", "b"} {
		for _, v := range versions {
			deps := map[string]string{"a": "[]", "b": "[a]"}[name]
			run := sh(fmt.Sprintf("echo run %s %s >>%s", name, v, log))
			if name == "b" && v == "3.0" {
				run = sh(fmt.Sprintf("echo run %s %s >>%s; echo b is broken >&2; exit 1", name, v, log))
			}
			rollback := sh(fmt.Sprintf("echo rollback %s %s >>%s", name, v, log))
			if name == "a" && v == "3.0" {
				rollback = sh(fmt.Sprintf("echo rollback %s %s >>%s; test -e %s || { touch %s; exec sleep 60; }", name, v, log, once, once))
			}
			fmt.Fprintf(&b, "apiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata: {name: %s-%s}\nspec:\n  name: %s\n  version: %q\n  type: exec\n  dependencies: %s\n  command: %s\n  rollback: %s\n---\n",
				name, v, name, v, deps, run, rollback)
		}
	}
	b.WriteString("apiVersion: hopdag.io/v1alpha1\nkind: UpgradePath\nmetadata: {name: paths}\nspec:\n  rules: [{from: v1.0, to: v2.0}, {from: v2.0, to: v3.0}]\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(b.String()), 0o644))
	return dir, log
}

// runUntilStarted runs args in the process and stops it (SIGINT) once the
// file started exists; it returns the exit code and stderr.
func runUntilStarted(t *testing.T, started string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := run(ctx, args, &out, &errOut)
		done <- result{code, errOut.String()}
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "%s was not created within 20s", started)
	}
	cancel(&interrupted{os.Interrupt})
	select {
	case res := <-done:
		return res.code, res.stderr
	case <-time.After(30 * time.Second):
		t.Fatal("hopdag run did not return within 30s of the interrupt")
	}
	return 0, ""
}

// The failure policy is part of the record: a run started with
// --on-failure rollback-run and stopped while it rolls back the failed
// hop 2, resumed as `hopdag status` tells the operator of a killed run
// ("resume it with hopdag run (the same catalog, --from, --to and
// --state S)"), without the flag, rolls hop 1 back too. (It used to end
// RolledBack, final, with hop 1 still at v2.0.)
func TestRollbackRunPolicyKeptOnResume(t *testing.T) {
	dir, log := twoHopCatalog(t)
	state := t.TempDir()
	base := []string{"run", dir, "--from", "v1.0", "--to", "v3.0", "--state", state, "--max-parallel", "1", "--lease-ttl", testLeaseTTL, "--grace", "5s"}
	code, stderr := runUntilStarted(t, filepath.Join(dir, "started"), append(base, "--on-failure", "rollback-run")...)
	require.Equal(t, exitInterrupted, code, stderr)
	assert.Equal(t, []string{"run a 2.0", "run b 2.0", "run a 3.0", "run b 3.0", "rollback b 3.0", "rollback a 3.0"}, runLog(t, log), "the first run")

	// Resumed as hopdag status says for a run whose process is gone.
	code, _, stderr = invoke(base...)
	assert.Equal(t, exitInvalid, code, "a rolled-back run did not upgrade: %s", stderr)
	st := loadStatus(t, state)
	assert.Equal(t, "rollback-run", st.FailurePolicy)
	require.Equal(t, record.RolledBack, st.Phase, st.Message)
	assert.Equal(t, []record.Phase{record.RolledBack, record.RolledBack}, []record.Phase{st.Hops[0].Phase, st.Hops[1].Phase}, "both hops rolled back")
	assert.Equal(t, []string{"rollback a 3.0", "rollback b 2.0", "rollback a 2.0"}, runLog(t, log), "the resumed run rolls the whole run back")
}
