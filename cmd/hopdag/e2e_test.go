package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
)

// End-to-end tests: a built hopdag binary runs the exec catalog in
// testdata/exec-catalog for real, in processes that the tests kill.

const execCatalog = "testdata/exec-catalog"

var built struct {
	once sync.Once
	path string
	err  error
}

// binary builds hopdag once per test process.
func binary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "hopdag-e2e-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "hopdag")
		out, err := exec.Command("go", "build", "-o", built.path, ".").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, built.err)
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	stopEtcd()
	os.Exit(code)
}

// upgrade is one exec-catalog upgrade's directories.
type upgrade struct {
	state, out, log string
}

func newUpgrade(t *testing.T) upgrade {
	d := t.TempDir()
	return upgrade{state: filepath.Join(d, "state"), out: filepath.Join(d, "out"), log: filepath.Join(d, "audit.log")}
}

// testLeaseTTL is the --lease-ttl of the tests' runs: a killed run's
// lease blocks the next run until it expires, which the tests wait for.
const testLeaseTTL = "5s" // state.MinTTL, the least --lease-ttl

func (u upgrade) runArgs(extra ...string) []string {
	return append([]string{"run", execCatalog, "--from", "v1.0", "--to", "v2.0", "--state", u.state,
		"--set", "out=" + u.out, "--log-file", u.log, "--lease-ttl", testLeaseTTL}, extra...)
}

// process is a hopdag started in the background.
type process struct {
	cmd            *exec.Cmd
	stdout, stderr *bytes.Buffer
	done           chan struct{}
	code           int
}

func start(t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(binary(t), args...), stdout: new(bytes.Buffer), stderr: new(bytes.Buffer), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	require.NoError(t, p.cmd.Start())
	go func() {
		p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits for the process to exit and returns its exit code.
func (p *process) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not exit within a minute; stderr:\n%s", strings.Join(p.cmd.Args, " "), p.stderr)
		return -1
	}
}

// hopdagRun runs the binary to the end.
func hopdagRun(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// waitFor polls file until it contains s.
func waitFor(t *testing.T, file, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(file); err == nil && strings.Contains(string(b), s) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(file)
	t.Fatalf("%s never contained %q; it holds:\n%s", file, s, b)
}

// auditLines parses every line of the audit log; a line that does not
// parse fails the test.
func auditLines(t *testing.T, path string) []auditRecord {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var recs []auditRecord
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var r auditRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "%s:%d does not parse: %s", path, n, sc.Text())
		recs = append(recs, r)
	}
	require.NoError(t, sc.Err())
	return recs
}

// checkFinal checks the files the upgrade to v2.0 leaves, and that no
// component's command ever ran twice at once: step.sh holds an flock on
// OUT/<component>.lock while it runs (its children too), and logs in
// OUT/OVERLAP when it finds it taken.
func checkFinal(t *testing.T, out string) {
	t.Helper()
	for name, want := range map[string]string{"config": "1.1", "cache": "1.1", "db": "2.0", "app": "2.0"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err, "component %s wrote no file", name)
		assert.Equal(t, want+"\n", string(b), "%s's file", name)
	}
	overlap, err := os.ReadFile(filepath.Join(out, "OVERLAP"))
	assert.True(t, os.IsNotExist(err), "a command ran twice at once: %s", overlap)
}

func statusJSON(t *testing.T, state string) map[string]any {
	t.Helper()
	code, out, stderr := hopdagRun(t, "", "status", "--state", state, "-o", "json")
	require.Contains(t, []int{exitOK, exitInvalid, exitRunning, exitGone}, code, stderr)
	var st map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	return st
}

// loadStatus reads the status a run keeps in the state directory dir
// (nil: none yet).
func loadStatus(t *testing.T, dir string) *record.Status {
	t.Helper()
	f, err := state.OpenFile(dir)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Load(context.Background())
	require.NoError(t, err)
	return st
}

