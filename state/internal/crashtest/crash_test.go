package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
)

var (
	kills = flag.Int("crash.kills", 30, "SIGKILLs the crash test deals at least")
	seed  = flag.Uint64("crash.seed", 0, "seed of the kill moments (0: from the time, logged)")
)

// childEnv, when set, makes the test binary run Upgrade instead of the
// tests: the crash test's child process.
const childEnv = "HOPDAG_CRASHTEST_CHILD"

// Generous real-time bounds, never reached unless something hangs.
const (
	readyTimeout = 2 * time.Minute
	runTimeout   = 5 * time.Minute
)

func TestMain(m *testing.M) {
	if cfg := os.Getenv(execChildEnv); cfg != "" {
		var c ExecConfig
		if err := json.Unmarshal([]byte(cfg), &c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := ExecUpgrade(context.Background(), c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if cfg := os.Getenv(childEnv); cfg != "" {
		var c Config
		if err := json.Unmarshal([]byte(cfg), &c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := Upgrade(context.Background(), c, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// key names a component on a hop.
type key struct {
	hop  int
	name string
}

func (k key) String() string { return fmt.Sprintf("hop %d %s", k.hop+1, k.name) }

// attempt is one line of the attempt log.
type attempt struct {
	key
	n int
}

// round is the book of one upgrade, killed and restarted until it ends.
type round struct {
	dir, log string
	// running holds the attempts the status on disk showed Running at a
	// kill: each was cut short by that kill (a process killed before its
	// first checkpoint leaves the same attempt on disk, and is not counted
	// twice). started holds those of them whose log line was written: the
	// runner had started.
	running, started map[attempt]bool
	// succeededAt is, per component, the length of the log when the
	// status on disk first showed it Succeeded: no later line may name it.
	succeededAt map[key]int
	kills       int
	// readEvery is the pause between two reads of the concurrent reader.
	readEvery time.Duration
	// progressLog, when set, is another log whose lines count as
	// progress (the rollback log, the step log).
	progressLog string
}

func newRound(t *testing.T) *round {
	return &round{
		dir: filepath.Join(t.TempDir(), "state"), log: filepath.Join(t.TempDir(), "attempts.log"),
		running: map[attempt]bool{}, started: map[attempt]bool{}, succeededAt: map[key]int{},
		readEvery: time.Millisecond,
	}
}

// kill says when to kill the program: afterStart from its start when
// early; else once the attempt log has lines lines, after a further
// delay. Kill moments follow the upgrade's progress rather than the clock,
// so that a slow machine gets as many kills per round as a fast one.
type kill struct {
	early      bool
	afterStart time.Duration
	lines      int
	delay      time.Duration
}

// TestCrash kills the upgrade with SIGKILL at random moments and
// restarts it until it finishes, as many rounds as it takes to deal
// -crash.kills kills. Every round must reach the target with every
// component run exactly once more than the number of times it was killed
// while it ran, never after it was recorded Succeeded, and with a status
// file that parses at every kill and at every moment a reader looked.
//
// A restart takes the lock only once the killed holder's lease expired
// (a lease is never taken over early). The lease's TTL is 5s, so that a
// loaded CI machine never stalls a live holder past it; after each kill,
// once the process is reaped, the harness plays the clock and moves the
// dead lease's expiry into the past (ageLease), so that restarts do not
// wait 5s each. (TestCrashExec waits for a real expiry.)
func TestCrash(t *testing.T) {
	rng := crashRand(t, 0)
	t.Logf("at least %d kills", *kills)
	catalog, err := filepath.Abs("../../../testdata/catalog")
	require.NoError(t, err)

	total, running, window, restarts, reads := 0, 0, 0, 0, 0
	for r := 0; total < *kills; r++ {
		rd := newRound(t)
		cfg := Config{Catalog: catalog, Dir: rd.dir, Log: rd.log, Delay: 5 * time.Millisecond, TTL: 5 * time.Second}
		n, rs := rd.run(t, cfg, rng, 8)
		restarts, reads = restarts+rs, reads+n
		rd.check(t, cfg)
		total += rd.kills
		running += len(rd.running)
		window += len(rd.running) - len(rd.started)
		t.Logf("round %d: %d kills, cutting %d Running attempts short", r+1, rd.kills, len(rd.running))
	}
	t.Logf("%d kills survived in %d processes; they cut %d Running attempts short (%d of them before the runner started); %d concurrent reads of the status file parsed",
		total, restarts, running, window, reads)
}

// run restarts the program until it finishes, killing it at random
// moments: one kill in five in the first 30ms from the start (the
// runtime's start-up, taking the lock, loading); the others after 1 to
// spread more component starts, 0 to 20ms later (in a runner, a
// checkpoint, an fsync). It returns the concurrent reads and the starts.
func (rd *round) run(t *testing.T, cfg Config, rng *rand.Rand, spread int) (reads, restarts int) {
	t.Helper()
	for {
		restarts++
		k := kill{lines: rd.lines(t) + 1 + rng.IntN(spread), delay: time.Duration(rng.Int64N(int64(20 * time.Millisecond)))}
		if rng.IntN(5) == 0 {
			k = kill{early: true, afterStart: time.Duration(rng.Int64N(int64(30 * time.Millisecond)))}
		}
		finished, n := rd.start(t, cfg, k)
		reads += n
		if finished {
			return reads, restarts
		}
		require.Less(t, rd.kills, 1000, "the upgrade made no progress in 1000 restarts")
	}
}

// TestCrashLarge is TestCrash on one run of 2,000 components (one hop of
// a layered DAG), killed every 1 to 600 component starts: the journal,
// its group commits and its snapshots survive SIGKILL at any moment.
func TestCrashLarge(t *testing.T) {
	rng := crashRand(t, 1)
	rd := newRound(t)
	// Each read replays a status of 2,000 components: a reader every 20ms
	// leaves the two cores to the coordinator.
	rd.readEvery = 20 * time.Millisecond
	cfg := Config{Components: 2000, Dir: rd.dir, Log: rd.log, Delay: time.Millisecond, TTL: 5 * time.Second}
	reads, restarts := rd.run(t, cfg, rng, 600)
	rd.check(t, cfg)
	t.Logf("%d kills in %d processes; they cut %d Running attempts short; %d concurrent reads of the status parsed",
		rd.kills, restarts, len(rd.running), reads)
}

// start runs the program once and kills it as k says, unless it finishes
// first. It reports whether it finished, and how many times a concurrent
// reader read the status file (each read parsed).
func (rd *round) start(t *testing.T, cfg Config, k kill) (bool, int) {
	t.Helper()
	env, err := json.Marshal(cfg)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(env))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())

	exited := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() && sc.Text() == "ready" {
			close(ready)
		}
		for sc.Scan() {
		}
		exited <- cmd.Wait()
	}()
	stop := make(chan struct{})
	var readers sync.WaitGroup
	var nreads atomic.Int64
	var bad atomic.Value
	readers.Go(func() { rd.read(stop, &nreads, &bad) })
	defer func() {
		close(stop)
		readers.Wait()
		if b := bad.Load(); b != nil {
			t.Errorf("a concurrent read of the status file failed: %v", b)
		}
	}()

	deadline := time.After(runTimeout)
	var killAt <-chan time.Time
	if k.early {
		killAt = time.After(k.afterStart)
	} else {
		select {
		case <-ready:
		case err := <-exited:
			require.Failf(t, "the program exited before it was ready", "%v\n%s", err, stderr.String())
		case <-time.After(readyTimeout):
			require.Fail(t, "the program was not ready in time", stderr.String())
		}
	wait:
		for {
			select {
			case err := <-exited:
				require.NoError(t, err, "the program failed:\n%s", stderr.String())
				return true, int(nreads.Load())
			case <-deadline:
				require.Fail(t, "the program did not finish in time")
			case <-time.After(time.Millisecond):
				if rd.lines(t) >= k.lines {
					break wait
				}
			}
		}
		killAt = time.After(k.delay)
	}
	select {
	case err := <-exited:
		require.NoError(t, err, "the program failed:\n%s", stderr.String())
		return true, int(nreads.Load())
	case <-killAt:
	case <-deadline:
		require.Fail(t, "the program did not finish in time")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		require.ErrorIs(t, err, os.ErrProcessDone)
	}
	err = <-exited
	if err == nil {
		// It finished before the signal landed.
		return true, int(nreads.Load())
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the program failed rather than being killed: %v\n%s", err, stderr.String())
	rd.kills++
	rd.afterKill(t)
	ageLease(t, rd.dir)
	return false, int(nreads.Load())
}

// ageLease moves the expiry of the lease in dir's lease record an hour
// into the past, as if that much time had passed since a killed holder's
// last refresh: the harness's stand-in for waiting out the TTL. It is
// only done once the holder's process was reaped.
func ageLease(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, state.LeaseFile)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return
	}
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(b, &rec))
	if _, ok := rec["expires"]; !ok {
		return
	}
	rec["expires"] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	b, err = json.Marshal(rec)
	require.NoError(t, err)
	tmp := path + ".aged"
	require.NoError(t, os.WriteFile(tmp, b, 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

// lines counts the lines of the attempt log (and of the rollback log).
func (rd *round) lines(t *testing.T) int {
	if rd.progressLog != "" {
		return countLines(t, rd.log) + countLines(t, rd.progressLog)
	}
	return countLines(t, rd.log)
}

func countLines(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

// read reads the status file in a loop until stop, as an operator's
// status command would, and records the first read that does not parse.
func (rd *round) read(stop <-chan struct{}, n *atomic.Int64, bad *atomic.Value) {
	store, err := state.OpenFile(rd.dir)
	if err != nil {
		bad.CompareAndSwap(nil, err)
		return
	}
	defer store.Close()
	for {
		select {
		case <-stop:
			return
		case <-time.After(rd.readEvery):
		}
		s, err := store.Load(context.Background())
		if err == nil && s != nil && s.Phase == "" {
			err = fmt.Errorf("no phase in the status %+v", s)
		}
		if err != nil {
			bad.CompareAndSwap(nil, err)
			return
		}
		n.Add(1)
	}
}

// afterKill checks what a kill left on disk, and books the components it
// interrupted.
func (rd *round) afterKill(t *testing.T) {
	t.Helper()
	s := rd.load(t)
	lines := rd.attempts(t)
	if s == nil {
		return // killed before the first checkpoint
	}
	logged := map[attempt]bool{}
	for _, a := range lines {
		logged[a] = true
	}
	for h, hs := range s.Hops {
		for _, c := range hs.Components {
			k := key{h, c.Name}
			switch c.Phase {
			case record.Running:
				a := attempt{k, c.Attempts}
				rd.running[a] = true
				if logged[a] {
					rd.started[a] = true
				}
			case record.Succeeded:
				if _, ok := rd.succeededAt[k]; !ok {
					rd.succeededAt[k] = len(lines)
				}
			}
		}
	}
}

// load reads the status through a fresh File store, as the next process
// will, and checks that the lease file parses too.
func (rd *round) load(t *testing.T) *record.Status {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(rd.dir, state.LeaseFile)); err == nil {
		var v map[string]any
		require.NoError(t, json.Unmarshal(b, &v), "lease file after a kill:\n%s", b)
	}
	if _, err := os.Stat(rd.dir); os.IsNotExist(err) {
		return nil
	}
	f, err := state.OpenFile(rd.dir)
	require.NoError(t, err)
	defer f.Close()
	s, err := f.Load(t.Context())
	require.NoError(t, err, "status file after a kill")
	return s
}

// attempts parses the attempt log.
func (rd *round) attempts(t *testing.T) []attempt {
	t.Helper()
	b, err := os.ReadFile(rd.log)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []attempt
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" && i == 0 {
			continue
		}
		f := strings.Fields(line)
		require.Len(t, f, 3, "attempt log line %d: %q", i+1, line)
		h, err1 := strconv.Atoi(f[0])
		n, err2 := strconv.Atoi(f[2])
		require.NoError(t, err1, "attempt log line %d: %q", i+1, line)
		require.NoError(t, err2, "attempt log line %d: %q", i+1, line)
		out = append(out, attempt{key{h, f[1]}, n})
	}
	return out
}

// check checks a finished round.
func (rd *round) check(t *testing.T, cfg Config) {
	t.Helper()
	s := rd.load(t)
	require.NotNil(t, s, "no status after the upgrade finished")
	assert.Equal(t, record.Succeeded, s.Phase, "run phase")
	plan, err := cfg.Plan()
	require.NoError(t, err)
	assert.Equal(t, plan.Route.From.Original(), s.From)
	assert.Equal(t, plan.Route.To.Original(), s.To, "the upgrade did not reach the target")
	assert.Equal(t, record.Progress{Done: plan.Total(), Total: plan.Total()}, s.Progress)

	killed, started := map[key]int{}, map[key]int{}
	for a := range rd.running {
		killed[a.key]++
		if rd.started[a] {
			started[a.key]++
		}
	}
	lines := rd.attempts(t)
	ran := map[key][]int{}
	for i, a := range lines {
		ran[a.key] = append(ran[a.key], a.n)
		if at, ok := rd.succeededAt[a.key]; ok && i >= at {
			t.Errorf("%s ran again (attempt %d, log line %d) after the status recorded it Succeeded", a.key, a.n, i+1)
		}
	}
	for h, hs := range s.Hops {
		assert.Equal(t, record.Succeeded, hs.Phase, "hop %d phase", h+1)
		for _, c := range hs.Components {
			k := key{h, c.Name}
			assert.Equal(t, record.Succeeded, c.Phase, "%s phase", k)
			// Each kill while Running cost one attempt number, and one run
			// unless it landed before the runner started.
			assert.Equal(t, 1+killed[k], c.Attempts,
				"%s: %d attempts, want 1 + %d kills while Running", k, c.Attempts, killed[k])
			assert.Len(t, ran[k], 1+started[k],
				"%s ran %d times (attempts %v), want 1 + %d kills while it ran", k, len(ran[k]), ran[k], started[k])
			if n := len(ran[k]); n > 0 {
				assert.Equal(t, c.Attempts, ran[k][n-1], "%s: the last run is not the last attempt", k)
				for i := 1; i < n; i++ {
					assert.Less(t, ran[k][i-1], ran[k][i], "%s: attempts out of order: %v", k, ran[k])
				}
			}
		}
	}
}

// crashRand skips a crash test under -short and returns the random source
// of its kills: seeded by -crash.seed, or by the clock (logged, so that a
// failure can be rerun), and one stream per test.
func crashRand(t *testing.T, stream uint64) *rand.Rand {
	t.Helper()
	if testing.Short() {
		t.Skip("the crash test starts dozens of processes; run it without -short")
	}
	s := *seed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -crash.seed=%d)", s, s)
	return rand.New(rand.NewPCG(s, stream))
}
