//go:build linux

package components_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/runner"
)

// killedCoordinator starts a coordinator process running a command that
// starts a child of its own (a background job) and traps SIGTERM, kills
// the coordinator with SIGKILL once the child runs, and returns the dir
// and the command's process group.
func killedCoordinator(t *testing.T, guard bool) (dir string, pgid int) {
	dir = t.TempDir()
	script(t, dir, `trap 'echo terminated > term.txt; kill $child; exit 0' TERM
sleep 300 &
child=$!
echo $child > child.pid
wait
`)
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envCoordinator+"="+dir, "HOPDAG_TEST_GUARD="+map[bool]string{true: "1", false: "0"}[guard])
	require.NoError(t, cmd.Start())
	child := readPID(t, filepath.Join(dir, "child.pid"))
	pgid = pgidOf(t, child)
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	return dir, pgid
}

// Without the guard, a coordinator killed with SIGKILL takes only the
// process Exec started with it (the parent-death signal): the command's
// own child keeps running, and it got no SIGTERM. This is the gap
// WithGuard closes.
func TestExecWithoutGuardLeavesGrandchild(t *testing.T) {
	dir, pgid := killedCoordinator(t, false)
	time.Sleep(time.Second)
	assert.NotEmpty(t, liveInGroup(t, pgid), "the command's child died with the coordinator without a guard (the gap is gone: update WithGuard's doc)")
	assert.NoFileExists(t, filepath.Join(dir, "term.txt"))
}

// With the guard, a coordinator killed with SIGKILL gives the command
// SIGTERM at once (its parent-death signal: its trap ran and stopped its
// child), and WaitGuards returns once the command's processes are gone.
func TestExecGuardStopsGroupWhenCoordinatorDies(t *testing.T) {
	dir, pgid := killedCoordinator(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, components.WaitGuards(ctx, filepath.Join(dir, "commands.lock"), 8*time.Second, nil))
	t.Logf("the guard was gone %v after the coordinator's SIGKILL", time.Since(start).Round(time.Millisecond))
	assertGroupGone(t, pgid)
	data, err := os.ReadFile(filepath.Join(dir, "term.txt"))
	require.NoError(t, err, "the command got no SIGTERM before its group was killed")
	assert.Equal(t, "terminated\n", string(data))
}

// Under the guard the command runs as without it: its output, its exit
// status and the program name in errors are the command's.
func TestExecGuardTransparent(t *testing.T) {
	dir := t.TempDir()
	prog := script(t, dir, "echo out; echo err >&2; exit 3\n")
	var out, errOut bytes.Buffer // written by Run's readers, read after Run returned
	x := components.NewExec(components.WithGuard(filepath.Join(dir, "commands.lock")), components.WithOutput(&out, &errOut))
	err := x.Run(context.Background(), task(nil, execCV("app", "v1.0.0", prog), nil))
	var ee *components.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, ee.Code)
	assert.Equal(t, prog, ee.Program)
	assert.Equal(t, "out\n", out.String())
	assert.Equal(t, "err\n", errOut.String())
	require.NoError(t, x.Run(context.Background(), task(nil, execCV("app", "v1.0.0", "true"), nil)))
	err = x.Run(context.Background(), task(nil, execCV("app", "v1.0.0", "no-such-program-hopdag"), nil))
	require.ErrorIs(t, err, exec.ErrNotFound, "a missing program is not found before the guard starts")
}

// A program that is missing or not executable is a permanent error on
// the first attempt, under the guard as without it: retrying cannot make
// it appear. Under the guard it was passed to the guard unchecked when
// its path had a slash, the guard exited 127, and the runner retried.
func TestExecMissingProgramIsPermanent(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "upgrade")
	require.NoError(t, os.WriteFile(plain, []byte("#!/bin/sh\nexit 0\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "bin"), 0o755))
	tests := []struct {
		name string
		args []string
		dir  string
		is   error
		msg  string
	}{
		{name: "missing absolute", args: []string{"/opt/db/bin/upgrade"}, is: fs.ErrNotExist,
			msg: "program /opt/db/bin/upgrade: file does not exist"},
		{name: "missing relative to dir", args: []string{"./bin/upgrade"}, dir: dir, is: fs.ErrNotExist,
			msg: "program ./bin/upgrade (in " + dir + "): file does not exist"},
		{name: "not executable", args: []string{plain}, is: fs.ErrPermission,
			msg: "program " + plain + ": permission denied: -rw-r--r--, want an executable file (chmod +x it, or run it with its interpreter)"},
		{name: "a directory", args: []string{filepath.Join(dir, "bin")}, is: fs.ErrPermission,
			msg: "program " + filepath.Join(dir, "bin") + ": permission denied: drwxr-xr-x, want an executable file (chmod +x it, or run it with its interpreter)"},
	}
	for _, guard := range []bool{false, true} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/guard=%v", tt.name, guard), func(t *testing.T) {
				var opts []components.ExecOption
				if guard {
					opts = append(opts, components.WithGuard(filepath.Join(t.TempDir(), "commands.lock")))
				}
				cv := execCV("db", "v1.0.0", tt.args...)
				cv.Command.Dir = tt.dir
				err := components.NewExec(opts...).Run(context.Background(), task(nil, cv, nil))
				require.Error(t, err)
				assert.ErrorIs(t, err, tt.is)
				assert.True(t, runner.IsPermanent(err), "Run = %v, want a permanent error", err)
				assert.Equal(t, "components: db v1.0.0: exec: "+tt.msg, err.Error())
			})
		}
	}
}

// binaryProcesses lists coordinator and the processes of this test binary
// among its children: the coordinator and, when the guard is this binary
// started again, every guard (pkill -9 of the binary's name).
func binaryProcesses(t *testing.T, coordinator int) []int {
	t.Helper()
	self, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	pids := []int{coordinator}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == coordinator {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || exe != self {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if ppid, _ := strconv.Atoi(fields[1]); ppid == coordinator {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Killing every process of the coordinator's binary at once (pkill -9
// hopdag, an OOM kill of its cgroup) while a command with a child of its
// own runs: the next coordinator's WaitGuards returns only once the old
// command and its child are gone, so its attempt never overlaps them.
// When the guard was the coordinator's binary started again, it died in
// the same kill, its lock with it, and WaitGuards returned at once while
// both still ran.
func TestExecGuardKillEverything(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, `sleep 300 &
echo $! > child.pid
echo $$ > leader.pid
wait
`)
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envCoordinator+"="+dir, "HOPDAG_TEST_GUARD=1")
	require.NoError(t, cmd.Start())
	leader, child := readPID(t, filepath.Join(dir, "leader.pid")), readPID(t, filepath.Join(dir, "child.pid"))
	pgid := pgidOf(t, child)
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })

	killed := binaryProcesses(t, cmd.Process.Pid)
	for _, pid := range killed {
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	_ = cmd.Wait()
	t.Logf("killed %d processes of the coordinator's binary: %v", len(killed), killed)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, components.WaitGuards(ctx, filepath.Join(dir, "commands.lock"), 3*time.Second, nil))
	// The next attempt would start now: nothing of the old one may run.
	for _, pid := range []int{leader, child} {
		if st := procState(pid); st != "" && st != "Z" && st != "X" {
			t.Errorf("process %d of the killed coordinator's command runs (state %s) when WaitGuards returned, want it gone", pid, st)
		}
	}
	assertGroupGone(t, pgid)
}

// procState is a process's state letter from /proc, "" when it is gone.
func procState(pid int) string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	return fields[0]
}
