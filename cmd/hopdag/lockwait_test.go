package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run that waits for the lock of a live run which then finishes says
// that run released the lock, not that its lease expired. (A lease that
// expired is TestExecRunKilledAndResumed's.)
func TestRunWaitsForAHolderThatFinishes(t *testing.T) {
	d := t.TempDir()
	started, proceed, state := filepath.Join(d, "started"), filepath.Join(d, "proceed"), filepath.Join(d, "state")
	// The first run's command waits for proceed, so that it holds the lock
	// until the second run has been refused it once.
	script := fmt.Sprintf(`echo started >>%s; while [ ! -e %s ]; do sleep 0.02; done`, started, proceed)
	dir := oneCommandCatalog(t, "app", script)
	// A lease of a minute: the first run is not refreshed (every 20s)
	// before it ends, so the second one waits rather than failing.
	args := []string{"run", dir, "--from", "v1.0", "--to", "v2.0", "--state", state, "--lease-ttl", "1m"}

	first := start(t, args...)
	waitFor(t, started, "started")
	log := filepath.Join(d, "second.log")
	second := start(t, append(args, "--log-file", log)...)
	waitFor(t, log, `"event":"Refused"`)
	require.NoError(t, os.WriteFile(proceed, nil, 0o644))

	require.Equal(t, 0, first.wait(t), "the first run; stderr:\n%s", first.stderr)
	assert.Equal(t, 0, second.wait(t), "the second run; stderr:\n%s", second.stderr)
	stderr := second.stderr.String()
	assert.Regexp(t, `is locked by \S+/`+strconv.Itoa(first.cmd.Process.Pid)+` \(run\) \(lease \d+\) until \S+; waiting until `, stderr)
	assert.Regexp(t, `hopdag run: \S+/`+strconv.Itoa(first.cmd.Process.Pid)+` \(run\) released the lock; took it \(lease \d+\)`, stderr)
	assert.NotContains(t, stderr, "expired")
}
