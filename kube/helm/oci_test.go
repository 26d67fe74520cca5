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
	ch, err := loader.Load("testdata/charts/app")
	require.NoError(t, err)
	archive, err := chartutil.Save(ch, t.TempDir())
	require.NoError(t, err)
	data, err := os.ReadFile(archive)
	require.NoError(t, err)
	rc, err := registry.NewClient(registry.ClientOptPlainHTTP())
	require.NoError(t, err)
	ref := strings.TrimPrefix(reg.Ref("charts/app"), "oci://")
	_, err = rc.Push(data, ref+":0.1.0")
	require.NoError(t, err, "push the chart")

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
