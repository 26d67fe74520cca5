//go:build linux

package components_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
)

// command.env.PATH finds args[0]; the parent's PATH does not have it.
func TestExecPathFromCommandEnv(t *testing.T) {
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "hopdag-test-tool"), []byte("#!/bin/sh\necho tool \"$@\"\n"), 0o755))
	_, err := exec.LookPath("hopdag-test-tool")
	require.Error(t, err, "the tool must not be on the test's own PATH")

	cv := execCV("app", "v1.0.0", "hopdag-test-tool", "a")
	cv.Command.Env = map[string]string{"PATH": bin + ":/usr/bin:/bin"}
	var out bytes.Buffer // written by Run's reader, read after Run returned
	require.NoError(t, components.NewExec(components.WithOutput(&out, nil)).Run(context.Background(), task(nil, cv, nil)))
	assert.Equal(t, "tool a\n", out.String())

	cv.Command.Env = map[string]string{"PATH": "/nonexistent"}
	err = components.NewExec().Run(context.Background(), task(nil, cv, nil))
	require.ErrorIs(t, err, exec.ErrNotFound)
	assert.Contains(t, err.Error(), "(the command's PATH is /nonexistent)")
}

// Under a coordinator that is a child subreaper (or PID 1), a stopped
// command's orphans are reparented to it: Exec reaps them, so a stop
// ends when the group has exited instead of waiting out the grace period
// on zombies.
func TestExecReapsAsSubreaper(t *testing.T) {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
	defer syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0)
	dir := t.TempDir()
	// The leader's child outlives it by a moment after SIGTERM: it is then
	// an orphan of this process, and a zombie once it exits.
	prog := script(t, dir, `sh -c 'trap "sleep 0.2; exit 0" TERM; while :; do sleep 0.05; done' &
echo $$ > leader.pid
wait
`)
	cv := execCV("app", "v1.0.0", prog)
	cv.Command.Dir = dir
	const grace = 20 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		readPID(t, filepath.Join(dir, "leader.pid"))
		cancel()
	}()
	start := time.Now()
	err := components.NewExec(components.WithGracePeriod(grace)).Run(ctx, task(nil, cv, nil))
	elapsed := time.Since(start)
	require.True(t, errors.Is(err, context.Canceled), "Run = %v, want it stopped", err)
	assert.Less(t, elapsed, grace/2, "the stop waited on zombies (%v of a %v grace period)", elapsed, grace)
	assertGroupGone(t, readPID(t, filepath.Join(dir, "leader.pid")))
}

// Under a subreaper, what a command leaves in its group when it exits by
// itself is killed and reaped: no zombie of it stays behind.
func TestExecReapsLeftovers(t *testing.T) {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
	defer syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0)
	dir := t.TempDir()
	prog := script(t, dir, `sleep 30 &
echo $! > child.pid
`)
	cv := execCV("app", "v1.0.0", prog)
	cv.Command.Dir = dir
	require.NoError(t, components.NewExec().Run(context.Background(), task(nil, cv, nil)))
	child := readPID(t, filepath.Join(dir, "child.pid"))
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(child)))
	assert.True(t, errors.Is(err, os.ErrNotExist), "the leftover %d is still in /proc (a zombie?): %v", child, err)
}
