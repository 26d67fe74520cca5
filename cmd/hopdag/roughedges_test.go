package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The five rough edges a new user hit (issue 18), one test each.

// targets from the newest version is an answer, not an error.
func TestTargetsFromNewestExitsZero(t *testing.T) {
	code, out, stderr := invoke("targets", catalog, "--from", "v26.09")
	assert.Equal(t, 0, code, "targets --from v26.09 (the newest) exit code; stderr:\n%s", stderr)
	assert.Contains(t, out, "no version is reachable from v26.09")
}

// An empty plan serialises "hops": [], and so does the status of its run.
func TestEmptyPlanHopsAreAnArray(t *testing.T) {
	code, out, stderr := invoke("plan", catalog, "--from", "v26.06", "--to", "v26.06", "-o", "json")
	require.Equal(t, 0, code, stderr)
	var plan map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
	assert.Equal(t, []any{}, plan["hops"], "plan -o json of an empty plan: hops")

	state := t.TempDir()
	code, out, stderr = invoke("run", "-", "--from", "v26.06", "--to", "v26.06", "--simulate", "--state", state)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	saved := loadStatus(t, state)
	require.NotNil(t, saved, "the run saved its status")
	data, err := json.Marshal(saved)
	require.NoError(t, err)
	var st map[string]any
	require.NoError(t, json.Unmarshal(data, &st), string(data))
	assert.Equal(t, []any{}, st["hops"], "the saved status of an empty run, as JSON: hops")
	assert.Equal(t, []any{}, statusJSON(t, state)["hops"], "status -o json of an empty run: hops")
}

// graph -o json prints package dag's JSON.
func TestGraphJSON(t *testing.T) {
	code, out, stderr := invoke("graph", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "-o", "json")
	require.Equal(t, 0, code, stderr)
	assert.True(t, json.Valid([]byte(out)), "graph -o json is JSON: %s", out)
	golden(t, "graph-json.golden", out)
}

// The status table after a run lists each hop's components in the plan's
// batch order, not by name.
func TestRunTableInBatchOrder(t *testing.T) {
	code, out, stderr := invoke("run", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--simulate", "--speed", "20000")
	require.Equal(t, 0, code, stderr)
	table := out[strings.Index(out, "status v26.06-rc.2"):]
	var rows []string
	for _, line := range strings.Split(table, "\n")[2:] {
		if f := strings.Fields(line); len(f) > 4 {
			rows = append(rows, f[4])
		}
	}
	// Batches of hop 1 (see the README's picture): pre-upgrade-resources;
	// bkeagent, provider; kubernetes-master; calico, kube-proxy,
	// kubernetes-worker.
	want := []string{"pre-upgrade-resources", "bkeagent", "provider", "kubernetes-master", "calico", "kube-proxy", "kubernetes-worker"}
	assert.Equal(t, want, rows, "component column of the status table:\n%s", table)
}

// A catalog with inline components is refused before anything runs,
// naming them and showing the Go program that runs them.
func TestRunRefusesInline(t *testing.T) {
	state := t.TempDir()
	code, out, stderr := invoke("run", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--state", state)
	assert.Equal(t, 1, code, "stderr:\n%s", stderr)
	assert.Contains(t, stderr, "inline components bkeagent v1.4.1, kubernetes-master v1.33.3, kubernetes-worker v1.33.3 are Go functions")
	assert.Contains(t, stderr, `components.NewInline().Register("bkeagent", myUpgrade)`)
	assert.Contains(t, stderr, "runner.NewPlan(catalog, from, to, runner.ForExecutor(exec))")
	assert.Contains(t, stderr, "hop check cluster-healthy has no implementation")
	assert.Empty(t, out, "nothing ran")
	assert.Nil(t, loadStatus(t, state), "no status was written")
}

// Hop checks run as commands given with --check; without one, the plan is
// refused naming the check.
func TestRunChecksAsCommands(t *testing.T) {
	dir := t.TempDir()
	comps, err := os.ReadFile(filepath.Join(execCatalog, "components.yaml"))
	require.NoError(t, err)
	rels, err := os.ReadFile(filepath.Join(execCatalog, "releases.yaml"))
	require.NoError(t, err)
	rels = []byte(strings.Replace(string(rels), "- {from: v1.0, to: v1.1}",
		"- {from: v1.0, to: v1.1, preChecks: [{name: healthy, required: true}], postChecks: [{name: smoke}]}", 1))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "components.yaml"), comps, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "releases.yaml"), rels, 0o644))
	scripts, err := filepath.Abs(execCatalog)
	require.NoError(t, err)
	out := t.TempDir()
	args := []string{"run", dir, "--from", "v1.0", "--to", "v1.1", "--set", "catalog=" + scripts + ",out=" + out}

	code, _, stderr := invoke(args...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "hop checks healthy, smoke have no implementation: give each as a command (--check NAME=COMMAND)")

	log := filepath.Join(out, "checks.log")
	record := `echo "$HOPDAG_CHECK_STAGE $HOPDAG_CHECK $HOPDAG_HOP" >>` + log
	code, stdout, stderr := invoke(append(args, "--check", "healthy="+record, "--check", "smoke="+record)...)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	got, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, "pre healthy v1.0 -> v1.1\npost smoke v1.0 -> v1.1\n", string(got))

	code, stdout, _ = invoke(append(args, "--check", "healthy=echo unhealthy >&2; exit 1", "--check", "smoke=true")...)
	assert.Equal(t, 1, code, "a required check that fails fails the run")
	assert.Contains(t, stdout, "CHECK_FAILED")
}
