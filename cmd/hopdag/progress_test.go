package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/runner"
)

// run with stdout and stderr on pipes: no escape sequence and no \r
// anywhere, only the final status on stdout, the plan and the progress on
// stderr.
func TestRunOnPipes(t *testing.T) {
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	errR, errW, err := os.Pipe()
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	var wg sync.WaitGroup
	wg.Go(func() { io.Copy(&out, outR) })
	wg.Go(func() { io.Copy(&errOut, errR) })
	code := runWith(context.Background(), env{stdin: strings.NewReader(""), stdout: outW, stderr: errW,
		getenv: func(string) string { return "xterm-256color" }},
		[]string{"run", "-", "--from", "v26.06-rc.2", "--to", "v26.09", "--simulate", "--speed", "20000"})
	outW.Close()
	errW.Close()
	wg.Wait()
	require.Equal(t, exitOK, code, errOut.String())
	for name, s := range map[string]string{"stdout": out.String(), "stderr": errOut.String()} {
		assert.NotContains(t, s, "\x1b", "%s holds an escape sequence", name)
		assert.NotContains(t, s, "\r", "%s holds a carriage return", name)
	}
	assert.True(t, strings.HasPrefix(out.String(), "status v26.06-rc.2 -> v26.09: Succeeded, 19/19 components done"), "stdout is the final status:\n%s", out.String())
	assert.NotContains(t, out.String(), "plan v26.06-rc.2", "the plan is not data of run")
	assert.NotContains(t, out.String(), "[ ", "the progress is not data of run")
	assert.True(t, strings.HasPrefix(errOut.String(), "plan v26.06-rc.2 -> v26.09: 3 hops"), errOut.String())
	assert.Contains(t, errOut.String(), "] plan succeeded")
}

// The progress bar and its \r are for a terminal whose TERM is not dumb.
func TestProgressOnlyOnASmartTerminal(t *testing.T) {
	for _, tt := range []struct {
		name     string
		terminal bool
		term     string
		bar      bool
	}{
		{"terminal", true, "xterm", true},
		{"dumb terminal", true, "dumb", false},
		{"pipe", false, "xterm", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			c := &cli{env: env{stderr: &stderr, terminal: func() bool { return tt.terminal }, getenv: func(string) string { return tt.term }}}
			assert.Equal(t, tt.bar, c.stderrTerminal())
		})
	}
}

// Off a terminal, a run silent for 30s while components run says which
// and for how long, once per 30s of silence ("still running: etcd,
// 2m0s"); the clock is the test's.
func TestHeartbeat(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	h := newHeartbeat(&b, func() time.Time { return now })
	h.Observe(runner.Event{Type: runner.ComponentStarted, Component: "etcd"})
	now = now.Add(29 * time.Second)
	h.beat()
	assert.Empty(t, b.String(), "29s of silence is not yet worth a line")
	now = now.Add(91 * time.Second)
	h.beat()
	assert.Equal(t, "still running: etcd, 2m0s\n", b.String())
	now = now.Add(10 * time.Second)
	h.beat()
	assert.Equal(t, "still running: etcd, 2m0s\n", b.String(), "the heartbeat itself counts as output")
	h.Observe(runner.Event{Type: runner.ComponentStarted, Component: "db"})
	now = now.Add(30 * time.Second)
	h.beat()
	assert.Equal(t, "still running: etcd, 2m0s\nstill running: etcd, 2m40s; db, 30s\n", b.String(), "the longest running first")
	h.Observe(runner.Event{Type: runner.ComponentSucceeded, Component: "etcd"})
	h.Observe(runner.Event{Type: runner.ComponentFailed, Component: "db"})
	now = now.Add(time.Hour)
	b.Reset()
	h.beat()
	assert.Empty(t, b.String(), "nothing runs: nothing to say")

	// every beats on each tick until done.
	tick, done := make(chan time.Time), make(chan struct{})
	h.Observe(runner.Event{Type: runner.ComponentStarted, Component: "etcd"})
	now = now.Add(time.Minute)
	finished := make(chan struct{})
	go func() { h.every(tick, done); close(finished) }()
	tick <- now
	close(done)
	<-finished
	assert.Equal(t, "still running: etcd, 1m0s\n", b.String())
}

// --log-format json writes durations as Go duration strings, as the
// documents do, not as nanoseconds.
func TestJSONLogDurations(t *testing.T) {
	code, _, stderr := invoke("run", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--simulate", "--speed", "20000", "--log-format", "json")
	require.Equal(t, exitOK, code, stderr)
	n := 0
	for line := range strings.Lines(stderr) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if d, ok := rec["duration"]; ok {
			n++
			s, isString := d.(string)
			require.True(t, isString, "duration %v is a string: %s", d, line)
			_, err := time.ParseDuration(s)
			assert.NoError(t, err, line)
		}
	}
	assert.NotZero(t, n, "some record has a duration")
}

