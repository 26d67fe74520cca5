//go:build linux

package components_test

import (
	"bytes"
	"context"
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

// With the guard, a coordinator killed with SIGKILL takes the command's
// whole process group with it, and the command gets SIGTERM first (its
// trap ran within the grace period); WaitGuards returns once the guard is
// gone.
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

// A guard whose coordinator is gone before it starts the command (it
// died between starting the guard and the guard's first look) does not
// start it: the resumed run would run it again. With its real parent it
// runs the command and exits as it does.
func TestGuardWithoutCoordinatorStartsNothing(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	ran := filepath.Join(t.TempDir(), "ran")
	// PID 1 is not this guard's parent: the test process is.
	cmd := exec.Command(self, components.GuardArg, "1s", "", "1", "/bin/sh", "-c", "touch "+ran)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "output: %s", out)
	assert.Equal(t, 130, cmd.ProcessState.ExitCode(), "output: %s", out)
	assert.Contains(t, string(out), "the coordinator (pid 1) exited before the command started")
	assert.NoFileExists(t, ran, "the command ran")

	cmd = exec.Command(self, components.GuardArg, "1s", "", strconv.Itoa(os.Getpid()), "/bin/sh", "-c", "touch "+ran+"; exit 7")
	out, err = cmd.CombinedOutput()
	require.Error(t, err, "output: %s", out)
	assert.Equal(t, 7, cmd.ProcessState.ExitCode(), "output: %s", out)
	assert.FileExists(t, ran)

	cmd = exec.Command(self, components.GuardArg, "soon", "", "1", "true")
	out, _ = cmd.CombinedOutput()
	assert.Equal(t, 2, cmd.ProcessState.ExitCode(), "output: %s", out)
	assert.Contains(t, string(out), "GRACE: ")
}
