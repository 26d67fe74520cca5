package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/simulate"
)

// The demo stops at --until, waits at a --gate hop, and finishes once the
// gate is approved (as hopdag approve records it).
func TestDemoUntilAndGate(t *testing.T) {
	dir := t.TempDir()
	code, out := demo(t, "--state", dir, "--until", "v26.06-rc.3")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "\nstopped after v26.06-rc.3 as asked")
	st := readStatus(t, dir)
	assert.Equal(t, record.Paused, st.Phase)
	assert.Equal(t, []record.Phase{record.Succeeded, record.Pending, record.Pending}, []record.Phase{st.Hops[0].Phase, st.Hops[1].Phase, st.Hops[2].Phase})

	code, out = demo(t, "--state", dir, "--gate", "v26.09")
	assert.Equal(t, 3, code, out)
	st = readStatus(t, dir)
	assert.Equal(t, record.WaitingForApproval, st.Phase)
	assert.Equal(t, []string{"v26.09"}, st.Waiting)

	code, out = demo(t, "--state", dir, "--gate", "v26.09")
	assert.Equal(t, 3, code, "a rerun is no approval: %s", out)

	_, err := simulate.Approve(t.Context(), dir, "v26.09", "alice", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	code, out = demo(t, "--state", dir, "--gate", "v26.09")
	assert.Equal(t, 0, code, out)
	st = readStatus(t, dir)
	assert.Equal(t, record.Succeeded, st.Phase)
	assert.Equal(t, "alice", st.Approvals[0].By)
}

// --on-failure rollback undoes the failed hop; rollback-run the run.
func TestDemoRollback(t *testing.T) {
	dir := t.TempDir()
	code, out := demo(t, "--state", dir, "--fail", "kubernetes-worker", "--on-failure", "rollback")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "undone  kubernetes-master (back at v1.33.2)")
	st := readStatus(t, dir)
	assert.Equal(t, record.RolledBack, st.Phase)
	assert.Equal(t, record.RolledBack, st.Hops[0].Phase)

	dir = t.TempDir()
	code, out = demo(t, "--state", dir, "--fail", "metrics-server", "--on-failure", "rollback-run")
	assert.Equal(t, 1, code, out)
	st = readStatus(t, dir)
	assert.Equal(t, record.RolledBack, st.Phase)
	for i, h := range st.Hops {
		assert.Equal(t, record.RolledBack, h.Phase, "hop %d", i+1)
	}
	code, out = demo(t, "--on-failure", "sideways")
	assert.Equal(t, 2, code, out)
}

// The README's demo lines run as written (in a temporary directory for
// /tmp/u): the gated run exits 3 and prints the command that approves,
// which is the README's next line; that one approves as --by and finishes.
func TestReadmeDemoLines(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	const prefix = "go run ./examples/cluster-upgrade --state /tmp/u "
	dir := t.TempDir()
	var lines [][]string
	for line := range strings.Lines(string(readme)) {
		line, _, _ = strings.Cut(strings.TrimSpace(line), "#")
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			lines = append(lines, append([]string{"--state", dir, "--by", "alice"}, strings.Fields(rest)...))
		}
	}
	require.Len(t, lines, 3, "the README's demo: --until, --gate, --approve")
	want := []int{0, 3, 0}
	for i, args := range lines {
		code, out := demo(t, args...)
		require.Equal(t, want[i], code, "README line %d: %v\n%s", i+1, args, out)
		if i == 1 {
			assert.Contains(t, out, "waiting for approval of v26.09; approve and continue with:\n  go run ./examples/cluster-upgrade --speed 20000 --state "+dir+" --by alice --gate v26.09 --approve v26.09\n")
			assert.NotContains(t, out, "Status.Approve", "the demo names the command, not the Go API")
		}
	}
	st := readStatus(t, dir)
	assert.Equal(t, record.Succeeded, st.Phase)
	require.Len(t, st.Approvals, 1)
	assert.Equal(t, "alice", st.Approvals[0].By)
	assert.Equal(t, "v26.09", st.Approvals[0].Step)
}
