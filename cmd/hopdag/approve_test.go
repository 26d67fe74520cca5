package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// --until stops the run after a hop (exit 0, the status says so); a gate
// stops it before a hop (exit 3) until hopdag approve; then it finishes.
func TestRunUntilGateApprove(t *testing.T) {
	state := t.TempDir()
	base := []string{"run", "-", "--from", "v26.06-rc.2", "--to", "v26.09", "--simulate", "--speed", "20000", "--state", state}
	code, out, stderr := invoke(append(base, "--until", "v26.06-rc.3")...)
	assert.Equal(t, 0, code, "--until: stderr:\n%s", stderr)
	assert.Contains(t, out, "stopped as asked: stopped after v26.06-rc.3 as asked (until v26.06-rc.3)")
	assert.Contains(t, out, "status v26.06-rc.2 -> v26.09: Paused")

	code, out, stderr = invoke(append(base, "--gate", "v26.09")...)
	assert.Equal(t, exitWaiting, code, "--gate: stderr:\n%s\nstdout:\n%s", stderr, out)
	assert.Contains(t, out, "waiting for approval of v26.09")

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
