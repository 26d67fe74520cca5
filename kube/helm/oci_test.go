package helm_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hopdag/hopdag/bundle/bundletest"
	"github.com/hopdag/hopdag/kube/helm"
)

// A chart from an OCI registry (the distribution registry on 127.0.0.1,
// plain HTTP): the test chart is pushed as Helm pushes it, then resolved
// at plan time and installed from oci://, pinned by version. Without
// WithPlainHTTP the same reference fails at plan time (HTTPS to an HTTP
// registry), and a version the registry does not have is refused there
// too.
func TestHelmOCIChart(t *testing.T) {
	reg := bundletest.Start(t)
	ref, _ := pushChart(t, reg)

	rcfg := apiServer(t)
	cv := appVersion("v1.0", 80)
	cv.Helm.Chart = "oci://" + ref
	plain := helm.New(rcfg, helm.WithPlainHTTP(), helm.WithValues(map[string]any{"site": "oci"}), helm.WithSettings(settings(t)))
	require.NoError(t, plain.Validate(cv), "plan-time resolve of the oci:// chart")

	tls := helm.New(rcfg, helm.WithSettings(settings(t)), helm.WithValues(map[string]any{"site": "oci"}))
	assert.ErrorContains(t, tls.Validate(cv), "locate chart oci://"+ref, "HTTPS to a plain-HTTP registry fails at plan time")
	missing := appVersion("v1.0", 80)
	missing.Helm.Chart, missing.Helm.Version = "oci://"+ref, "9.9.9"
	assert.ErrorContains(t, plain.Validate(missing), "locate chart oci://"+ref+" 9.9.9")

	ctx := context.Background()
	require.NoError(t, plain.Run(ctx, task(nil, cv)), "install from the registry")
	kc, err := kubernetes.NewForConfig(rcfg)
	require.NoError(t, err)
	cm, err := kc.CoreV1().ConfigMaps("apps").Get(ctx, "app-config", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "hello v1.0 from oci", cm.Data["greeting"])
}

// An OCI chart is pinned by the digest `helm push` prints (the manifest's)
// and pulled by it; the chart layer's digest (the .tgz's SHA-256) is
// accepted too. A mismatch names both digests of the chart.
func TestHelmOCIDigest(t *testing.T) {
	reg := bundletest.Start(t)
	ref, res := pushChart(t, reg)
	require.NotEqual(t, res.Manifest.Digest, res.Chart.Digest)
	wrong := "sha256:" + strings.Repeat("0", 64)

	r := helm.New(&rest.Config{Host: "https://127.0.0.1:1"}, helm.WithPlainHTTP(), helm.WithValues(map[string]any{"site": "oci"}), helm.WithSettings(settings(t)))
	for _, tc := range []struct {
		name, chart, version, digest string
		err                          []string // the error contains each; none: no error
	}{
		{name: "manifest digest", chart: "oci://" + ref, version: "0.1.0", digest: res.Manifest.Digest},
		{name: "chart layer digest", chart: "oci://" + ref, version: "0.1.0", digest: res.Chart.Digest},
		{name: "tag in the reference", chart: "oci://" + ref + ":0.1.0", version: "0.1.0", digest: res.Manifest.Digest},
		{name: "digest in the reference", chart: "oci://" + ref + "@" + res.Manifest.Digest, digest: res.Manifest.Digest},
		{name: "digest in the reference, no pin", chart: "oci://" + ref + "@" + res.Manifest.Digest},
		{name: "wrong digest", chart: "oci://" + ref, version: "0.1.0", digest: wrong,
			err: []string{"has manifest digest " + res.Manifest.Digest + " (the digest helm push prints)",
				"archive digest " + res.Chart.Digest, "the catalog pins " + wrong}},
		{name: "wrong digest in the reference", chart: "oci://" + ref + "@" + wrong, version: "0.1.0", digest: wrong,
			err: []string{"locate chart oci://" + ref + "@" + wrong}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cv := appVersion("v1.0", 80)
			cv.Helm.Chart, cv.Helm.Version, cv.Helm.Digest = tc.chart, tc.version, tc.digest
			err := r.Validate(cv)
			if len(tc.err) == 0 {
				assert.NoError(t, err)
			}
			for _, e := range tc.err {
				assert.ErrorContains(t, err, e)
			}
		})
	}
}

// pushChart pushes testdata/charts/app to reg as Helm pushes it, tagged
// 0.1.0, and returns its reference (without oci://) and the push result.
func pushChart(t *testing.T, reg *bundletest.Registry) (string, *registry.PushResult) {
	t.Helper()
	ch, err := loader.Load("testdata/charts/app")
	require.NoError(t, err)
	archive, err := chartutil.Save(ch, t.TempDir())
	require.NoError(t, err)
	data, err := os.ReadFile(archive)
	require.NoError(t, err)
	rc, err := registry.NewClient(registry.ClientOptPlainHTTP())
	require.NoError(t, err)
	ref := strings.TrimPrefix(reg.Ref("charts/app"), "oci://")
	res, err := rc.Push(data, ref+":0.1.0")
	require.NoError(t, err, "push the chart")
	return ref, res
}