// waitPhase polls the status in dir until its phase is phase.
func waitPhase(t *testing.T, dir string, phase record.Phase) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var st *record.Status
	for time.Now().Before(deadline) {
		if _, err := os.Stat(dir); err == nil {
			if st = loadStatus(t, dir); st != nil && st.Phase == phase {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the status in %s never said %s; it says %+v", dir, phase, st)
}

func component(st map[string]any, hop int, name string) map[string]any {
	for _, c := range st["hops"].([]any)[hop].(map[string]any)["components"].([]any) {
		if c.(map[string]any)["name"] == name {
			return c.(map[string]any)
		}
	}
	return nil
}

// A run SIGKILLed in the middle of a command resumes: the killed command
// runs again, nothing that succeeded does, the files are those of v2.0,
// and no command ran twice at once.
func TestExecRunKilledAndResumed(t *testing.T) {
	u := newUpgrade(t)
	p := start(t, u.runArgs()...)
	waitFor(t, filepath.Join(u.out, "runs.log"), "start db 1.1")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)

	// Every line the killed run wrote parses.
	before := auditLines(t, u.log)
	require.NotEmpty(t, before)
	assert.Equal(t, "command", before[0].Kind)

	// Until its lease expires, nothing tells the killed run from a live
	// one: status says it is running. (Once the lease expired, status says
	// its coordinator is gone: TestStatusKilledRunIsGone.)
	code, out, _ := hopdagRun(t, "", "status", "--state", u.state)
	assert.Equal(t, exitRunning, code, "status of a killed run whose lease has not expired says still running:\n%s", out)
	assert.Regexp(t, `db +1\.0 +1\.1 +Running`, out)
	// config succeeded before db started; cache, beside it, may or may
	// not have been recorded when the kill came.
	done := 0
	for _, h := range statusJSON(t, u.state)["hops"].([]any) {
		for _, c := range h.(map[string]any)["components"].([]any) {
			if c.(map[string]any)["phase"] == "Succeeded" {
				done++
			}
		}
	}
	require.Contains(t, []int{1, 2}, done, "components recorded as succeeded by the killed run")

	// The killed run never released its lease: the resumed run waits for
	// it to expire, naming its holder, then takes the lock over.
	code, out, stderr := hopdagRun(t, "", u.runArgs()...)
	require.Equal(t, 0, code, "resumed run; stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.Regexp(t, `hopdag run: .* is locked by \S+/`+strconv.Itoa(p.cmd.Process.Pid)+` \(run\) \(lease \d+\) until \S+; waiting until \S+ `, stderr)
	assert.Regexp(t, `hopdag run: the lease of \S+/`+strconv.Itoa(p.cmd.Process.Pid)+` \(run\) expired; took the lock over`, stderr)
	assert.NotContains(t, stderr, "released the lock")
	assert.Contains(t, stderr, fmt.Sprintf("resuming from %s (Running, %d/6 done, run 1)", u.state, done))
	checkFinal(t, u.out)

	st := statusJSON(t, u.state)
	assert.Equal(t, "Succeeded", st["phase"])
	assert.EqualValues(t, 2, st["runs"])
	assert.EqualValues(t, 2, component(st, 0, "db")["attempts"], "db 1.1 ran again after the kill")
	assert.EqualValues(t, 1, component(st, 0, "config")["attempts"], "config 1.1 succeeded before the kill and did not run again")

	runs, err := os.ReadFile(filepath.Join(u.out, "runs.log"))
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(runs), "start config 1.1"), "config ran once:\n%s", runs)

	// The log holds both runs: the killed one's lines, then the resumed
	// one's, appended.
	after := auditLines(t, u.log)
	require.Greater(t, len(after), len(before))
	assert.Equal(t, before, after[:len(before)], "the resumed run appends to the audit log")
	commands := 0
	for _, r := range after {
		if r.Kind == "command" {
			commands++
		}
	}
	assert.Equal(t, 2, commands, "one command line per run")
}

