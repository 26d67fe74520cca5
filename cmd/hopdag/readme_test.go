package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/cli.md's real run is what the command does: its command lines run,
// and its status table is the status they leave (durations aside; rows
// of components that start together may come in either order).
func TestReadmeExecRunIsCurrent(t *testing.T) {
	readme, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	const start, end = "<!-- exec-run:start -->\n", "<!-- exec-run:end -->"
	i, j := strings.Index(string(readme), start), strings.Index(string(readme), end)
	require.True(t, i >= 0 && j > i, "docs/cli.md must hold the real run between %q and %q", start, end)
	block := string(readme)[i+len(start) : j]
	assert.Contains(t, block, "bin/hopdag run cmd/hopdag/testdata/exec-catalog --from v1.0 --to v2.0 \\\n      --state /tmp/hopdag-demo/state --set out=/tmp/hopdag-demo/out --log-file /tmp/hopdag-demo/audit.log\n")
	assert.Contains(t, block, "bin/hopdag status --state /tmp/hopdag-demo/state\n")
	want := block[strings.Index(block, "    status v1.0"):]

	u := newUpgrade(t)
	code, out, stderr := invoke(u.runArgs()...)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	code, got, stderr := invoke("status", "--state", u.state)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, rowsOf(got), rowsOf(strings.ReplaceAll(want, "\n    ", "\n")[4:]),
		"docs/cli.md's status table is stale: paste the output of the commands above it (-want +got)")
}

var durationColumn = regexp.MustCompile(`\s+\d+(\.\d+)?(ms|s)\s+`)

// rowsOf is a table's lines with durations masked, sorted.
func rowsOf(table string) []string {
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		rows = append(rows, strings.Join(strings.Fields(durationColumn.ReplaceAllString(line, " D ")), " "))
	}
	slices.Sort(rows)
	return rows
}

// The go run command lines of the README and docs/ work from the
// repository root: cmd/hopdag is its own module, so they run in it (go run
// -C cmd/hopdag .) with paths relative to it, as this test (whose
// directory is cmd/hopdag) runs them; --state forms name kube:// with
// etcd://.
func TestReadmeGoRunLines(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	const prefix = "go run -C cmd/hopdag . "
	n := 0
	for _, name := range append([]string{"../../README.md"}, docs...) {
		text, err := os.ReadFile(name)
		require.NoError(t, err)
		assert.NotContains(t, string(text), "go run ./cmd/hopdag", "%s: cmd/hopdag is a module of its own: use go run -C cmd/hopdag .", name)
		for line := range strings.Lines(string(text)) {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, prefix) {
				continue
			}
			n++
			code, _, stderr := invoke(strings.Fields(strings.TrimPrefix(line, prefix))...)
			assert.Equal(t, 0, code, "%s: %s\n%s", name, line, stderr)
		}
	}
	assert.NotZero(t, n, "the README or docs/ have a go run -C cmd/hopdag line")
	cli, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	assert.Contains(t, string(cli), "`--state` is a directory, `etcd://host:port/prefix` or `kube://namespace/name`")
}

// Every --state flag and the top-level help name kube:// with etcd://.
func TestStateFormsInHelp(t *testing.T) {
	for _, name := range []string{"run", "status", "abandon", "approve"} {
		_, stdout, _ := invoke(name, "-h")
		assert.Contains(t, stdout, "kube://namespace/name", "hopdag %s -h", name)
	}
	_, stdout, _ := invoke("-h")
	assert.Contains(t, stdout, "kube://namespace/name")
}

// docs/cli.md's exit statuses of the command line are hopdag help's.
func TestReadmeExitStatus(t *testing.T) {
	readme, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	i := strings.Index(rootLong, "Exit status:")
	require.GreaterOrEqual(t, i, 0, "hopdag help has an exit status paragraph")
	want := strings.Join(strings.Fields(rootLong[i:]), " ")
	assert.True(t, strings.Contains(strings.Join(strings.Fields(string(readme)), " "), want),
		"docs/cli.md's exit status of the command line differs from hopdag help's: paste it:\n%s", rootLong[i:])
}

// The README's bin/hopdag command lines of the quick tour run as written,
// from the repository root (paths relative to it, /tmp in a temporary
// directory), each exiting 0, with data only on stdout: the plan's YAML is
// a Plan document, the run's final table is on stdout and its progress on
// stderr.
func TestReadmeCLIBlock(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	tmp := t.TempDir()
	n := 0
	for line := range strings.Lines(string(readme)) {
		line, _, _ = strings.Cut(strings.TrimSpace(line), "#")
		rest, ok := strings.CutPrefix(line, "bin/hopdag ")
		if !ok || strings.HasSuffix(line, "\\") || strings.Contains(line, "kube-catalog") || strings.Contains(line, "hopdag-demo") {
			// The exec run and the cluster run (docs/cli.md) have tests
			// of their own (TestReadmeExecRunIsCurrent, TestKubeRun).
			continue
		}
		var args []string
		for _, f := range strings.Fields(rest) {
			switch {
			case strings.HasPrefix(f, "testdata/"):
				f = "../../" + f
			case strings.HasPrefix(f, "cmd/hopdag/"):
				f = strings.TrimPrefix(f, "cmd/hopdag/")
			case strings.HasPrefix(f, "/tmp/"):
				f = filepath.Join(tmp, strings.TrimPrefix(f, "/tmp/"))
			}
			args = append(args, f)
		}
		n++
		code, out, stderr := invoke(args...)
		require.Equal(t, 0, code, "README: %s\n%s", line, stderr)
		assert.NotEmpty(t, out, "README: %s prints its data on stdout", line)
		assert.NotContains(t, out, "\r", "README: %s", line)
		switch args[0] {
		case "plan":
			assert.True(t, strings.HasPrefix(out, "apiVersion: hopdag.io/v1alpha1\nkind: Plan\n"), out)
			assert.NotContains(t, stderr, "warning", "plan - needs no warning")
		case "run":
			assert.True(t, strings.HasPrefix(out, "status v26.06-rc.2 -> v26.09: Succeeded"), "run's stdout is the final status:\n%s", out)
			assert.Contains(t, stderr, "plan v26.06-rc.2 -> v26.09", "the plan and the progress are on stderr")
			assert.Contains(t, stderr, "plan succeeded")
		}
	}
	assert.Equal(t, 5, n, "the README's quick tour has five bin/hopdag lines")
}
