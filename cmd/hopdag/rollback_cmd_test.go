package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
)

// simulated is a simulated run of the embedded catalog v26.06-rc.2 ->
// v26.06 (two hops) into the state dir with extra flags; it returns the
// exit code.
func simulated(t *testing.T, dir string, extra ...string) int {
	t.Helper()
	code, _, stderr := invoke(append([]string{"run", "-", "--from", "v26.06-rc.2", "--to", "v26.06", "--simulate", "--speed", "100000", "--state", dir}, extra...)...)
	t.Log(stderr)
	return code
}

// rollbackCmd runs hopdag rollback on dir with the answer on stdin.
func rollbackCmd(dir, answer string, extra ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	args := append([]string{"rollback", "-", "--from", "v26.06-rc.2", "--to", "v26.06", "--simulate", "--speed", "100000", "--state", dir}, extra...)
	code = runWith(context.Background(), env{stdin: strings.NewReader(answer), stdout: &out, stderr: &errOut}, args)
	return code, out.String(), errOut.String()
}

// hopdag rollback rolls an upgrade back to where it started whether it
// succeeded, failed or stopped at an --until step: every component it
// changed ends RolledBack, the status says who asked and why, the audit
// log records the request, and the exit status is 0.
func TestRollbackCommand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		run   []string // run's extra flags
		phase record.Phase
	}{
		{"succeeded", nil, record.Succeeded},
		{"failed", []string{"--fail", "kubernetes-worker"}, record.Failed},
		{"stopped at --until", []string{"--until", "v26.06-rc.3"}, record.Paused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			simulated(t, dir, tc.run...)
			require.Equal(t, tc.phase, loadStatus(t, dir).Phase)
			audit := filepath.Join(t.TempDir(), "audit.log")
			code, stdout, stderr := rollbackCmd(dir, "y\n", "--reason", "v26.06 breaks billing", "--log-file", audit)
			require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stderr, "Roll back v26.06-rc.2 -> v26.06 ("+string(tc.phase)+", ", "it asks first")
			assert.Contains(t, stderr, "rolled back v26.06-rc.2 -> v26.06 to v26.06-rc.2\n")
			assert.True(t, strings.HasPrefix(stdout, "status v26.06-rc.2 -> v26.06: RolledBack"), "the final table is the data, on stdout:\n%s", stdout)
			assert.Contains(t, stdout, "last failure: hop ")
			assert.Contains(t, stdout, ": ROLLBACK_REQUESTED: rollback requested: v26.06 breaks billing\n")

			st := loadStatus(t, dir)
			assert.Equal(t, record.RolledBack, st.Phase)
			assert.Equal(t, "rolled back after: rollback requested: v26.06 breaks billing", st.Message)
			started := 0
			for _, h := range st.Hops {
				for _, c := range h.Components {
					if c.Attempts > 0 {
						started++
						assert.Equal(t, record.RolledBack, c.Phase, "hop %s -> %s: %s", h.From, h.To, c.Name)
					}
				}
			}
			assert.NotZero(t, started)

			log, err := os.ReadFile(audit)
			require.NoError(t, err)
			assert.Contains(t, string(log), `"kind":"rollback","phase":"`+string(tc.phase)+`","reason":"v26.06 breaks billing"`)
		})
	}
}