// The audit log holds every event of a run, every lock transition, the
// command and the exit status, in order.
func TestAuditLogComplete(t *testing.T) {
	u := newUpgrade(t)
	code, out, stderr := invoke(u.runArgs()...)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	recs := auditLines(t, u.log)
	var kinds, events []string
	for _, r := range recs {
		kinds = append(kinds, r.Kind)
		if r.Kind == "event" || r.Kind == "lock" {
			events = append(events, r.Event+" "+r.Component+" "+r.Version)
		}
	}
	assert.Equal(t, "command", kinds[0])
	assert.Equal(t, "exit", kinds[len(kinds)-1])
	assert.EqualValues(t, 0, *recs[len(recs)-1].Status)
	for _, want := range []string{
		"Acquired  ", "PlanStarted  ", "HopStarted  ",
		"ComponentStarted config 1.1", "ComponentSucceeded config 1.1", "ComponentStarted cache 1.1", "ComponentSucceeded cache 1.1",
		"ComponentStarted db 1.1", "ComponentSucceeded db 1.1", "ComponentStarted app 1.1", "ComponentSucceeded app 1.1",
		"HopSucceeded  ", "ComponentStarted db 2.0", "ComponentSucceeded db 2.0", "ComponentStarted app 2.0", "ComponentSucceeded app 2.0",
		"PlanFinished  ", "Released  ",
	} {
		assert.Contains(t, events, want, "audit log misses %q", want)
	}
	// 18 events: the plan's 2, 2 per hop, 2 per component (6).
	n := 0
	for _, r := range recs {
		if r.Kind == "event" {
			n++
		}
	}
	assert.Equal(t, 2+2*2+2*6, n, "events in the audit log")
	assert.Equal(t, "Acquired  ", events[0], "the lock is taken first")
	assert.Equal(t, "Released  ", events[len(events)-1], "and released last")
}

// status --watch in another process follows a running upgrade to its end.
func TestStatusWatchFollowsARun(t *testing.T) {
	u := newUpgrade(t)
	run := start(t, u.runArgs()...)
	watch := start(t, "status", "--state", u.state, "--watch", "-o", "json", "--interval", "50ms")
	require.Equal(t, 0, run.wait(t), "run stderr:\n%s", run.stderr)
	require.Equal(t, 0, watch.wait(t), "status --watch exits 0 when the run succeeded; stderr:\n%s", watch.stderr)
	var phases []string
	for _, line := range strings.Split(strings.TrimSpace(watch.stdout.String()), "\n") {
		var st map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &st), "status --watch -o json prints one status a line: %q", line)
		phases = append(phases, st["phase"].(string))
	}
	require.GreaterOrEqual(t, len(phases), 2, "watch saw the run change: %v", phases)
	assert.Equal(t, "Succeeded", phases[len(phases)-1])
	assert.Contains(t, phases, "Running", "watch saw the run while it ran")
}

// SIGINT stops a run cleanly: the command sees SIGTERM, the status is
// saved as Cancelled, hopdag exits 130, and the run resumes.
func TestInterruptStopsCleanly(t *testing.T) {
	u := newUpgrade(t)
	p := start(t, u.runArgs()...)
	waitFor(t, filepath.Join(u.out, "runs.log"), "start db 1.1")
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	assert.Equal(t, 130, p.wait(t), "exit status of an interrupted run; stderr:\n%s", p.stderr)
	assert.Contains(t, p.stderr.String(), "interrupted by SIGINT")
	waitFor(t, filepath.Join(u.out, "runs.log"), "stopped db 1.1")

	code, out, _ := hopdagRun(t, "", "status", "--state", u.state)
	assert.Equal(t, 1, code, "status of a cancelled run:\n%s", out)
	assert.Contains(t, out, "status v1.0 -> v2.0: Cancelled")
	recs := auditLines(t, u.log)
	assert.Equal(t, "exit", recs[len(recs)-1].Kind)
	assert.EqualValues(t, 130, *recs[len(recs)-1].Status)

	code, out, stderr := hopdagRun(t, "", u.runArgs()...)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	checkFinal(t, u.out)
}

