package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const catalog = "../../testdata/catalog"

func invoke(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "golden file missing: run go test . -update in cmd/hopdag")
	assert.Equal(t, string(want), got, "output differs from %s (-want +got); rerun with -update if the change is intended", p)
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"validate.golden", []string{"validate", catalog}},
		{"targets.golden", []string{"targets", catalog, "--from", "v26.06-rc.2"}},
		{"targets-accept.golden", []string{"targets", "--from", "v26.06", "--accept", "containerd-v2-config", catalog}},
		{"targets-risky.golden", []string{"targets", catalog, "--from", "v26.06"}},
		{"plan.golden", []string{"plan", catalog, "--from", "v26.06-rc.2", "--to", "v26.09"}},
		{"plan-json.golden", []string{"plan", catalog, "--from", "v26.06-rc.2", "--to", "v26.09", "-o", "json"}},
		{"plan-yaml.golden", []string{"plan", catalog, "--from", "v26.06-rc.2", "--to", "v26.09", "-o", "yaml"}},
		{"graph-mermaid.golden", []string{"graph", catalog, "--from", "v26.06-rc.2", "--to", "v26.09", "--hop", "3"}},
		{"graph-dot.golden", []string{"graph", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "-o", "dot"}},
		{"validate-invalid.golden", []string{"validate", "testdata/bad-catalog"}},
		{"rollout-plan.golden", rolloutPlanArgs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, out, _ := invoke(tt.args...)
			golden(t, tt.name, out)
		})
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"no command", nil, 2, "Usage"},
		{"help", []string{"help"}, 0, "Usage"},
		{"command help", []string{"plan", "-h"}, 0, "-o, --output string"},
		{"help of a command", []string{"help", "plan"}, 0, "hopdag plan DIR --from V --to W [flags]"},
		{"version", []string{"version"}, 0, "hopdag "},
		{"--version", []string{"--version"}, 0, "hopdag "},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"bad flag", []string{"plan", catalog, "--frm", "v26.06"}, 2, "hopdag plan: unknown flag: --frm\nRun 'hopdag plan --help' for usage.\n"},
		{"Go-style flag", []string{"plan", catalog, "-from", "v26.06"}, 2, "hopdag plan: unknown flag -from: long flags take two dashes, --from\n"},
		{"mistyped command", []string{"pln"}, 2, "hopdag: unknown command \"pln\" (did you mean plan or run?)\nRun 'hopdag --help' for usage.\n"},
		{"missing from", []string{"targets", catalog}, 2, "--from is required"},
		{"missing dir", []string{"validate"}, 2, "want exactly one catalog directory"},
		{"bad output", []string{"plan", catalog, "--from", "v26.06", "--to", "v26.09", "-o", "xml"}, 2, "hopdag plan: -o xml: want text, json or yaml\nRun 'hopdag plan --help' for usage.\n"},
		{"run with inline components", []string{"run", catalog, "--from", "v26.06", "--to", "v26.09"}, 1, "inline components bkeagent v1.5.0, containerd v2.1.3"},
		{"simulate with apply-dir", []string{"run", catalog, "--from", "v26.06", "--to", "v26.09", "--simulate", "--apply-dir", "x"}, 2, "--apply-dir applies for real"},
		{"fail without simulate", []string{"run", catalog, "--from", "v26.06", "--to", "v26.09", "--fail", "etcd"}, 2, "only go with --simulate"},
		{"dry run of commands", []string{"run", "testdata/exec-catalog", "--from", "v1.0", "--to", "v2.0", "--dry-run"}, 1, "exec components app 1.1, cache 1.1, config 1.1, db 1.1, app 2.0, db 2.0: a command has no dry run"},
		{"dry run without a cluster", []string{"run", "testdata/dir-catalog", "--from", "v1.0", "--to", "v2.0", "--dry-run", "--kubeconfig", "testdata/no-such-kubeconfig"}, 1, "no such file"},
		{"dry run with state", []string{"run", "testdata/dir-catalog", "--from", "v1.0", "--to", "v2.0", "--dry-run", "--state", "x"}, 2, "--dry-run changes nothing, so it saves no status"},
		{"rollback without rollback commands", []string{"run", "testdata/exec-catalog", "--from", "v1.0", "--to", "v2.0", "--on-failure", "rollback"}, 1, "no rollback command: declare spec.rollback.args"},
		{"bad on-failure", []string{"run", "testdata/exec-catalog", "--from", "v1.0", "--to", "v2.0", "--on-failure", "undo"}, 2, "--on-failure must be rollback or rollback-run"},
		{"status without state", []string{"status"}, 2, "--state is required"},
		{"status of nothing", []string{"status", "--state", "testdata/nope"}, 1, "no status in testdata/nope"},
		{"abandon without state", []string{"abandon"}, 2, "--state is required"},
		{"completion without shell", []string{"completion"}, 2, "hopdag completion: want bash, zsh, fish or powershell\n"},
		{"completion of another shell", []string{"completion", "tcsh"}, 2, "hopdag completion: want bash, zsh, fish or powershell, got \"tcsh\"\n"},
		{"unknown state scheme", []string{"status", "--state", "s3://bucket/x"}, 1, `unknown scheme "s3"`},
		{"etcd without prefix", []string{"status", "--state", "etcd://127.0.0.1:2379"}, 1, "want etcd://host:port/prefix"},
		{"kube state without a cluster", []string{"status", "--state", "kube://ns/name", "--kubeconfig", "testdata/no-such-kubeconfig"}, 1, "no such file"},
		{"invalid catalog", []string{"validate", "testdata/bad-catalog"}, 1, "problems"},
		{"no such dir", []string{"validate", "testdata/nope"}, 1, "no such file or directory"},
		{"unknown version", []string{"plan", catalog, "--from", "v26.07", "--to", "v26.09"}, 1, "v26.07"},
		{"bad version", []string{"plan", catalog, "--from", "banana", "--to", "v26.09"}, 1, `invalid version "banana"`},
		{"risky without accept", []string{"plan", catalog, "--from", "v26.06", "--to", "v26.09-rc.1"}, 1, "containerd-v2-config"},
		{"hop out of range", []string{"graph", catalog, "--from", "v26.06", "--to", "v26.09", "--hop", "4"}, 1, "the plan has 1 hop"},
		{"ok", []string{"validate", catalog}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := invoke(tt.args...)
			assert.Equal(t, tt.code, code, "hopdag %s exit code; stderr:\n%s", strings.Join(tt.args, " "), stderr)
			if code == exitOK || tt.name == "invalid catalog" {
				// Help, versions and reports are data: stdout.
				assert.Contains(t, stdout, tt.inStderr)
				return
			}
			assert.Contains(t, stderr, tt.inStderr)
		})
	}
}

