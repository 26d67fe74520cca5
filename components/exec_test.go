//go:build unix

package components_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// script writes an executable /bin/sh script into dir and returns its path.
func script(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "upgrade.sh")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
	return p
}

// readPID waits for a pid file the script writes, and returns the pid.
func readPID(t *testing.T, file string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(file)
		if err != nil || !strings.HasSuffix(string(data), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	}, 5*time.Second, 5*time.Millisecond, "the script never wrote %s", file)
	return pid
}

// liveInGroup lists the processes of group pgid that are not zombies. It
// reads /proc, so that an exited process its parent has not reaped yet
// (as under an init that does not reap) does not count.
func liveInGroup(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc to inspect process groups")
	}
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(fields) < 3 {
			continue
		}
		if g, _ := strconv.Atoi(fields[2]); g == pgid && fields[0] != "Z" && fields[0] != "X" {
			live = append(live, pid)
		}
	}
	return live
}

// assertGroupGone checks that no process of the group is left running.
func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	assert.Eventually(t, func() bool { return len(liveInGroup(t, pgid)) == 0 }, 2*time.Second, 10*time.Millisecond,
		"process group %d still has processes: %v", pgid, liveInGroup(t, pgid))
}

func TestExecSuccess(t *testing.T) {
	dir := t.TempDir()
	work := t.TempDir()
	prog := script(t, dir, `
printf 'arg: %s\n' "$@"
echo "pwd: $(pwd)"
echo "env: $GREETING|$HOPDAG_COMPONENT|$HOPDAG_VERSION|$HOPDAG_FROM|$HOPDAG_HOP|$PATH"
echo "to stderr" >&2
`)
	from := execCV("etcd", "v3.5.16", prog)
	to := execCV("etcd", "v3.5.21", prog, "--to", "{{ .Component.Version }}", "--from={{ .From }}", "{{ .Values.mirror }}/{{ .Component.Params.image }}", "$(echo not run); a b")
	to.Params = map[string]string{"image": "etcd"}
	to.Command.Env = map[string]string{"GREETING": "hello {{ .Component.Name }}"}
	to.Command.Dir = work

	var out, errOut bytes.Buffer
	x := components.NewExec(components.WithEnv([]string{"PATH=/usr/bin:/bin"}), components.WithExecValues(map[string]any{"mirror": "m.local"}),
		components.WithOutput(&out, &errOut))
	require.NoError(t, x.Run(context.Background(), task(from, to, hop("v26.03", "v26.06"))))
	assert.Equal(t, "arg: --to\narg: v3.5.21\narg: --from=v3.5.16\narg: m.local/etcd\narg: $(echo not run); a b\n"+
		"pwd: "+work+"\n"+
		"env: hello etcd|etcd|v3.5.21|v3.5.16|v26.03 -> v26.06|/usr/bin:/bin\n", out.String(), "argv passed verbatim, never through a shell")
	assert.Equal(t, "to stderr\n", errOut.String())
	assert.NoError(t, x.Validate(to))
}

func TestExecExitError(t *testing.T) {
	dir := t.TempDir()
	var lines strings.Builder
	for i := 1; i <= 15; i++ {
		fmt.Fprintf(&lines, "echo 'problem %d' >&2\n", i)
	}
	prog := script(t, dir, lines.String()+"echo 'not on stderr'\nexit 3\n")
	err := components.NewExec().Run(context.Background(), task(nil, execCV("etcd", "v3.5.21", prog), nil))
	require.Error(t, err)
	assert.False(t, runner.IsPermanent(err), "a failed command may be retried")
	ee, ok := errors.AsType[*components.ExitError](err)
	require.True(t, ok, "errors.As(%v, *ExitError)", err)
	assert.Equal(t, 3, ee.Code)
	assert.Empty(t, ee.Signal)
	assert.Equal(t, []string{"problem 6", "problem 7", "problem 8", "problem 9", "problem 10", "problem 11", "problem 12", "problem 13", "problem 14", "problem 15"}, ee.Stderr)
	_, isExit := errors.AsType[*exec.ExitError](err)
	assert.True(t, isExit)
	assert.Equal(t, "components: etcd v3.5.21: exec: "+prog+": exit code 3; last lines of stderr:\n\tproblem 6\n\tproblem 7\n\tproblem 8\n\tproblem 9\n\tproblem 10\n\tproblem 11\n\tproblem 12\n\tproblem 13\n\tproblem 14\n\tproblem 15", err.Error())
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, context.Canceled)
}