// abandon refuses while a run holds the lock, needs --force for a run
// that died, and then no run resumes it.
func TestAbandon(t *testing.T) {
	u := newUpgrade(t)
	p := start(t, u.runArgs()...)
	waitFor(t, filepath.Join(u.out, "runs.log"), "start db 1.1")
	code, _, stderr := hopdagRun(t, "", "abandon", "--state", u.state, "--yes", "--force")
	assert.Equal(t, 1, code, "abandon while a run holds the lock")
	assert.Contains(t, stderr, "a process holds the lock")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)
	// The guard stops the command of the killed run.
	waitFor(t, filepath.Join(u.out, "runs.log"), "stopped db 1.1")
	// The killed run's lease is held until it expires.
	waitLeaseExpired(t, u.state)

	code, _, stderr = hopdagRun(t, "", "abandon", "--state", u.state, "--yes")
	assert.Equal(t, 1, code, "abandon of a run that says Running")
	assert.Contains(t, stderr, "pass --force")

	code, _, stderr = hopdagRun(t, "no\n", "abandon", "--state", u.state, "--force")
	assert.Equal(t, 1, code, "abandon not confirmed")
	assert.Contains(t, stderr, "not confirmed: nothing changed")
	assert.Equal(t, "Running", statusJSON(t, u.state)["phase"])

	code, out, stderr := hopdagRun(t, "y\n", "abandon", "--state", u.state, "--force", "--reason", "rolled back by hand", "--log-file", u.log)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "It will never resume. [y/N]")
	assert.Contains(t, out, "abandoned v1.0 -> v2.0 (was Running): rolled back by hand")
	st := statusJSON(t, u.state)
	assert.Equal(t, "Abandoned", st["phase"])
	assert.Equal(t, "rolled back by hand", st["message"])
	recs := auditLines(t, u.log)
	assert.Equal(t, "abandon", recs[len(recs)-3].Kind, "the abandon is in the audit log")

	code, _, _ = hopdagRun(t, "", "status", "--state", u.state)
	assert.Equal(t, 1, code, "status of an abandoned run")
	code, _, stderr = hopdagRun(t, "", u.runArgs()...)
	assert.Equal(t, 1, code, "a run refuses to resume an abandoned status")
	assert.Contains(t, stderr, "abandoned")
	code, out, _ = hopdagRun(t, "", "abandon", "--state", u.state, "--yes")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "already abandoned")
}

// waitLeaseExpired runs abandon --yes until it no longer refuses for the
// lock of a killed run: its lease has expired (abandon does not wait for
// it, run does). Each refusal names the holder and its expiry.
func waitLeaseExpired(t *testing.T, state string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _, stderr := hopdagRun(t, "", "abandon", "--state", state, "--yes")
		if !strings.Contains(stderr, "a process holds the lock") {
			return
		}
		require.Equal(t, 1, code)
		require.Regexp(t, `state: locked by .* \(lease \d+\) until \S+;.*the lock is free once the lease has expired`, stderr)
		if time.Now().After(deadline) {
			t.Fatalf("the lock of the killed run is still held after 30s: %s", stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// --state etcd://host:port/prefix keeps the status in etcd: a run
// interrupted there resumes from it, and status reads it.
func TestEtcdState(t *testing.T) {
	u := newUpgrade(t)
	u.state = fmt.Sprintf("etcd://%s/hopdag/%s-%d", etcdEndpoint(t), t.Name(), time.Now().UnixNano()) // a fresh run per test run
	p := start(t, u.runArgs()...)
	waitFor(t, filepath.Join(u.out, "runs.log"), "start db 1.1")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 130, p.wait(t), "stderr:\n%s", p.stderr)

	code, out, stderr := hopdagRun(t, "", "status", "--state", u.state)
	assert.Equal(t, 1, code, "status of the interrupted run; stderr:\n%s", stderr)
	assert.Contains(t, out, "status v1.0 -> v2.0: Cancelled")

	code, out, stderr = hopdagRun(t, "", u.runArgs()...)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.Contains(t, stderr, "resuming from "+u.state+" (Cancelled")
	checkFinal(t, u.out)
	code, out, _ = hopdagRun(t, "", "status", "--state", u.state)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "status v1.0 -> v2.0: Succeeded, 6/6 components done, run 2")
}

// A run on etcd SIGKILLed mid-command resumes once etcd has expired the
// killed run's lease, which the resumed run says it waits for.
func TestEtcdKilledAndResumed(t *testing.T) {
	u := newUpgrade(t)
	u.state = fmt.Sprintf("etcd://%s/hopdag/%s-%d", etcdEndpoint(t), t.Name(), time.Now().UnixNano())
	p := start(t, u.runArgs()...)
	waitFor(t, filepath.Join(u.out, "runs.log"), "start db 1.1")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)

	code, out, stderr := hopdagRun(t, "", u.runArgs()...)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.Regexp(t, `is locked by \S+/`+strconv.Itoa(p.cmd.Process.Pid)+` \(run\) \(lease \d+\) until \S+; waiting until `, stderr)
	assert.Contains(t, stderr, "took the lock over")
	assert.Contains(t, stderr, "resuming from "+u.state+" (Running")
	checkFinal(t, u.out)
}

