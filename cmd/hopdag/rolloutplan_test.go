package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rolloutPlanArgs plan testdata/rollout: the canary alpha, wave a (bravo
// two hops, charlie two), wave b (delta at the target, echo behind the
// risk containerd-v2-config), foxtrot not selected.
var rolloutPlanArgs = []string{"rollout", "plan", catalog, "-f", "testdata/rollout/rollout.yaml", "--clusters", "testdata/rollout/clusters"}

// rollout plan refuses, with what and where, a rollout or a ClusterVersion
// it cannot read and a selector that selects nothing.
func TestRolloutPlanErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	badCV := write("bad/cv.yaml", "apiVersion: hopdag.io/v1alpha1\nkind: ClusterVersion\nmetadata: {name: a, namespace: clusters}\nspec: {desiredVersion: v26.06}\n---\n"+
		"apiVersion: hopdag.io/v1alpha1\nkind: ClusterVersion\nmetadata: {name: b}\nspec: {desiredVersoin: v26.06}\n")
	notYAML := write("broken/cv.yaml", "kind: ClusterVersion\nmetadata: {name: [\n")
	noneRollout := write("none.yaml", "apiVersion: hopdag.io/v1alpha1\nkind: UpgradeRollout\nmetadata: {name: r, namespace: clusters}\nspec:\n  selector: {matchLabels: {env: nowhere}}\n  desiredVersion: v26.09\n")
	wrongKind := write("wrong.yaml", "apiVersion: hopdag.io/v1alpha1\nkind: ClusterVersion\nmetadata: {name: r}\n")
	unknownField := write("unknown.yaml", "apiVersion: hopdag.io/v1alpha1\nkind: UpgradeRollout\nmetadata: {name: r}\nspec:\n  desiredVersion: v26.09\n  maxConcurency: 2\n")
	const rollout, clusters = "testdata/rollout/rollout.yaml", "testdata/rollout/clusters"
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no -f", []string{"rollout", "plan", catalog, "--clusters", clusters}, exitUsage, "-f is required"},
		{"no --clusters", []string{"rollout", "plan", catalog, "-f", rollout}, exitUsage, "--clusters is required"},
		{"kube with a name", []string{"rollout", "plan", catalog, "-f", rollout, "--clusters", "kube://clusters/x"}, exitUsage, "want kube://NAMESPACE"},
		{"kube without a cluster", []string{"rollout", "plan", catalog, "-f", rollout, "--clusters", "kube://clusters", "--kubeconfig", filepath.Join(dir, "none")}, exitInvalid, "--clusters kube://clusters: kubeconfig --kubeconfig " + filepath.Join(dir, "none")},
		{"missing rollout", []string{"rollout", "plan", catalog, "-f", filepath.Join(dir, "nope.yaml"), "--clusters", clusters}, exitInvalid, "reading the UpgradeRollout: open " + filepath.Join(dir, "nope.yaml")},
		{"not a rollout", []string{"rollout", "plan", catalog, "-f", wrongKind, "--clusters", clusters}, exitInvalid, wrongKind + ":1: a ClusterVersion document; -f takes a file of one UpgradeRollout"},
		{"unknown field", []string{"rollout", "plan", catalog, "-f", unknownField, "--clusters", clusters}, exitInvalid, unknownField + `:1: json: unknown field "maxConcurency"`},
		{"selects nothing", []string{"rollout", "plan", catalog, "-f", noneRollout, "--clusters", clusters}, exitInvalid, "UpgradeRollout clusters/r (" + noneRollout + "): its spec.selector selects none of the 6 ClusterVersions of --clusters " + clusters + " in namespace clusters"},
		{"bad ClusterVersion", []string{"rollout", "plan", catalog, "-f", rollout, "--clusters", filepath.Dir(badCV)}, exitInvalid, badCV + `:6: json: unknown field "desiredVersoin"`},
		{"ClusterVersion not YAML", []string{"rollout", "plan", catalog, "-f", rollout, "--clusters", filepath.Dir(notYAML)}, exitInvalid, notYAML + ": yaml: line 2"},
		{"clusters not a directory", []string{"rollout", "plan", catalog, "-f", rollout, "--clusters", rollout}, exitInvalid, "--clusters " + rollout + ": not a directory"},
		{"bad output", append(append([]string(nil), rolloutPlanArgs...), "-o", "xml"), exitUsage, "hopdag rollout plan: -o xml: want text, json or yaml\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := invoke(tt.args...)
			assert.Equal(t, tt.code, code, "stderr:\n%s", stderr)
			assert.Empty(t, out)
			assert.Contains(t, stderr, tt.stderr)
		})
	}
}