func TestExecOutputLimit(t *testing.T) {
	dir := t.TempDir()
	prog := script(t, dir, `i=1; while [ $i -le 2000 ]; do echo "line $i of the error output" >&2; i=$((i+1)); done; exit 1`)
	err := components.NewExec(components.WithOutputLimit(200)).Run(context.Background(), task(nil, execCV("app", "v1.0.0", prog), nil))
	ee, ok := errors.AsType[*components.ExitError](err)
	require.True(t, ok, "errors.As(%v, *ExitError)", err)
	assert.Equal(t, 1, ee.Code)
	require.NotEmpty(t, ee.Stderr)
	assert.Equal(t, "line 2000 of the error output", ee.Stderr[len(ee.Stderr)-1], "the tail is kept")
	for _, l := range ee.Stderr {
		assert.Regexp(t, `^line \d+ of the error output$`, l, "no line cut by the bound")
	}
	assert.Less(t, len(strings.Join(ee.Stderr, "\n")), 200)
}

// A timeout stops the command's whole process group: SIGTERM, then SIGKILL
// after the grace period for a group whose processes ignore SIGTERM.
func TestExecTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	prog := script(t, dir, `trap '' TERM
sh -c 'trap "" TERM; echo $$ > child.pid; while :; do sleep 0.05; done' &
echo $$ > leader.pid
wait
`)
	cv := execCV("app", "v1.0.0", prog)
	cv.Command.Dir = dir
	const timeout, grace = 600 * time.Millisecond, 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	err := components.NewExec(components.WithGracePeriod(grace)).Run(ctx, task(nil, cv, nil))
	elapsed := time.Since(start)

	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, context.Canceled)
	ee, ok := errors.AsType[*components.ExitError](err)
	require.True(t, ok, "errors.As(%v, *ExitError)", err)
	assert.Equal(t, "killed", ee.Signal, "SIGTERM was ignored, SIGKILL ended it")
	assert.Equal(t, -1, ee.Code)
	assert.Equal(t, "components: app v1.0.0: exec: "+prog+": stopped: context deadline exceeded (killed by signal killed)", err.Error())
	assert.GreaterOrEqual(t, elapsed, timeout+grace-50*time.Millisecond, "SIGKILL waits for the grace period")
	assert.Less(t, elapsed, timeout+grace+3*time.Second)

	leader, child := readPID(t, filepath.Join(dir, "leader.pid")), readPID(t, filepath.Join(dir, "child.pid"))
	assert.Equal(t, leader, pgidOf(t, child), "the child is in the leader's group")
	assertGroupGone(t, leader)
}

// pgidOf returns a process's group, or -1 when it is gone.
func pgidOf(t *testing.T, pid int) int {
	g, err := syscall.Getpgid(pid)
	if err != nil {
		t.Logf("getpgid(%d): %v", pid, err)
		return -1
	}
	return g
}

func TestExecCancel(t *testing.T) {
	dir := t.TempDir()
	prog := script(t, dir, `sh -c 'trap "" TERM; echo $$ > child.pid; while :; do sleep 0.05; done' &
echo $$ > leader.pid
wait
`)
	cv := execCV("app", "v1.0.0", prog)
	cv.Command.Dir = dir
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- components.NewExec(components.WithGracePeriod(100*time.Millisecond)).Run(ctx, task(nil, cv, nil))
	}()
	leader, child := readPID(t, filepath.Join(dir, "leader.pid")), readPID(t, filepath.Join(dir, "child.pid"))
	assert.Equal(t, leader, pgidOf(t, child))
	assert.Contains(t, liveInGroup(t, leader), child, "the group is seen while it runs")
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of the cancellation")
	}
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	ee, ok := errors.AsType[*components.ExitError](err)
	require.True(t, ok)
	assert.Equal(t, "terminated", ee.Signal, "the leader died of SIGTERM")
	assertGroupGone(t, leader)
}

