package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// outputCatalog writes a catalog of one exec component, web, whose v2
// runs script (sh -c) with the given spec.timeout ("" for none).
func outputCatalog(t *testing.T, script, timeout string) string {
	t.Helper()
	dir := t.TempDir()
	spec := func(version, script string) string {
		s := "apiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata: {name: web-" + version + "}\nspec:\n  name: web\n  version: \"" + version + ".0\"\n  type: exec\n" +
			"  command:\n    args: [sh, -c, " + quoteYAML(script) + "]\n"
		if timeout != "" && version == "2" {
			s += "  timeout: " + timeout + "\n"
		}
		return s
	}
	release := func(v string) string {
		return "apiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata: {name: r-v" + v + "}\nspec:\n  version: v" + v + ".0\n  components:\n    - {name: web, version: \"" + v + ".0\"}\n"
	}
	const paths = "apiVersion: hopdag.io/v1alpha1\nkind: UpgradePath\nmetadata: {name: p}\nspec:\n  rules:\n    - {from: v1.0, to: v2.0}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "components.yaml"), []byte(spec("1", "true")+"---\n"+spec("2", script)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "releases.yaml"), []byte(release("1")+"---\n"+release("2")+"---\n"+paths), 0o644))
	return dir
}

func quoteYAML(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// A command's output is streamed to stderr line by line under its
// component's name, and recorded in the audit log; --quiet keeps it off
// stderr. The table prints a failure's stderr lines in full.
func TestExecOutput(t *testing.T) {
	cat := outputCatalog(t, "echo doing stuff; echo 'E: disk full on /var' >&2; printf 'no newline'; exit 3", "")
	tests := []struct {
		name   string
		quiet  bool
		stderr []string
		not    []string
	}{
		{"streamed", false, []string{"  web | doing stuff\n", "  web | E: disk full on /var\n", "  web | no newline\n"}, nil},
		{"quiet", true, nil, []string{"web |", "doing stuff"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "audit.log")
			args := []string{"run", cat, "--from", "v1.0", "--to", "v2.0", "--log-file", log}
			if tt.quiet {
				args = append(args, "--quiet")
			}
			code, out, stderr := invoke(args...)
			require.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
			for _, w := range tt.stderr {
				assert.Contains(t, stderr, w)
			}
			for _, w := range tt.not {
				assert.NotContains(t, stderr, w)
			}
			assert.Regexp(t, `(?m)^last failure: hop 1 web 2.0: COMPONENT_FAILED: .*sh: exit code 3; last lines of stderr:\n {4}E: disk full on /var$`, out)
			assert.Regexp(t, `(?m)^message: .*last lines of stderr:\nHOP `, out,
				"the message says what the last failure says: its lines are printed once, under the last failure")
			var lines []string
			for _, r := range auditLines(t, log) {
				if r.Kind == "output" {
					assert.Equal(t, "web", r.Component)
					assert.Equal(t, "2.0", r.Version)
					assert.Equal(t, 1, r.Attempt)
					lines = append(lines, r.Event+": "+r.Reason)
				}
			}
			assert.ElementsMatch(t, []string{"stdout: doing stuff", "stderr: E: disk full on /var", "stdout: no newline"}, lines,
				"the audit log has the command's output, with or without --quiet")
		})
	}
}

// A command stopped by its spec.timeout says so, with the timeout and
// where it is set (the runner's words). The signal that stopped it is
// named when its guard process died of it: one that had not yet set its
// handlers when the timeout came (the guard is this test binary, slow to
// start on a loaded machine).
func TestExecOutputTimeout(t *testing.T) {
	cat := outputCatalog(t, "echo waiting; exec sleep 30", "300ms")
	code, out, stderr := invoke("run", cat, "--from", "v1.0", "--to", "v2.0", "--grace", "1s")
	require.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.Contains(t, stderr, "  web | waiting\n")
	assert.Regexp(t, `(?m)stopped: timed out after 300ms \(spec\.timeout of web@2\.0, \S*components\.yaml:\d+\); raise it in that ComponentVersion if web needs longer( \(killed by signal [a-z ]+\))?$`, out)
	assert.NotContains(t, out, "context deadline exceeded")
}

// lineWriter cuts what it is given into lines, each written once with
// the prefix; a line longer than the bound is cut, and a last line without
// a newline is written on flush.
func TestLineWriter(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
		lines  []string
	}{
		{"lines across writes", []string{"a\nb", "c\n\nd"}, "  x | a\n  x | bc\n  x | \n  x | d\n", []string{"a", "bc", "", "d"}},
		{"carriage returns dropped", []string{"a\r\n"}, "  x | a\n", []string{"a"}},
		{"long line cut", []string{strings.Repeat("y", maxOutputLine+5) + "\n"},
			"  x | " + strings.Repeat("y", maxOutputLine) + " …(cut)\n", []string{strings.Repeat("y", maxOutputLine) + " …(cut)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			var got []string
			s := &outputSink{w: &b}
			w := s.writer("x", "stdout", func(line string) { got = append(got, line) })
			for _, p := range tt.writes {
				n, err := w.Write([]byte(p))
				require.NoError(t, err)
				assert.Equal(t, len(p), n)
			}
			w.flush()
			assert.Equal(t, tt.want, b.String())
			assert.Equal(t, tt.lines, got)
		})
	}
}