// The same with manifest components through the Dir applier: the run is
// killed in the command that precedes the manifest of hop 2, resumes, and
// the directory holds v2.0's objects, with the ConfigMap v1.1 added and
// v2.0 no longer renders pruned.
func TestDirApplierKilledAndResumed(t *testing.T) {
	u := newUpgrade(t)
	cluster := filepath.Join(t.TempDir(), "cluster")
	args := []string{"run", "testdata/dir-catalog", "--from", "v1.0", "--to", "v2.0", "--state", u.state,
		"--set", "out=" + u.out, "--log-file", u.log, "--apply-dir", cluster, "--lease-ttl", testLeaseTTL}
	p := start(t, args...)
	waitFor(t, filepath.Join(u.out, "runs.log"), "start migrate 2.0")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)
	cm := filepath.Join(cluster, "shop", "configmap_web-config.yaml")
	require.FileExists(t, cm, "hop 1 applied web 1.1's ConfigMap before the kill")
	auditLines(t, u.log)

	code, out, stderr := hopdagRun(t, "", args...)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.NoFileExists(t, cm, "web 2.0 pruned the ConfigMap it no longer renders")
	assert.FileExists(t, filepath.Join(cluster, "shop", "service_web.yaml"))
	assert.FileExists(t, filepath.Join(cluster, "_cluster", "namespace_shop.yaml"))
	dep, err := os.ReadFile(filepath.Join(cluster, "shop", "deployment.apps_web.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(dep), "registry.local/web:2.0")
	overlap, err := os.ReadFile(filepath.Join(u.out, "OVERLAP"))
	assert.True(t, os.IsNotExist(err), "a command ran twice at once: %s", overlap)
	st := statusJSON(t, u.state)
	assert.Equal(t, "Succeeded", st["phase"])
	assert.EqualValues(t, 2, component(st, 1, "migrate")["attempts"], "migrate 2.0 ran again after the kill")
	assert.EqualValues(t, 1, component(st, 0, "web")["attempts"], "web 1.1 was applied once")
}

// stubborn writes a one-component catalog whose command ignores SIGTERM
// and SIGINT and holds an flock on lock while it lives.
func stubborn(t *testing.T, lock, started string) string {
	t.Helper()
	return oneCommandCatalog(t, "stubborn", fmt.Sprintf(`exec 9>>%s; flock 9; trap '' TERM INT; echo started >>%s; sleep 30`, lock, started))
}

// oneCommandCatalog writes a catalog of one exec component, name, from
// v1.0 to v2.0, whose 2.0 runs script with sh, and returns its directory.
func oneCommandCatalog(t *testing.T, name, script string) string {
	t.Helper()
	dir := t.TempDir()
	catalog := fmt.Sprintf(`apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: v1}
spec: {version: v1.0, components: [{name: %[1]s, version: "1.0"}]}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: v2}
spec: {version: v2.0, components: [{name: %[1]s, version: "2.0"}]}
---
apiVersion: hopdag.io/v1alpha1
kind: UpgradePath
metadata: {name: paths}
spec: {rules: [{from: v1.0, to: v2.0}]}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: %[1]s-1}
spec: {name: %[1]s, version: "1.0", type: exec, command: {args: [sh, -c, "true"]}}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: %[1]s-2}
spec: {name: %[1]s, version: "2.0", type: exec, command: {args: [sh, -c, %[2]q]}}
`, name, script)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(catalog), 0o644))
	return dir
}

// unlocked reports whether nobody holds an flock on path.
func unlocked(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return true
}