// Processes a command leaves behind in its group are killed when it exits,
// and do not hold Run up.
func TestExecKillsLeftovers(t *testing.T) {
	dir := t.TempDir()
	prog := script(t, dir, `sleep 30 &
echo $$ > leader.pid
echo "done"
`)
	cv := execCV("app", "v1.0.0", prog)
	cv.Command.Dir = dir
	start := time.Now()
	require.NoError(t, components.NewExec(components.WithGracePeriod(5*time.Second)).Run(context.Background(), task(nil, cv, nil)))
	assert.Less(t, time.Since(start), 3*time.Second)
	assertGroupGone(t, readPID(t, filepath.Join(dir, "leader.pid")))
}

// A descendant that leaves the group (setsid) and keeps the output pipes
// open holds Run up for one grace period at most.
func TestExecEscapedDescendant(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	dir := t.TempDir()
	prog := script(t, dir, `setsid sh -c 'echo $$ > escaped.pid; exec sleep 30' &
while [ ! -s escaped.pid ]; do sleep 0.01; done
`)
	cv := execCV("app", "v1.0.0", prog)
	cv.Command.Dir = dir
	start := time.Now()
	err := components.NewExec(components.WithGracePeriod(200*time.Millisecond)).Run(context.Background(), task(nil, cv, nil))
	escaped := readPID(t, filepath.Join(dir, "escaped.pid"))
	t.Cleanup(func() { _ = syscall.Kill(escaped, syscall.SIGKILL) }) // a process this test started
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 3*time.Second)
}

func TestExecErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-program")
	tests := []struct {
		name      string
		cv        *release.ComponentVersion
		is        error
		permanent bool
		msg       string
		validate  string // Validate's message, "" when it accepts
	}{
		{name: "no command", cv: &release.ComponentVersion{Name: "app", Version: release.MustParseVersion("v1.0.0"), Type: release.TypeExec},
			is: components.ErrNoCommand, permanent: true, msg: "components: app v1.0.0: exec: component has no command",
			validate: "components: app v1.0.0: validate: component has no command"},
		{name: "empty argv[0]", cv: execCV("app", "v1.0.0", ""), is: components.ErrNoCommand, permanent: true,
			msg: "components: app v1.0.0: exec: component has no command", validate: "components: app v1.0.0: validate: component has no command"},
		{name: "bad templates, all reported", cv: execCV("app", "v1.0.0", "/bin/true", "{{ .Values.x }}", "{{ .Component.Nope }}"), is: components.ErrTemplate, permanent: true,
			msg: "components: app v1.0.0: exec: 2 problems:\n" +
				"\tbad template: template: command.args[1]:1:10: executing \"command.args[1]\" at <.Values.x>: map has no entry for key \"x\"\n" +
				"\tbad template: template: command.args[2]:1:13: executing \"command.args[2]\" at <.Component.Nope>: can't evaluate field Nope in type components.componentData",
			validate: "components: app v1.0.0: validate: 2 problems:\n" +
				"\tbad template: template: command.args[1]:1:10: executing \"command.args[1]\" at <.Values.x>: map has no entry for key \"x\"\n" +
				"\tbad template: template: command.args[2]:1:13: executing \"command.args[2]\" at <.Component.Nope>: can't evaluate field Nope in type components.componentData"},
		{name: "program not found", cv: execCV("app", "v1.0.0", missing), is: os.ErrNotExist, permanent: true,
			msg: "components: app v1.0.0: exec: program " + missing + ": file does not exist"},
		{name: "not in PATH", cv: execCV("app", "v1.0.0", "no-such-program-in-path"), is: exec.ErrNotFound, permanent: true,
			msg: `components: app v1.0.0: exec: exec: "no-such-program-in-path": executable file not found in $PATH`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := components.NewExec()
			err := x.Run(context.Background(), task(nil, tt.cv, nil))
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.is)
			assert.Equal(t, tt.permanent, runner.IsPermanent(err))
			assert.EqualError(t, err, tt.msg)
			if tt.validate == "" {
				assert.NoError(t, x.Validate(tt.cv))
			} else {
				assert.EqualError(t, x.Validate(tt.cv), tt.validate)
			}
		})
	}

	x := components.NewExec()
	assert.True(t, runner.IsPermanent(x.Run(context.Background(), runner.Task{Component: "x"})))
	assert.EqualError(t, x.Validate(nil), "components: validate: nil component version")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := x.Run(ctx, task(nil, execCV("app", "v1.0.0", "/bin/true"), nil))
	assert.ErrorIs(t, err, context.Canceled)
	assert.EqualError(t, err, "components: app v1.0.0: exec: context canceled")
}

