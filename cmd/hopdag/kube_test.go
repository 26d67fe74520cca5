package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/apply"
)

// writeKubeconfig writes a kubeconfig whose contexts each name a cluster
// at server (a closed port on 127.0.0.1: nothing answers).
func writeKubeconfig(t *testing.T, current string, servers map[string]string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	for name, server := range servers {
		kc.Clusters[name] = &clientcmdapi.Cluster{Server: server}
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "t"}
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	kc.CurrentContext = current
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}

// A kubeconfig that cannot give a cluster fails the run before anything
// runs, saying which kubeconfig and context were tried and what to pass.
// The built binary runs with HOME in a temporary directory, so that the
// machine's ~/.kube/config is never read.
func TestKubeconfigErrors(t *testing.T) {
	two := writeKubeconfig(t, "a", map[string]string{"a": "https://127.0.0.1:1", "b": "https://127.0.0.1:2"})
	noCurrent := writeKubeconfig(t, "", map[string]string{"a": "https://127.0.0.1:1", "b": "https://127.0.0.1:2"})
	missing := filepath.Join(t.TempDir(), "no-such-kubeconfig")
	run := []string{"run", kubeCatalog, "--from", "v1.0", "--to", "v2.0", "--set", "ns=x"}
	tests := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"no kubeconfig anywhere", nil, nil,
			[]string{"no kubeconfig with a context: tried ", filepath.Join(".kube", "config"), "this is no pod with a service account", "pass --kubeconfig FILE (or set $KUBECONFIG) and --context NAME, or --apply-dir DIR"}},
		{"missing file", nil, []string{"--kubeconfig", missing},
			[]string{"kubeconfig --kubeconfig " + missing + ": ", "no such file"}},
		{"no current context", []string{"KUBECONFIG=" + noCurrent}, nil,
			[]string{"kubeconfig $KUBECONFIG (" + noCurrent + ") has no current context: pass --context (one of a, b)"}},
		{"unknown context", nil, []string{"--kubeconfig", two, "--context", "c"},
			[]string{`kubeconfig --kubeconfig ` + two + ` has no context "c": pass --context with one of a, b`}},
		{"current context unreachable", []string{"KUBECONFIG=" + two}, nil,
			[]string{"the API server https://127.0.0.1:1 (kubeconfig $KUBECONFIG (" + two + "), context a) does not answer", "is the cluster up"}},
		{"--context over the current one", nil, []string{"--kubeconfig", two, "--context", "b"},
			[]string{"the API server https://127.0.0.1:2 (kubeconfig --kubeconfig " + two + ", context b) does not answer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := hopdagEnv(t, tt.env, append(run, tt.args...)...)
			assert.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
			assert.Contains(t, stderr, "this plan cannot run from the command line:\n  manifest components config 2.0, web 2.0: ")
			for _, w := range tt.want {
				assert.Contains(t, stderr, w)
			}
			assert.NotContains(t, out, "plan v1.0 -> v2.0", "nothing ran")
		})
	}
}

// Without a kubeconfig, what needs the cluster says how to name one, and
// offers --apply-dir only where it helps: to the manifest components of a
// run, not to kube:// state (status, abandon, approve, or a run that writes
// its objects to --apply-dir already) nor to helm components.
func TestKubeconfigFixNamesWhatHelps(t *testing.T) {
	const cluster = "pass --kubeconfig FILE (or set $KUBECONFIG) and --context NAME"
	out := t.TempDir()
	tests := []struct {
		name       string
		args       []string
		applyDirOK bool
	}{
		{"status of kube state", []string{"status", "--state", "kube://ns/name"}, false},
		{"abandon of kube state", []string{"abandon", "--yes", "--state", "kube://ns/name"}, false},
		{"approve in kube state", []string{"approve", "--state", "kube://ns/name", "v2.0"}, false},
		{"run with --apply-dir and kube state", []string{"run", "testdata/dir-catalog", "--from", "v1.0", "--to", "v2.0",
			"--set", "out=" + out, "--apply-dir", filepath.Join(out, "objects"), "--state", "kube://ns/name"}, false},
		{"run of manifests", []string{"run", kubeCatalog, "--from", "v1.0", "--to", "v2.0", "--set", "ns=x"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := hopdagEnv(t, nil, tt.args...)
			assert.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stderr, "no kubeconfig with a context")
			assert.Contains(t, stderr, cluster)
			if tt.applyDirOK {
				assert.Contains(t, stderr, cluster+", or --apply-dir DIR to write the objects to files instead")
			} else {
				assert.NotContains(t, stderr, "--apply-dir DIR", "--apply-dir does not give kube:// state a cluster")
			}
		})
	}
}

// The applier prints one line per object of an Apply or a prune, under the
// component that rendered it (a prune's objects name it only in their
// ownership labels).
func TestReportingApplierPrint(t *testing.T) {
	ref := func(kind, name string) components.Ref {
		return components.Ref{Version: "v1", Kind: kind, Namespace: "ns", Name: name}
	}
	tests := []struct {
		name string
		objs []components.Object
		cs   apply.ChangeSet
		want string
	}{
		{"apply", []components.Object{{Kind: "ConfigMap", Component: "config"}},
			apply.ChangeSet{{Object: ref("ConfigMap", "a"), Action: apply.Created}, {Object: ref("Service", "b"), Action: apply.Unchanged, DryRun: true}},
			"        config: ConfigMap ns/a created\n        config: Service ns/b unchanged (dry run)\n"},
		{"prune names the component in its labels", []components.Object{{Kind: "ConfigMap", Content: map[string]any{"metadata": map[string]any{"labels": map[string]any{
			components.LabelComponent: "config", components.LabelInstance: components.DefaultInstance}}}}},
			apply.ChangeSet{{Object: ref("ConfigMap", "legacy"), Action: apply.Pruned}},
			"        config: ConfigMap ns/legacy pruned\n"},
		{"nothing", []components.Object{{Component: "config"}}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			(&reportingApplier{w: &b}).print(tt.objs, tt.cs)
			assert.Equal(t, tt.want, b.String())
		})
	}
}
