package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// completions is what the shell scripts ask the binary for (hopdag
// __complete ARGS...): the words, without descriptions, and the directive.
func completions(t *testing.T, args ...string) (words []string, directive string) {
	t.Helper()
	code, out, stderr := invoke(append([]string{"__complete"}, args...)...)
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines[:len(lines)-1] {
		w, _, _ := strings.Cut(l, "\t")
		words = append(words, w)
	}
	return words, lines[len(lines)-1]
}

// The completion of flags and arguments, the same for every shell: the
// catalog's versions and states, its risks (described by their messages),
// the formats of -o and the words of the flags that take a few.
func TestCompletionWords(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"commands", []string{"st"}, []string{"status"}},
		{"versions", []string{"plan", execCatalog, "--from", ""}, []string{"v1.0", "v1.1", "v2.0"}},
		{"versions of --to", []string{"run", execCatalog, "--to", "v"}, []string{"v1.0", "v1.1", "v2.0"}},
		{"no catalog", []string{"plan", "testdata/nope", "--from", ""}, nil},
		{"risks", []string{"targets", "-", "--from", "v26.06-rc.2", "--accept", ""}, []string{"containerd-v2-config"}},
		{"status formats", []string{"status", "--state", "x", "-o", ""}, []string{"table", "json", "yaml"}},
		{"graph formats", []string{"graph", execCatalog, "--output", ""}, []string{"mermaid", "dot", "json", "yaml"}},
		{"mode", []string{"run", execCatalog, "--mode", ""}, []string{"eager", "batch"}},
		{"on-failure", []string{"run", execCatalog, "--on-failure", ""}, []string{"rollback", "rollback-run"}},
		{"states", []string{"plan", "../../testdata/two-track", "--from", "platform=13.01.0,"}, []string{
			"platform=13.01.0,kubernetes=v1.32.0", "platform=13.01.0,kubernetes=v1.32.1", "platform=13.01.0,kubernetes=v1.33.0",
			"platform=13.01.0,kubernetes=v1.33.1", "platform=13.01.0,kubernetes=v1.34.0", "platform=13.01.0,kubernetes=v1.34.1",
			"platform=13.01.0,kubernetes=v1.35.0", "platform=13.01.0,kubernetes=v1.35.1"}},
		{"shells", []string{"completion", ""}, []string{"bash", "fish", "powershell", "zsh"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := completions(t, tt.args...)
			assert.Equal(t, tt.want, got)
		})
	}
	// Risks come with their messages, versions with their releases.
	_, out, _ := invoke("__complete", "targets", "-", "--from", "v26.06-rc.2", "--accept", "")
	assert.Contains(t, out, "containerd-v2-config\tcontainerd 2.x rewrites config.toml")
	_, out, _ = invoke("__complete", "plan", execCatalog, "--from", "")
	assert.Contains(t, out, "v1.0\trelease demo-v1.0")
	// The catalog argument completes to directories.
	_, dir := completions(t, "plan", "")
	assert.Equal(t, ":16", dir, "ShellCompDirectiveFilterDirs")
}

// The scripts of the four shells; bash's and zsh's sourced in the shell
// when it is installed, fish's checked by fish -n.
func TestCompletionScripts(t *testing.T) {
	for _, tt := range []struct {
		shell, marker string
		check         []string // the shell and its arguments; the script's path is appended to the last
	}{
		{"bash", "__start_hopdag", []string{"bash", "-c", "source SCRIPT && complete -p hopdag"}},
		{"zsh", "#compdef hopdag", []string{"zsh", "-f", "-c", "autoload -U compinit && compinit -u -D && source SCRIPT && print -r -- $_comps[hopdag]"}},
		{"fish", "complete -c hopdag", []string{"fish", "-n", "SCRIPT"}},
		{"powershell", "Register-ArgumentCompleter", []string{"pwsh", "-NoProfile", "-Command", ". SCRIPT"}},
	} {
		t.Run(tt.shell, func(t *testing.T) {
			code, out, stderr := invoke("completion", tt.shell)
			require.Equal(t, exitOK, code, stderr)
			assert.Contains(t, out, tt.marker)
			assert.Contains(t, out, "__complete", "the script asks the binary for the words")
			code, noDesc, _ := invoke("completion", tt.shell, "--no-descriptions")
			require.Equal(t, exitOK, code)
			assert.NotEqual(t, out, noDesc, "descriptions are on by default")
			sh, err := exec.LookPath(tt.check[0])
			if err != nil {
				t.Skipf("no %s", tt.check[0])
			}
			script := filepath.Join(t.TempDir(), "hopdag."+tt.shell)
			require.NoError(t, os.WriteFile(script, []byte(out), 0o644))
			args := append([]string(nil), tt.check[1:]...)
			args[len(args)-1] = strings.ReplaceAll(args[len(args)-1], "SCRIPT", script)
			got, err := exec.Command(sh, args...).CombinedOutput()
			require.NoError(t, err, "%s", got)
			if tt.shell == "bash" {
				assert.Contains(t, string(got), "hopdag", "bash registered the completion")
			}
		})
	}
}
