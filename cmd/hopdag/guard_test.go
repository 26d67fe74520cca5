//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run whose every hopdag process is SIGKILLed at once (pkill -9 hopdag,
// an OOM kill of its cgroup) in the middle of a command resumes without
// the command running twice at once: the resumed run stops what is left
// of the old command (its shell and the sleep it waits for) before it
// starts anything. When the guards were hopdag started again, they died
// in the same kill with their lock, and the resumed run started the
// command while the old copy still held its lock (the script logs that
// in OVERLAP and fails).
func TestExecRunKillAllResumed(t *testing.T) {
	d := t.TempDir()
	lock, started, overlap, state := filepath.Join(d, "lock"), filepath.Join(d, "started"), filepath.Join(d, "OVERLAP"), filepath.Join(d, "state")
	catalog := oneCommandCatalog(t, "step", fmt.Sprintf(`exec 9>>%[1]s
if ! flock -n 9; then echo overlap >>%[3]s; exit 1; fi
echo started >>%[2]s
if [ "$(wc -l <%[2]s)" -ge 2 ]; then exit 0; fi
sleep 30`, lock, started, overlap))
	args := []string{"run", catalog, "--from", "v1.0", "--to", "v2.0", "--state", state, "--lease-ttl", testLeaseTTL, "--grace", "2s"}
	p := start(t, args...)
	waitFor(t, started, "started")
	killed := append([]int{p.cmd.Process.Pid}, sameBinaryChildren(t, p.cmd.Process.Pid)...)
	for _, pid := range killed {
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	p.wait(t)
	t.Logf("SIGKILLed %d hopdag processes: %v", len(killed), killed)

	code, out, stderr := hopdagRun(t, "", args...)
	assert.Equal(t, 0, code, "resumed run; stdout:\n%s\nstderr:\n%s", out, stderr)
	data, err := os.ReadFile(overlap)
	assert.True(t, os.IsNotExist(err), "the resumed run's command ran while the killed run's still held its lock: %s", data)
	data, err = os.ReadFile(started)
	require.NoError(t, err)
	assert.Equal(t, "started\nstarted\n", string(data), "the command started once per run")
	assert.True(t, unlocked(t, lock), "a process of the killed run's command still holds its lock")
}

// sameBinaryChildren lists the children of parent that run its program.
func sameBinaryChildren(t *testing.T, parent int) []int {
	t.Helper()
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(parent), "exe"))
	require.NoError(t, err)
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == parent {
			continue
		}
		if x, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err != nil || x != exe {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if ppid, _ := strconv.Atoi(f[1]); ppid == parent {
			pids = append(pids, pid)
		}
	}
	return pids
}