func TestRunSimulated(t *testing.T) {
	state := t.TempDir()
	code, out, stderr := invoke("run", "-", "--from", "v26.06-rc.2", "--to", "v26.09", "--simulate", "--speed", "20000", "--state", state, "--fail", "kubernetes-master")
	assert.Equal(t, 1, code, "a run with --fail kubernetes-master fails; stderr:\n%s", stderr)
	assert.Regexp(t, `DEPENDENCY_FAILED +dependency kubernetes-master failed`, out)

	code, out, stderr = invoke("run", "-", "--from", "v26.06-rc.2", "--to", "v26.09", "--simulate", "--speed", "20000", "--state", state)
	assert.Equal(t, 0, code, "the resumed run succeeds; stderr:\n%s\nstdout:\n%s", stderr, out)
	assert.Contains(t, stderr, "resuming from "+state+" (")
	assert.Contains(t, out, "status v26.06-rc.2 -> v26.09: Succeeded")
}

// The README's picture is what `hopdag graph` draws for the first hop of the
// sample upgrade (without the title block).
func TestReadmePictureIsCurrent(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	code, out, stderr := invoke("graph", "-", "--from", "v26.06-rc.2", "--to", "v26.09", "--hop", "1")
	require.Equal(t, 0, code, stderr)
	body := out[strings.Index(out, "flowchart"):]
	assert.Contains(t, string(readme), "```mermaid\n"+body+"```", "README.md's picture is stale: paste the output of hopdag graph - --from v26.06-rc.2 --to v26.09 --hop 1 (from the flowchart line)")
}