// What hopdag rollback refuses, and what it says: each refusal changes
// nothing in the state.
func TestRollbackCommandRefusals(t *testing.T) {
	done := filepath.Join(t.TempDir(), "done")
	simulated(t, done)
	abandoned := filepath.Join(t.TempDir(), "abandoned")
	simulated(t, abandoned, "--until", "v26.06-rc.3")
	code, _, stderr := invoke("abandon", "--state", abandoned, "--yes")
	require.Equal(t, exitOK, code, stderr)
	rolled := filepath.Join(t.TempDir(), "rolled")
	simulated(t, rolled)
	code, _, stderr = rollbackCmd(rolled, "", "--reason", "first", "--yes")
	require.Equal(t, exitOK, code, stderr)

	for _, tc := range []struct {
		name   string
		dir    string
		answer string
		args   []string
		code   int
		says   string
		phase  record.Phase // what the state holds after
	}{
		{"no --state", "", "", []string{"--reason", "x"}, exitUsage, "--state is required", ""},
		{"no --reason", done, "", nil, exitUsage, "--reason is required", record.Succeeded},
		{"no --on-failure: the whole run rolls back", done, "", []string{"--reason", "x", "--on-failure", "rollback"}, exitUsage, "unknown flag: --on-failure", record.Succeeded},
		{"no status", filepath.Join(t.TempDir(), "none"), "", []string{"--reason", "x", "--yes"}, exitInvalid, "no status in", ""},
		{"another upgrade", done, "", []string{"--reason", "x", "--yes", "--to", "v26.09"}, exitInvalid, "holds the upgrade v26.06-rc.2 -> v26.06 (Succeeded), not v26.06-rc.2 -> v26.09: give its --from v26.06-rc.2 and --to v26.06", record.Succeeded},
		{"not confirmed", done, "n\n", []string{"--reason", "x"}, exitInvalid, "not confirmed: nothing changed (pass --yes to skip the question)", record.Succeeded},
		{"no answer", done, "", []string{"--reason", "x"}, exitInvalid, "not confirmed", record.Succeeded},
		{"abandoned", abandoned, "", []string{"--reason", "x", "--yes"}, exitInvalid, "cannot roll back v26.06-rc.2 -> v26.06", record.Abandoned},
		{"rolled back already", rolled, "", []string{"--reason", "x", "--yes"}, exitOK, "is rolled back to v26.06-rc.2 already: nothing to do", record.RolledBack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			if tc.dir != "" {
				args = []string{"--state", tc.dir}
			}
			var out, errOut bytes.Buffer
			full := append([]string{"rollback", "-", "--from", "v26.06-rc.2", "--to", "v26.06", "--simulate"}, append(args, tc.args...)...)
			code := runWith(context.Background(), env{stdin: strings.NewReader(tc.answer), stdout: &out, stderr: &errOut}, full)
			assert.Equal(t, tc.code, code, "stderr:\n%s", errOut.String())
			assert.Contains(t, errOut.String(), tc.says)
			if tc.phase != "" {
				assert.Equal(t, tc.phase, loadStatus(t, tc.dir).Phase, "the state is as it was")
			}
		})
	}
}

// A real rollback runs the components' rollback commands, dependents
// first (b depends on a), and -o json prints the final Status document.
func TestRollbackCommandExec(t *testing.T) {
	dir, log := twoHopCatalog(t)
	st := filepath.Join(t.TempDir(), "state")
	code, _, stderr := invoke("run", dir, "--from", "v1.0", "--to", "v2.0", "--state", st)
	require.Equal(t, exitOK, code, stderr)
	code, stdout, stderr := invoke("rollback", dir, "--from", "v1.0", "--to", "v2.0", "--state", st, "--reason", "undo", "--yes", "-o", "json")
	require.Equal(t, exitOK, code, stderr)
	var doc struct{ Kind, Phase string }
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	assert.Equal(t, "Status", doc.Kind)
	assert.Equal(t, "RolledBack", doc.Phase)
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, []string{"run a 2.0", "run b 2.0", "rollback b 2.0", "rollback a 2.0"}, strings.Split(strings.TrimSpace(string(b)), "\n"))
}