// The error texts, each said once, as the command line shows them.
func TestErrorsSaidOnce(t *testing.T) {
	// A scripted failure rolled back: the failed row's CODE is the
	// failure's, calico (cancelled by it, then rolled back) says so, and
	// the component is named once on the progress line.
	code, out, stderr := invoke("run", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--simulate", "--speed", "20000",
		"--fail", "kubernetes-worker", "--on-failure", "rollback")
	require.Equal(t, exitInvalid, code, stderr)
	assert.Contains(t, stderr, "FAILED  kubernetes-worker v1.33.3: simulate: scripted failure (--fail)\n")
	assert.Regexp(t, `kubernetes-worker +v1\.33\.2 +v1\.33\.3 +RolledBack +1 +\S+ +COMPONENT_FAILED +simulate: scripted failure \(--fail\)\n`, out)
	assert.Regexp(t, `calico +v3\.29\.3 +v3\.29\.4 +RolledBack +1 +\S+ +- +rolled back to v3\.29\.3\n`, out)
	assert.NotContains(t, out+stderr, "context canceled")
	assert.NotContains(t, out+stderr, "kubernetes-worker v1.33.3: kubernetes-worker")
}

// A ComponentWaiting event prints no line, so it does not break the
// silence the heartbeat measures.
func TestHeartbeatWaiting(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	h := newHeartbeat(&b, func() time.Time { return now })
	h.Observe(runner.Event{Type: runner.ComponentStarted, Component: "etcd"})
	now = now.Add(20 * time.Second)
	h.Observe(runner.Event{Type: runner.ComponentWaiting, Component: "etcd", Reason: "waiting for StatefulSet kube-system/etcd: 1 of 3 ready"})
	now = now.Add(11 * time.Second)
	h.beat()
	assert.Equal(t, "still running: etcd, 31s\n", b.String(), "31s without a line, a ComponentWaiting event in between")
}

// On a terminal the progress bar is the last line, and every other line
// of the run (a command's output, a log line) is written above it: no
// line of stderr starts after the bar, whatever the order in which the
// components' output and the events come. With --log-format json there is
// no bar: every line is a record.
func TestOutputAboveTheBar(t *testing.T) {
	dir := t.TempDir()
	var cat strings.Builder
	for _, v := range []string{"1.0", "2.0"} {
		fmt.Fprintf(&cat, "apiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata: {name: r%s}\nspec: {version: v%s, components: [{name: a, version: %q}, {name: b, version: %q}]}\n---\n", v, v, v, v)
		for _, name := range []string{"a", "b"} {
			fmt.Fprintf(&cat, "apiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata: {name: %s-%s}\nspec: {name: %s, version: %q, type: exec, command: {args: [sh, -c, 'echo one; sleep 0.1; echo two >&2; sleep 0.1; echo three']}}\n---\n", name, v, name, v)
		}
	}
	cat.WriteString("apiVersion: hopdag.io/v1alpha1\nkind: UpgradePath\nmetadata: {name: p}\nspec: {rules: [{from: v1.0, to: v2.0}]}\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(cat.String()), 0o644))
	args := func(extra ...string) []string {
		return append([]string{"run", dir, "--from", "v1.0", "--to", "v2.0"}, extra...)
	}
	var out, errOut bytes.Buffer
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, terminal: func() bool { return true }, getenv: func(string) string { return "xterm" }}
	code := runWith(context.Background(), e, args())
	require.Equal(t, exitOK, code, errOut.String())
	s := errOut.String()
	require.Contains(t, s, " | ", "the commands' output is on stderr")
	require.Contains(t, s, "] ", "and the bar")
	nothingOnTheBar(t, s)

	// An interrupt while the bar is drawn: its notice goes above the bar
	// too.
	errOut.Reset()
	signals := make(chan os.Signal, 1)
	ie := e
	ie.signals = signals
	ie.stderr = &onFirst{w: &errOut, want: " | ", do: func() { signals <- os.Interrupt }}
	code = runWith(context.Background(), ie, args())
	require.Equal(t, exitInterrupted, code, errOut.String())
	s = errOut.String()
	require.Contains(t, s, "hopdag run: SIGINT: ")
	nothingOnTheBar(t, s)

	errOut.Reset()
	code = runWith(context.Background(), e, args("--log-format", "json"))
	require.Equal(t, exitOK, code, errOut.String())
	for line := range strings.Lines(errOut.String()) {
		assert.True(t, json.Valid([]byte(line)), "a JSON record: %q", line)
		assert.NotContains(t, line, `\r`, "no bar in a record")
	}
}

// onFirst is a writer that calls do once, after the first write that
// contains want.
type onFirst struct {
	mu   sync.Mutex
	w    io.Writer
	want string
	do   func()
	done bool
}

func (o *onFirst) Write(p []byte) (int, error) {
	o.mu.Lock()
	n, err := o.w.Write(p)
	fire := !o.done && strings.Contains(string(p), o.want)
	o.done = o.done || fire
	o.mu.Unlock()
	if fire {
		o.do()
	}
	return n, err
}

// nothingOnTheBar checks that no line of s, as a terminal shows it (what
// follows its last \r\033[K), was written after the progress bar, on its
// line.
func nothingOnTheBar(t *testing.T, s string) {
	t.Helper()
	for _, line := range strings.Split(s, "\n") {
		if i := strings.LastIndex(line, "\r\x1b[K"); i >= 0 {
			line = line[i+len("\r\x1b[K"):]
		}
		assert.False(t, strings.HasPrefix(line, "[#") || strings.HasPrefix(line, "[."), "a line written after the bar, on its line: %q", line)
	}
}
