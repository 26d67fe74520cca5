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

	"github.com/hopdag/hopdag/runner"
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
	if testing.Short() {
		t.Skip("starts coordinator processes; run it without -short")
	}
	dir := t.TempDir()
	// The second coordinator waits for the first's lease to expire (2s,
	// plus the skew allowance): no harness help here.
	cfg := ExecConfig{Dir: dir, Script: execScript, TTL: 2 * time.Second}
	first := startExecChild(t, cfg)
	var pid1 int
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "pids"))
		pid1, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid1 > 0
	}, time.Minute, 5*time.Millisecond, "the first coordinator never started the command")
	time.Sleep(20 * time.Millisecond) // into the exec of sleep
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()

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
	pids, err := os.ReadFile(filepath.Join(dir, "pids"))
	require.NoError(t, err)
	assert.Len(t, strings.Fields(string(pids)), 2, "command starts")
	if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid1) + "/stat"); err == nil {
		f := strings.Fields(string(st))
		assert.Contains(t, []string{"Z", "X"}, f[2], "the first command (pid %d) outlived its coordinator", pid1)
	}
	f, err := state.OpenFile(dir)
	require.NoError(t, err)
	defer f.Close()
	s, err := f.Load(t.Context())
	require.NoError(t, err)
	require.NotNil(t, s)
	assert.Equal(t, runner.Succeeded, s.Phase)
	cs, _ := s.Component(0, "step")
	assert.Equal(t, 2, cs.Attempts, "attempts of the step across both coordinators")
}