// A rollback that fails exits 1, the status RollbackFailed saying which
// component; the same command line retries it, and it completes.
func TestRollbackCommandRetry(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "failed-once")
	catalog := `apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: r1}
spec: {version: v1.0, components: [{name: a, version: "1.0"}]}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: r2}
spec: {version: v2.0, components: [{name: a, version: "2.0"}]}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: a-1.0}
spec: {name: a, version: "1.0", type: exec, command: {args: ["true"]}, rollback: {args: ["true"]}}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: a-2.0}
spec:
  name: a
  version: "2.0"
  type: exec
  command: {args: ["true"]}
  rollback: {args: [sh, -c, "test -e ` + marker + ` || { touch ` + marker + `; echo cannot restore >&2; exit 1; }"]}
---
apiVersion: hopdag.io/v1alpha1
kind: UpgradePath
metadata: {name: paths}
spec: {rules: [{from: v1.0, to: v2.0}]}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(catalog), 0o644))
	st := filepath.Join(t.TempDir(), "state")
	code, _, stderr := invoke("run", dir, "--from", "v1.0", "--to", "v2.0", "--state", st)
	require.Equal(t, exitOK, code, stderr)
	args := []string{"rollback", dir, "--from", "v1.0", "--to", "v2.0", "--state", st, "--reason", "undo", "--yes"}
	code, _, stderr = invoke(args...)
	assert.Equal(t, exitInvalid, code, stderr)
	assert.Equal(t, record.RollbackFailed, loadStatus(t, st).Phase)
	assert.Contains(t, stderr, "cannot restore")
	assert.Contains(t, stderr, "rolling back from "+st+" (Succeeded, 1/1 done, run 1): undo\n")
	assert.Contains(t, stderr, "a@2.0 (rollback failed): the status is saved in "+st+"; run the same command again to retry the rollback of a on hop 1\n")
	code, stdout, stderr := invoke(args...)
	require.Equal(t, exitOK, code, "the same command retries the rollback:\n%s", stderr)
	assert.True(t, strings.HasPrefix(stdout, "status v1.0 -> v2.0: RolledBack"), stdout)
	assert.Equal(t, record.RolledBack, loadStatus(t, st).Phase)
}

// hopdag rollback asks before it takes the state's lock: while the
// question waits, another process may take the lock (and release it);
// once answered, the rollback runs only if the status is still the one
// confirmed, and otherwise says so and changes nothing.
func TestRollbackAsksBeforeLocking(t *testing.T) {
	for _, tc := range []struct {
		name      string
		meanwhile func(t *testing.T, f *state.File, dir string)
		code      int
		says      string
		phase     record.Phase
	}{
		{"a run takes the lock and releases it", func(t *testing.T, f *state.File, dir string) {
			l, err := f.Acquire(context.Background(), "node-b/7 (run)", time.Minute)
			require.NoError(t, err, "the lock is free while rollback asks")
			require.NoError(t, f.Release(context.Background(), l))
		}, exitOK, "rolled back v26.06-rc.2 -> v26.06 to v26.06-rc.2", record.RolledBack},
		{"a run changes the status", func(t *testing.T, f *state.File, dir string) {
			ctx := context.Background()
			l, err := f.Acquire(ctx, "node-b/7 (run)", time.Minute)
			require.NoError(t, err, "the lock is free while rollback asks")
			st, err := f.Load(ctx)
			require.NoError(t, err)
			st.Runs++ // another run of it (its status as a run would save it)
			require.NoError(t, f.Save(ctx, l.Token, st))
			require.NoError(t, f.Release(ctx, l))
		}, exitInvalid, "changed since you confirmed (a run wrote it meanwhile): it now says v26.06-rc.2 -> v26.06 Succeeded, 8/8 components done, run 2: nothing was rolled back", record.Succeeded},
		{"the status is removed", func(t *testing.T, f *state.File, dir string) {
			// As the controller's finalizer removes a deleted
			// ClusterVersion's record, or a person the state's files.
			require.NoError(t, os.Remove(filepath.Join(dir, "journal.log")))
			require.NoError(t, os.Remove(filepath.Join(dir, "snapshot.log")))
		}, exitInvalid, "changed since you confirmed (a run wrote it meanwhile): it now holds none: nothing was rolled back", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			simulated(t, dir)
			other, err := state.OpenFile(dir)
			require.NoError(t, err)
			defer other.Close()

			answer, answerW := io.Pipe()
			t.Cleanup(func() { answerW.Close() })
			stderr := &promptWatch{asked: make(chan struct{})}
			var stdout lockedWriter
			stdout.w = &strings.Builder{}
			done := make(chan int, 1)
			go func() {
				done <- runWith(context.Background(), env{stdin: answer, stdout: &stdout, stderr: stderr},
					[]string{"rollback", "-", "--from", "v26.06-rc.2", "--to", "v26.06", "--simulate", "--speed", "100000", "--state", dir, "--reason", "undo"})
			}()
			select {
			case <-stderr.asked:
			case code := <-done:
				t.Fatalf("rollback ended (exit %d) without asking; stderr:\n%s", code, stderr.String())
			}
			tc.meanwhile(t, other, dir)
			_, err = io.WriteString(answerW, "y\n")
			require.NoError(t, err)
			code := <-done
			assert.Equal(t, tc.code, code, "stderr:\n%s", stderr.String())
			assert.Contains(t, stderr.String(), tc.says)
			st, err := other.Load(context.Background())
			require.NoError(t, err)
			if tc.phase == "" {
				assert.Nil(t, st)
				return
			}
			assert.Equal(t, tc.phase, st.Phase)
		})
	}
}

// With --log-format json every line on stderr is a JSON record, so a
// question cannot be asked: --yes is required.
func TestRollbackJSONLogNeedsYes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	simulated(t, dir)
	code, _, stderr := rollbackCmd(dir, "y\n", "--reason", "undo", "--log-format", "json")
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, "cannot ask for confirmation: add --yes")
	assert.Equal(t, record.Succeeded, loadStatus(t, dir).Phase)
	code, _, stderr = rollbackCmd(dir, "", "--reason", "undo", "--log-format", "json", "--yes")
	assert.Equal(t, exitOK, code, stderr)
	for line := range strings.Lines(stderr) {
		assert.True(t, json.Valid([]byte(line)), "a JSON record: %q", line)
	}
	assert.Equal(t, record.RolledBack, loadStatus(t, dir).Phase)
}