func waitUnlocked(t *testing.T, path string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !unlocked(t, path) {
		if time.Now().After(deadline) {
			t.Fatalf("the command still holds %s after %s", path, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A command that ignores SIGTERM gets SIGKILL after --grace: the first
// interrupt still ends in a saved status and exit 130.
func TestInterruptGraceKillsStubbornCommand(t *testing.T) {
	d := t.TempDir()
	lock, started, state := filepath.Join(d, "lock"), filepath.Join(d, "started"), filepath.Join(d, "state")
	p := start(t, "run", stubborn(t, lock, started), "--from", "v1.0", "--to", "v2.0", "--state", state, "--grace", "500ms")
	waitFor(t, started, "started")
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	assert.Equal(t, 130, p.wait(t), "stderr:\n%s", p.stderr)
	assert.True(t, unlocked(t, lock), "the command was killed before hopdag exited")
	assert.Equal(t, "Cancelled", statusJSON(t, state)["phase"])
}

// A second interrupt kills hopdag at once, without waiting for the grace
// period, and its guard then kills the command.
func TestSecondInterruptKillsAtOnce(t *testing.T) {
	d := t.TempDir()
	lock, started, state := filepath.Join(d, "lock"), filepath.Join(d, "started"), filepath.Join(d, "state")
	p := start(t, "run", stubborn(t, lock, started), "--from", "v1.0", "--to", "v2.0", "--state", state, "--grace", "4s")
	waitFor(t, started, "started")
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	waitPhase(t, state, record.Running) // still stopping: the command ignores SIGTERM
	select {
	case <-p.done:
		t.Fatalf("hopdag exited on the first interrupt while its command runs; stderr:\n%s", p.stderr)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	begin := time.Now()
	assert.Equal(t, 130, p.wait(t), "stderr:\n%s", p.stderr)
	assert.Less(t, time.Since(begin), 3*time.Second, "the second interrupt kills at once, not after the grace period (4s)")
	assert.Contains(t, p.stderr.String(), "second SIGINT: exiting now")
	// The guard sees hopdag gone: SIGTERM (ignored), its grace, SIGKILL,
	// to the whole group: the command's sleep 30, which the kernel's
	// parent-death signal (sent to the guard alone) does not reach, is
	// gone well before it would have ended by itself.
	waitUnlocked(t, lock, 4*time.Second+10*time.Second)
}

// A run finds the lock of a live run: it waits only until it sees that
// run refresh its lease, then fails naming it. A lease longer than it
// would wait for (the holder's --lease-ttl above its own) fails at once,
// with the time to run again.
func TestRunRefusesALiveHolder(t *testing.T) {
	d := t.TempDir()
	lock, started, state := filepath.Join(d, "lock"), filepath.Join(d, "started"), filepath.Join(d, "state")
	catalog := stubborn(t, lock, started)
	p := start(t, "run", catalog, "--from", "v1.0", "--to", "v2.0", "--state", state, "--lease-ttl", testLeaseTTL, "--grace", "100ms")
	waitFor(t, started, "started")
	begin := time.Now()
	code, _, stderr := hopdagRun(t, "", "run", catalog, "--from", "v1.0", "--to", "v2.0", "--state", state, "--lease-ttl", testLeaseTTL)
	assert.Equal(t, 1, code, "stderr:\n%s", stderr)
	assert.Contains(t, stderr, "waiting until")
	assert.Regexp(t, `locked by \S+/`+strconv.Itoa(p.cmd.Process.Pid)+` \(run\) .*: it refreshed its lease while this hopdag waited, so it is running`, stderr)
	// The holder refreshes every 5s/3; waiting for the lease to run out
	// would take 5.5s (its TTL and the skew allowance).
	assert.Less(t, time.Since(begin), 5*time.Second, "it stopped waiting at the holder's refresh, before the lease could expire")

	state2 := filepath.Join(d, "state2")
	long := start(t, "run", catalog, "--from", "v1.0", "--to", "v2.0", "--state", state2, "--lease-ttl", "1m", "--grace", "100ms")
	waitPhase(t, state2, record.Running)
	code, _, stderr = hopdagRun(t, "", "run", catalog, "--from", "v1.0", "--to", "v2.0", "--state", state2, "--lease-ttl", testLeaseTTL)
	assert.Equal(t, 1, code, "stderr:\n%s", stderr)
	assert.Regexp(t, `locked by \S+/`+strconv.Itoa(long.cmd.Process.Pid)+` \(run\) .*more than this hopdag waits for \(--lease-ttl 5s plus 500ms\); run again after `, stderr)
	assert.NotContains(t, stderr, "waiting until")
}
