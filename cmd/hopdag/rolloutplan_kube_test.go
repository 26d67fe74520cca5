package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// rollout plan --clusters kube://NAMESPACE plans from the ClusterVersions
// of a real API server what it plans from their YAML files, writing
// nothing; a cluster without hopdag's CRDs, or a namespace other than the
// rollout's, is refused with what to do.
func TestRolloutPlanFromCluster(t *testing.T) {
	cl := startCluster(t)
	ctx := context.Background()
	const rollout, dir = "testdata/rollout/rollout.yaml", "testdata/rollout/clusters"
	plan := func(clusters string, extra ...string) (int, string, string) {
		args := append([]string{"rollout", "plan", catalog, "-f", rollout, "--clusters", clusters, "--kubeconfig", cl.kubeconfig}, extra...)
		return invoke(args...)
	}

	code, out, stderr := plan("kube://clusters")
	assert.Equal(t, exitInvalid, code, "before the CRDs: stdout:\n%s", out)
	assert.Contains(t, stderr, "--clusters kube://clusters: the cluster "+cl.cfg.Host+" has no ClusterVersion kind: install hopdag's CRDs (kubectl apply -k kube/config/crd), or give --clusters DIR")

	_, err := envtest.InstallCRDs(cl.cfg, envtest.CRDInstallOptions{Paths: []string{"../../kube/config/crd"}, ErrorIfPathMissing: true})
	require.NoError(t, err)
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	kc, err := client.New(cl.cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	require.NoError(t, kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters"}}))
	cvs, _, err := readClusterVersions(dir)
	require.NoError(t, err)
	require.NotEmpty(t, cvs)
	for i := range cvs {
		require.NoError(t, kc.Create(ctx, &cvs[i]), "creating ClusterVersion %s", cvs[i].Name)
	}
	// A ClusterVersion of another namespace, which the rollout never
	// selects (its spec.selector matches it).
	require.NoError(t, kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}))
	require.NoError(t, kc.Create(ctx, &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "elsewhere", Labels: map[string]string{"env": "prod"}},
		Spec: v1alpha1.ClusterVersionSpec{DesiredVersion: "v26.06"}}))
	before := resourceVersions(t, kc)

	for _, format := range []string{"text", "json", "yaml"} {
		code, fromFiles, stderr := invoke("rollout", "plan", catalog, "-f", rollout, "--clusters", dir, "-o", format)
		require.Equal(t, exitOK, code, "from files: stderr:\n%s", stderr)
		for _, clusters := range []string{"kube://clusters", "kube://"} {
			code, fromCluster, stderr := plan(clusters, "-o", format)
			require.Equal(t, exitOK, code, "--clusters %s: stderr:\n%s", clusters, stderr)
			assert.Equal(t, fromFiles, fromCluster, "-o %s: --clusters %s plans what --clusters %s does", format, clusters, dir)
		}
	}
	assert.Equal(t, before, resourceVersions(t, kc), "rollout plan wrote nothing")

	code, _, stderr = plan("kube://elsewhere")
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, rollout+": UpgradeRollout clusters/fleet selects the ClusterVersions of its own namespace, clusters, not of --clusters kube://elsewhere: give --clusters kube://clusters (or kube://)")
	code, _, stderr = plan("kube://clusters/fleet")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--clusters kube://clusters/fleet: want kube://NAMESPACE (or kube:// for the rollout's namespace)")
}

// resourceVersions are the ClusterVersions of the cluster by namespace
// and name, with their resourceVersions.
func resourceVersions(t *testing.T, kc client.Client) map[string]string {
	t.Helper()
	var l v1alpha1.ClusterVersionList
	require.NoError(t, kc.List(context.Background(), &l))
	out := map[string]string{}
	for _, cv := range l.Items {
		out[cv.Namespace+"/"+cv.Name] = cv.ResourceVersion
	}
	return out
}
