//go:build linux

package crashtest

import (
	"encoding/json"
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

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
)

// execChildEnv, when set, makes the test binary run ExecUpgrade.
const execChildEnv = "HOPDAG_CRASHTEST_EXEC_CHILD"

// The command records its pid, and first checks that no earlier copy of
// it is still running (a process that is neither gone nor a zombie). Its
// first run sleeps; its second exits 0.
const execScript = `
for p in $(cat "$DIR/pids" 2>/dev/null); do
  st=$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)
  if [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]; then echo "$p $st" >> "$DIR/overlap"; fi
done
echo $$ >> "$DIR/pids"
if [ "$(wc -l < "$DIR/pids")" -ge 2 ]; then exit 0; fi
exec sleep 30
`

// groupScript is execScript for a command of two processes: its first
// run starts a child in the background and waits for it, so that the
// parent-death signal of the command's first process alone would leave
// the child running.
const groupScript = `
for p in $(cat "$DIR/pids" 2>/dev/null); do
  st=$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)
  if [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]; then echo "$p $st" >> "$DIR/overlap"; fi
done
echo $$ >> "$DIR/starts"
if [ "$(wc -l < "$DIR/starts")" -ge 2 ]; then exit 0; fi
sleep 30 &
echo $! >> "$DIR/pids"
echo $$ >> "$DIR/pids"
wait
`

func startExecChild(t *testing.T, cfg ExecConfig) *exec.Cmd {
	t.Helper()
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), execChildEnv+"="+string(b))
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	return cmd
}

// TestCrashExec SIGKILLs a coordinator in the middle of an exec command.
// The command dies with it (the parent-death signal), and the next
// coordinator, which takes the lock only once the lease expired, starts
// the command again only after the old process is gone: never two copies
// of one step at once.
func TestCrashExec(t *testing.T) {
	crashExec(t, ExecConfig{Script: execScript, TTL: 2 * time.Second}, 1, false)
}

// TestCrashExecGuard is TestCrashExec with a command of two processes (a
// shell and the child it waits for) under the guard, as hopdag run runs
// commands: the shell gets SIGTERM when the coordinator dies, its child
// is stopped by the next coordinator (WaitGuards), whose attempt starts
// only after both processes are gone.
func TestCrashExecGuard(t *testing.T) {
	crashExec(t, ExecConfig{Script: groupScript, TTL: 2 * time.Second, Guard: true}, 2, false)
}

// TestCrashExecGuardKillAll is TestCrashExecGuard with every process of
// the coordinator's binary SIGKILLed at once (pkill -9 hopdag, an OOM
// kill of its cgroup): when the guard was that binary started again, the
// guard died too, its lock with it, and the next coordinator's attempt
// ran beside the old command and its child.
func TestCrashExecGuardKillAll(t *testing.T) {
	crashExec(t, ExecConfig{Script: groupScript, TTL: 2 * time.Second, Guard: true}, 2, true)
}

// crashExec runs cfg's coordinator, SIGKILLs it (and with killAll every
// process of this binary that it started) once the command's first
// attempt has recorded its procs pids, runs a second coordinator to the
// end, and checks that the second attempt overlapped nothing of the first.
func crashExec(t *testing.T, cfg ExecConfig, procs int, killAll bool) {
	if testing.Short() {
		t.Skip("starts coordinator processes; run it without -short")
	}
	dir := t.TempDir()
	// The second coordinator waits for the first's lease to expire (2s,
	// plus the skew allowance): no harness help here.
	cfg.Dir = dir
	first := startExecChild(t, cfg)
	var pids1 []int
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "pids"))
		pids1 = pids1[:0]
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				pids1 = append(pids1, p)
			}
		}
		return len(pids1) >= procs
	}, time.Minute, 5*time.Millisecond, "the first coordinator never started the command")
	time.Sleep(20 * time.Millisecond) // into the exec of sleep
	killed := []int{first.Process.Pid}
	if killAll {
		killed = append(killed, binaryChildren(t, first.Process.Pid)...)
	}
	for _, pid := range killed {
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	_ = first.Wait()
	t.Logf("SIGKILLed %d processes of the coordinator's binary: %v", len(killed), killed)

	second := startExecChild(t, cfg)
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "the second coordinator")
	case <-time.After(time.Minute):
		_ = second.Process.Kill()
		t.Fatal("the second coordinator did not finish within a minute")
	}

	overlap, err := os.ReadFile(filepath.Join(dir, "overlap"))
	if err == nil {
		t.Errorf("the second attempt started while the first still ran (pid state): %s", overlap)
	}
	for _, pid := range pids1 {
		if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			f := strings.Fields(string(st))
			assert.Contains(t, []string{"Z", "X"}, f[2], "a process of the first command (pid %d) outlived its coordinator", pid)
		}
	}
	f, err := state.OpenFile(dir)
	require.NoError(t, err)
	defer f.Close()
	s, err := f.Load(t.Context())
	require.NoError(t, err)
	require.NotNil(t, s)
	assert.Equal(t, record.Succeeded, s.Phase)
	cs, _ := s.Component(0, "step")
	assert.Equal(t, 2, cs.Attempts, "attempts of the step across both coordinators")
}

// binaryChildren lists the children of parent that run this test binary
// (the guards, when a guard is this binary started again).
func binaryChildren(t *testing.T, parent int) []int {
	t.Helper()
	self, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err != nil || exe != self {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		if ppid, _ := strconv.Atoi(f[1]); ppid == parent {
			pids = append(pids, pid)
		}
	}
	return pids
}