// Commands run in parallel through one Exec, writing to one output: run
// with -race.
func TestExecConcurrent(t *testing.T) {
	var out bytes.Buffer
	x := components.NewExec(components.WithOutput(&out, &out))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			cv := execCV(fmt.Sprintf("c%d", i), "v1.0.0", "/bin/sh", "-c", `echo "out $HOPDAG_COMPONENT"; echo "err $HOPDAG_COMPONENT" >&2`)
			assert.NoError(t, x.Run(context.Background(), task(nil, cv, nil)))
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.Len(t, lines, 16)
	for i := range 8 {
		assert.Contains(t, lines, fmt.Sprintf("out c%d", i))
		assert.Contains(t, lines, fmt.Sprintf("err c%d", i))
	}
}

// A zero or negative grace period kills at once; a non-positive output
// limit falls back to the default.
func TestExecOptionBounds(t *testing.T) {
	dir := t.TempDir()
	prog := script(t, dir, "trap '' TERM\necho $$ > leader.pid\nwhile :; do sleep 0.05; done\n")
	cv := execCV("app", "v1.0.0", prog)
	cv.Command.Dir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := components.NewExec(components.WithGracePeriod(-time.Second), components.WithOutputLimit(-1)).Run(ctx, task(nil, cv, nil))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 3*time.Second)
	assertGroupGone(t, readPID(t, filepath.Join(dir, "leader.pid")))
}

// A context cancelled because the coordinator's lease is lost (the
// Keeper's cause, a state.LostError, says by when work must have stopped)
// cuts the grace period short: a command that ignores SIGTERM is killed at
// the lease's expiry, not after the 10 s grace, so it never runs on while
// another coordinator takes over.
func TestExecStopsByTheLostLeasesExpiry(t *testing.T) {
	dir := t.TempDir()
	prog := script(t, dir, "trap '' TERM\necho $$ > leader.pid\nwhile :; do sleep 0.05; done\n")
	cv := execCV("app", "v1.0.0", prog)
	cv.Command.Dir = dir
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan error, 1)
	go func() {
		done <- components.NewExec(components.WithGracePeriod(10*time.Second)).Run(ctx, task(nil, cv, nil))
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(dir, "leader.pid")); return err == nil }, 5*time.Second, 10*time.Millisecond)
	stopBy := time.Now().Add(300 * time.Millisecond)
	cancel(&state.LostError{Lease: state.Lease{Holder: "a", Token: 1, Expires: stopBy}})
	var err error
	select {
	case err = <-done:
	case <-time.After(8 * time.Second):
		t.Fatal("the command outlived its lost lease by more than 7 s (the grace period is 10 s)")
	}
	ee, ok := errors.AsType[*components.ExitError](err)
	require.True(t, ok, "errors.As(%v, *ExitError)", err)
	assert.Equal(t, "killed", ee.Signal, "SIGTERM was ignored; SIGKILL at the lease's expiry ended it")
	assert.GreaterOrEqual(t, time.Since(stopBy), -50*time.Millisecond, "killed no earlier than the lease's expiry")
	assertGroupGone(t, readPID(t, filepath.Join(dir, "leader.pid")))
}
