package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every command's -h says what it does, shows one example and lists each
// of its flags.
func TestHelpOfEveryCommand(t *testing.T) {
	for name, cmd := range commands {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := invoke(name, "-h")
			assert.Equal(t, 0, code)
			assert.Empty(t, stderr, "help goes to stdout")
			assert.Contains(t, stdout, cmd.summary)
			assert.Contains(t, stdout, "Examples:\n  "+cmd.example)
			newCLI(env{}, name, cmd).fs.VisitAll(func(f *pflag.Flag) {
				assert.Regexp(t, `(?m)^  (-., )?\s*--`+f.Name+`( |$)`, stdout, "hopdag %s -h lists --%s", name, f.Name)
			})
		})
	}
}

// The first interrupt cancels the command; a second one within the grace
// period ends the process with exitInterrupted.
func TestSecondInterruptKills(t *testing.T) {
	signals := make(chan os.Signal, 2)
	exited := make(chan int, 1)
	var stderr bytes.Buffer
	c := &cli{env: env{stderr: &stderr, signals: signals, exit: func(code int) { exited <- code }}, name: "run"}
	c.executing.Store(true)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan struct{})
	go c.watchSignals(cancel, done)
	signals <- os.Interrupt
	<-ctx.Done()
	assert.Equal(t, os.Interrupt, interruptedBy(ctx), "the first interrupt cancels with its signal as the cause")
	select {
	case code := <-exited:
		t.Fatalf("exited (%d) on the first interrupt", code)
	case <-time.After(50 * time.Millisecond):
	}
	signals <- os.Interrupt
	select {
	case code := <-exited:
		assert.Equal(t, exitInterrupted, code)
	case <-time.After(5 * time.Second):
		t.Fatal("a second interrupt did not kill")
	}
	close(done)
	assert.Contains(t, stderr.String(), "interrupt again within 15s to kill at once")
	assert.Contains(t, stderr.String(), "second SIGINT: exiting now")
}

// A command that ends after the first interrupt is not killed.
func TestInterruptThenCleanExit(t *testing.T) {
	signals := make(chan os.Signal, 2)
	c := &cli{env: env{stderr: new(bytes.Buffer), signals: signals, exit: func(code int) { t.Errorf("exit(%d) after a clean stop", code) }}, name: "run"}
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() { c.watchSignals(cancel, done); close(stopped) }()
	signals <- syscall.SIGTERM
	<-ctx.Done()
	close(done)
	<-stopped
}

// --log-format json writes the events to stderr as JSON lines.
func TestLogFormatJSON(t *testing.T) {
	u := newUpgrade(t)
	code, _, stderr := invoke(append(u.runArgs(), "--log-format", "json")...)
	require.Equal(t, 0, code, stderr)
	var n int
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		assert.True(t, strings.HasPrefix(line, "{") && strings.HasSuffix(line, "}"), "stderr line is not JSON: %q", line)
		if strings.Contains(line, `"msg":"ComponentSucceeded"`) {
			n++
		}
	}
	assert.Equal(t, 6, n, "one ComponentSucceeded record per component")
}

// With --log-format json every line on stderr is JSON: a command's
// output (a record per line, naming the component and the stream), the
// notes of hopdag run, and the final error (level ERROR); also for a
// refusal before anything runs.
func TestLogFormatJSONEveryLine(t *testing.T) {
	dir := oneCommandCatalog(t, "app", "echo to stdout; echo to stderr >&2; exit 3")
	records := func(stderr string) []map[string]any {
		t.Helper()
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
			var r map[string]any
			if assert.NoError(t, json.Unmarshal([]byte(line), &r), "stderr line is not JSON: %q", line) {
				out = append(out, r)
			}
		}
		return out
	}
	find := func(recs []map[string]any, match func(map[string]any) bool) map[string]any {
		for _, r := range recs {
			if match(r) {
				return r
			}
		}
		return nil
	}

	code, _, stderr := invoke("run", dir, "--from", "v1.0", "--to", "v2.0", "--log-format", "json", "--state", filepath.Join(t.TempDir(), "state"))
	assert.Equal(t, exitInvalid, code, stderr)
	recs := records(stderr)
	for _, stream := range []string{"stdout", "stderr"} {
		r := find(recs, func(r map[string]any) bool { return r["msg"] == "output" && r["stream"] == stream })
		if assert.NotNil(t, r, "a record of the command's %s:\n%s", stream, stderr) {
			assert.Equal(t, "app", r["component"])
			assert.Equal(t, "to "+stream, r["line"])
		}
	}
	last := recs[len(recs)-1]
	assert.Equal(t, "ERROR", last["level"], "the final error is a record of level ERROR:\n%s", stderr)
	assert.Contains(t, last["msg"], "v1.0 -> v2.0 failed")

	code, _, stderr = invoke("run", execCatalog, "--from", "v1.0", "--to", "v2.0", "--log-format", "json")
	assert.Equal(t, exitInvalid, code, stderr)
	recs = records(stderr)
	require.NotEmpty(t, recs)
	assert.Equal(t, "ERROR", recs[len(recs)-1]["level"])
	assert.Contains(t, recs[len(recs)-1]["msg"], "give it with --set out=VALUE")

	code, _, stderr = invoke("run", execCatalog, "--from", "v1.0", "--to", "v2.0", "--log-format", "json", "--mode", "sideways")
	assert.Equal(t, exitUsage, code, stderr)
	recs = records(stderr)
	require.Len(t, recs, 1, "a usage error is one record, without the flags' help:\n%s", stderr)
	assert.Contains(t, recs[0]["msg"], "--mode must be eager or batch")
}

// The bundle flags (--verify-key, --cache, ...) are those of the commands
// that take a catalog, which may be a bundle; the others neither list nor
// take them.
func TestBundleFlagsOnlyWithACatalog(t *testing.T) {
	bundleFlags := []string{"verify-key", "verify", "cache", "cache-fallback", "plain-http", "docker-config"}
	for name, cmd := range commands {
		t.Run(name, func(t *testing.T) {
			_, help, _ := invoke(name, "-h")
			fs := newCLI(env{}, name, cmd).fs
			for _, f := range bundleFlags {
				if cmd.noDir {
					assert.Nil(t, fs.Lookup(f), "hopdag %s takes no catalog, so no --%s", name, f)
					assert.NotRegexp(t, `(?m)^\s+--`+f+`( |$)`, help, "hopdag %s -h lists --%s", name, f)
				} else {
					assert.NotNil(t, fs.Lookup(f), "hopdag %s takes a catalog, which may be a bundle: --%s", name, f)
				}
			}
		})
	}
	code, _, stderr := invoke("status", "--state", t.TempDir(), "--cache", "x")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "hopdag status: unknown flag: --cache\nRun 'hopdag status --help' for usage.\n")
}