// rollout plan of a rollout with spec.namespaceSelector plans the
// ClusterVersions of the namespaces whose labels (from the Namespace
// documents of --clusters; kubernetes.io/metadata.name alone for the
// others) match, named NAMESPACE/NAME.
func TestRolloutPlanNamespaceSelector(t *testing.T) {
	dir := t.TempDir()
	cv := func(ns, name string) string {
		return "apiVersion: hopdag.io/v1alpha1\nkind: ClusterVersion\nmetadata: {name: " + name + ", namespace: " + ns + ", labels: {env: prod}}\nspec: {desiredVersion: v26.06}\n---\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "clusters.yaml"), []byte(
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: east, labels: {region: eu}}\n---\n"+
			"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: north, labels: {region: eu}}}\n---\n"+
			cv("east", "e1")+cv("north", "n1")+cv("west", "w1")+cv("clusters", "home")), 0o644))
	rollout := filepath.Join(t.TempDir(), "rollout.yaml")
	require.NoError(t, os.WriteFile(rollout, []byte("apiVersion: hopdag.io/v1alpha1\nkind: UpgradeRollout\nmetadata: {name: eu, namespace: clusters}\n"+
		"spec:\n  selector: {matchLabels: {env: prod}}\n  namespaceSelector: {matchLabels: {region: eu}}\n  desiredVersion: v26.09-rc.1\n  acceptRisks: [containerd-v2-config]\n  canaries: {names: [north/n1]}\n"), 0o644))
	code, out, stderr := invoke("rollout", "plan", catalog, "-f", rollout, "--clusters", dir, "-o", "json")
	require.Equal(t, exitOK, code, "stderr:\n%s", stderr)
	var p rolloutPlan
	require.NoError(t, json.Unmarshal([]byte(out), &p))
	var got []string
	for _, w := range p.Waves {
		for _, c := range w.Clusters {
			got = append(got, w.Name+":"+c.Name)
		}
	}
	assert.Equal(t, []string{"canary:north/n1", "fleet:east/e1"}, got, "the ClusterVersions of the namespaces labelled region=eu")
	assert.Equal(t, 2, p.Clusters)

	// A selector on the name the API server labels every namespace with.
	require.NoError(t, os.WriteFile(rollout, []byte("apiVersion: hopdag.io/v1alpha1\nkind: UpgradeRollout\nmetadata: {name: eu, namespace: clusters}\n"+
		"spec:\n  selector: {matchLabels: {env: prod}}\n  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: west}}\n  desiredVersion: v26.09-rc.1\n  acceptRisks: [containerd-v2-config]\n"), 0o644))
	code, out, stderr = invoke("rollout", "plan", catalog, "-f", rollout, "--clusters", dir, "-o", "json")
	require.Equal(t, exitOK, code, "stderr:\n%s", stderr)
	p = rolloutPlan{}
	require.NoError(t, json.Unmarshal([]byte(out), &p))
	require.Len(t, p.Waves, 1)
	require.Len(t, p.Waves[0].Clusters, 1)
	assert.Equal(t, "west/w1", p.Waves[0].Clusters[0].Name)

	// A namespace selector that matches none says where it looked.
	require.NoError(t, os.WriteFile(rollout, []byte("apiVersion: hopdag.io/v1alpha1\nkind: UpgradeRollout\nmetadata: {name: eu, namespace: clusters}\n"+
		"spec:\n  selector: {matchLabels: {env: prod}}\n  namespaceSelector: {matchLabels: {region: mars}}\n  desiredVersion: v26.09-rc.1\n"), 0o644))
	code, _, stderr = invoke("rollout", "plan", catalog, "-f", rollout, "--clusters", dir)
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, "its spec.selector selects none of the 4 ClusterVersions of --clusters "+dir+" in the namespaces its spec.namespaceSelector matches: check the selector's labels and the namespaces' labels (Namespace documents in --clusters DIR)")
}
