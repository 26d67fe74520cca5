package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
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
)

// Every command's -h says what it does, shows one example and lists each
// of its flags.
func TestHelpOfEveryCommand(t *testing.T) {
	for name, cmd := range commands {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := invoke(name, "-h")
			assert.Equal(t, 0, code)
			assert.Contains(t, stderr, cmd.summary)
			assert.Contains(t, stderr, "Example:\n  "+cmd.example)
			newCLI(env{}, name, cmd).fs.VisitAll(func(f *flag.Flag) {
				assert.Regexp(t, `(?m)^  -`+f.Name+`( |$)`, stderr, "hopdag %s -h lists -%s", name, f.Name)
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

func TestCompletionVersions(t *testing.T) {
	code, out, _ := invoke("completion", "versions", execCatalog)
	assert.Equal(t, 0, code)
	assert.Equal(t, "v1.0\nv1.1\nv2.0\n", out)
	code, out, _ = invoke("completion", "versions", "testdata/nope")
	assert.Equal(t, 0, code, "a catalog that does not load completes to nothing")
	assert.Empty(t, out)
}

// The bash script completes commands, flags and versions, run by bash.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin := binary(t)
	script := filepath.Join(t.TempDir(), "hopdag.bash")
	code, out, _ := invoke("completion", "bash")
	require.Equal(t, 0, code)
	require.NoError(t, os.WriteFile(script, []byte(out), 0o644))
	complete := func(words ...string) string {
		t.Helper()
		line := "source " + script + "; COMP_WORDS=(" + bin
		for _, w := range words {
			line += " '" + w + "'"
		}
		line += "); COMP_CWORD=" + strconv.Itoa(len(words)) + "; _hopdag; echo \"${COMPREPLY[*]}\""
		got, err := exec.Command(bash, "-c", line).CombinedOutput()
		require.NoError(t, err, "%s", got)
		return strings.TrimSpace(string(got))
	}
	assert.Equal(t, "status", complete("st"))
	assert.Equal(t, "--set --simulate --speed --state", complete("run", execCatalog, "--s"))
	assert.Equal(t, "v1.0 v1.1", complete("plan", execCatalog, "--from", "v1"))
	assert.Equal(t, "bash", complete("completion", "b"))
	// The values of -o, per command, and of the other flags that take one
	// of a few words.
	assert.Equal(t, "table json yaml", complete("status", "--state", "x", "-o", ""))
	assert.Equal(t, "text json yaml", complete("plan", execCatalog, "-o", ""))
	assert.Equal(t, "json", complete("graph", execCatalog, "-o", "j"))
	assert.Equal(t, "eager batch", complete("run", execCatalog, "--mode", ""))
	assert.Equal(t, "rollback rollback-run", complete("run", execCatalog, "--on-failure", "r"))
	assert.Equal(t, "text json", complete("run", execCatalog, "--log-format", ""))
	assert.Equal(t, "bundle", complete("bun"))
	assert.Equal(t, "pull push", complete("bundle", "pu"))
	// A catalog of several tracks: TRACK=VERSION, as --from takes it there.
	two := complete("plan", "../../testdata/two-track", "--from", "kubernetes=v1.3")
	assert.Contains(t, two, "kubernetes=v1.32.0")
	assert.NotContains(t, two, "platform=")
	// bash splits a word at "=" (COMP_WORDBREAKS): what it completes is
	// what follows the last "=", so the versions come without TRACK=.
	assert.Equal(t, "13.01.0 13.01.1 13.01.2", complete("plan", "../../testdata/two-track", "--from", "platform", "=", "13"))
	assert.Equal(t, "13.01.0 13.01.1 13.01.2 27.03.0 27.03.1", complete("run", "../../testdata/two-track", "--to", "platform", "="))
	assert.Equal(t, "v1.33.0 v1.33.1", complete("plan", "../../testdata/two-track", "--from", "platform", "=", "13.01.0,kubernetes", "=", "v1.33"))
	// bundle's subcommands complete their own flags.
	assert.Equal(t, "--docker-config --plain-http --sign-cert --sign-key", complete("bundle", "push", "--"))
	assert.Equal(t, "--verify --verify-key", complete("bundle", "pull", "--ver"))
	assert.Empty(t, complete("bundle", "keygen", "--"))

	// The words are those the flags' help lists.
	for name, words := range outputFormats {
		usage := newCLI(env{}, name, commands[name]).fs.Lookup("o").Usage
		for _, w := range words {
			assert.Contains(t, usage, w, "hopdag %s -o's help lists %s", name, w)
		}
	}
	for _, name := range []string{"run", "plan"} {
		fs := newCLI(env{}, name, commands[name]).fs
		for flag, words := range wordFlags {
			if f := fs.Lookup(flag); f != nil {
				for _, w := range words {
					assert.Contains(t, f.Usage, w, "hopdag %s --%s's help lists %s", name, flag, w)
				}
			}
		}
	}

	code, out, _ = invoke("completion", "zsh")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "bashcompinit")
	assert.Contains(t, out, "complete -F _hopdag hopdag")
}

// The zsh script works from $fpath, as completion -h shows
// (hopdag completion zsh > "${fpath[1]}/_hopdag"): its first line is
// #compdef hopdag, so compinit binds hopdag to it; and sourced.
func TestCompletionZsh(t *testing.T) {
	code, out, _ := invoke("completion", "zsh")
	require.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "#compdef hopdag\n"), "the first line is #compdef hopdag:\n%s", out)
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("no zsh")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "_hopdag"), []byte(out), 0o644))
	for _, tt := range []struct{ name, script, want string }{
		{"fpath", "fpath=(" + dir + " $fpath); autoload -U compinit; compinit -u -d " + dir + "/zcompdump; print -r -- $_comps[hopdag]", "_hopdag"},
		{"sourced", "autoload -U compinit; compinit -u -d " + dir + "/zcompdump2; source " + dir + "/_hopdag; print -r -- $_comps[hopdag]", "_bash_complete -F _hopdag"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := exec.Command(zsh, "-f", "-c", tt.script).CombinedOutput()
			require.NoError(t, err, "%s", got)
			assert.Equal(t, tt.want, strings.TrimSpace(string(got)))
		})
	}
}

// The bundle flags (--verify-key, --cache, ...) are those of the commands
// that take a catalog, which may be a bundle; the others neither list nor
// take them.
func TestBundleFlagsOnlyWithACatalog(t *testing.T) {
	bundleFlags := []string{"verify-key", "verify", "cache", "cache-fallback", "plain-http", "docker-config"}
	for name, cmd := range commands {
		t.Run(name, func(t *testing.T) {
			_, _, help := invoke(name, "-h")
			fs := newCLI(env{}, name, cmd).fs
			for _, f := range bundleFlags {
				if cmd.noDir {
					assert.Nil(t, fs.Lookup(f), "hopdag %s takes no catalog, so no --%s", name, f)
					assert.NotRegexp(t, `(?m)^  -`+f+`( |$)`, help, "hopdag %s -h lists -%s", name, f)
				} else {
					assert.NotNil(t, fs.Lookup(f), "hopdag %s takes a catalog, which may be a bundle: --%s", name, f)
				}
			}
		})
	}
	code, _, stderr := invoke("status", "--state", t.TempDir(), "--cache", "x")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "flag provided but not defined: -cache")
}
