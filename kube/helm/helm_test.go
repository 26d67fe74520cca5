package helm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/cli"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/helm"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// apiServer starts a real kube-apiserver (and etcd) from
// KUBEBUILDER_ASSETS. Outside CI a missing binary skips the test; with
// CI=true it fails.
func apiServer(t *testing.T) *rest.Config {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		msg := "no kube-apiserver: set KUBEBUILDER_ASSETS to a directory with etcd and kube-apiserver (eval \"$(tools/env.sh kube)\")"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	rc, err := env.Start()
	require.NoError(t, err, "start kube-apiserver from %s", assets)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })
	return rc
}

// appVersion is component "app" at version v, with the test chart and
// values that name the version and set the Service's port.
func appVersion(v string, port int) *release.ComponentVersion {
	return &release.ComponentVersion{
		Name: "app", Version: release.MustParseVersion(v), Type: release.TypeHelm,
		Timeout: release.D(time.Minute),
		Params:  map[string]string{"size": "3"},
		Helm: &release.HelmChart{Chart: "charts/app", Version: "0.1.0", Namespace: "apps",
			Values: "greeting: hello {{ .Component.Version }} from {{ .Values.site }}\nport: " + itoa(port) + "\nsize: {{ .Component.Params.size }}\n"},
	}
}

func itoa(n int) string {
	b := []byte{}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func task(from, to *release.ComponentVersion) runner.Task {
	return runner.Task{Component: to.Name, From: from, To: to, Attempt: 1}
}

func settings(t *testing.T) *cli.EnvSettings {
	s := cli.New()
	dir := t.TempDir()
	s.RepositoryCache, s.RepositoryConfig, s.RegistryConfig = dir+"/cache", dir+"/repositories.yaml", dir+"/registry.json"
	return s
}

// Install, upgrade with changed values, a failed upgrade with Helm's
// message, then Rollback to the from-version's revision, against a real
// API server.
func TestHelmInstallUpgradeRollback(t *testing.T) {
	rc := apiServer(t)
	ctx := context.Background()
	r := helm.New(rc, helm.WithChartRoot("testdata"), helm.WithValues(map[string]any{"site": "lab"}), helm.WithSettings(settings(t)))
	kc, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	greeting := func() string {
		cm, err := kc.CoreV1().ConfigMaps("apps").Get(ctx, "app-config", metav1.GetOptions{})
		require.NoError(t, err)
		return cm.Data["greeting"]
	}
	port := func() int32 {
		svc, err := kc.CoreV1().Services("apps").Get(ctx, "app", metav1.GetOptions{})
		require.NoError(t, err)
		return svc.Spec.Ports[0].Port
	}

	v1, v2, v3 := appVersion("v1.0", 80), appVersion("v2.0", 8080), appVersion("v3.0", 70000)
	require.NoError(t, r.Validate(v1), "plan-time validation")

	require.NoError(t, r.Run(ctx, task(nil, v1)), "install")
	assert.Equal(t, "hello v1.0 from lab", greeting())
	assert.Equal(t, int32(80), port())

	require.NoError(t, r.Run(ctx, task(v1, v2)), "upgrade")
	assert.Equal(t, "hello v2.0 from lab", greeting())
	assert.Equal(t, int32(8080), port())

	err = r.Run(ctx, task(v2, v3))
	require.Error(t, err, "an upgrade to an invalid port fails")
	assert.Contains(t, err.Error(), "helm: app@v3.0: upgrade release apps/app:")
	assert.Contains(t, err.Error(), "65535", "Helm's (the API server's) message")

	require.NoError(t, r.Rollback(ctx, task(v2, v3)), "rollback")
	assert.Equal(t, "hello v2.0 from lab", greeting(), "back at the from-version")
	assert.Equal(t, int32(8080), port())

	require.NoError(t, r.Rollback(ctx, task(nil, v1)), "rolling back an install uninstalls")
	_, err = kc.CoreV1().ConfigMaps("apps").Get(ctx, "app-config", metav1.GetOptions{})
	assert.Error(t, err, "the ConfigMap is gone")
}

// A chart reference that does not resolve fails at plan time.
func TestHelmValidate(t *testing.T) {
	r := helm.New(&rest.Config{Host: "https://127.0.0.1:1"}, helm.WithChartRoot("testdata"), helm.WithValues(map[string]any{"site": "lab"}), helm.WithSettings(settings(t)))
	missing := appVersion("v1.0", 80)
	missing.Helm.Chart = "charts/nope"
	assert.ErrorContains(t, r.Validate(missing), "helm: app@v1.0: load chart testdata/charts/nope")
	pinned := appVersion("v1.0", 80)
	pinned.Helm.Version = "9.9.9"
	assert.ErrorContains(t, r.Validate(pinned), "chart charts/app is version 0.1.0, the catalog pins 9.9.9")
	assert.ErrorIs(t, r.Validate(&release.ComponentVersion{Name: "x", Version: release.MustParseVersion("v1.0")}), helm.ErrNoChart)
	// A digest pins an archive's content.
	c, err := loader.Load("testdata/charts/app")
	require.NoError(t, err)
	archive, err := chartutil.Save(c, t.TempDir())
	require.NoError(t, err)
	b, err := os.ReadFile(archive)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	pin := appVersion("v1.0", 80)
	pin.Helm.Chart, pin.Helm.Digest = archive, "sha256:"+hex.EncodeToString(sum[:])
	assert.NoError(t, r.Validate(pin))
	pin.Helm.Digest = "sha256:" + strings.Repeat("0", 64)
	assert.ErrorContains(t, r.Validate(pin), "the catalog pins sha256:000")
	dir := appVersion("v1.0", 80)
	dir.Helm.Digest = pin.Helm.Digest
	assert.ErrorContains(t, r.Validate(dir), "a digest pins an archive")
	badValues := appVersion("v1.0", 80)
	badValues.Helm.Values = "a: {{ .Values.nope }}"
	assert.ErrorContains(t, r.Validate(badValues), "values")
}

// The Rollback failure policy with a helm component: the failed upgrade
// is rolled back through Helm to the previous revision.
func TestHelmRollbackPolicy(t *testing.T) {
	rc := apiServer(t)
	ctx := context.Background()
	r := helm.New(rc, helm.WithChartRoot("testdata"), helm.WithValues(map[string]any{"site": "lab"}), helm.WithSettings(settings(t)))
	v1, v2 := appVersion("v1.0", 80), appVersion("v2.0", 70000)
	require.NoError(t, r.Run(ctx, task(nil, v1)), "the cluster runs v1.0")

	rel := func(v string) release.Release {
		return release.Release{Version: release.MustParseVersion(v), Components: []release.ComponentRef{{Name: "app", Version: release.MustParseVersion(v)}}}
	}
	cat, err := release.NewCatalog([]release.Release{rel("v1.0"), rel("v2.0")}, []release.ComponentVersion{*v1, *v2},
		[]release.UpgradePath{{Rules: []release.Rule{{From: release.MustParseConstraint("v1.0"), To: release.MustParseVersion("v2.0")}}}})
	require.NoError(t, err)
	router := components.NewRouter().Register(release.TypeHelm, r)
	e := runner.New(router, runner.WithFailurePolicy(runner.Rollback))
	plan, err := runner.NewPlan(cat, path.MustParseState("v1.0"), path.MustParseState("v2.0"), runner.ForExecutor(e))
	require.NoError(t, err, "plan-time validation: the chart resolves, helm can roll back")
	st, err := e.Execute(ctx, plan, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, record.RolledBack, st.Phase, "run phase (%s)", st.Message)
	assert.Contains(t, st.Hops[0].Components[0].Error, "65535")

	kc, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	svc, err := kc.CoreV1().Services("apps").Get(ctx, "app", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(80), svc.Spec.Ports[0].Port, "back at v1.0's port")
}

// Values templates have the manifest runner's template functions (sprig's
// and Helm's toYaml, through components.RenderText): quote, upper,
// toYaml, default.
func TestHelmValuesFunctions(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	r := helm.New(c.rc, helm.WithChartRoot("testdata"), helm.WithSettings(settings(t)),
		helm.WithValues(map[string]any{"site": "lab", "rest": map[string]any{"port": 8081}, "empty": ""}))
	cv := in(appVersion("v1.0", 80), "funcs")
	cv.Helm.Values = "greeting: {{ printf \"hello %s from %s\" .Component.Version .Values.site | upper | quote }}\n" +
		"{{ toYaml .Values.rest }}\nsize: {{ .Values.empty | default 2 }}\n"
	require.NoError(t, r.Validate(cv))
	require.NoError(t, r.Run(ctx, task(nil, cv)))
	assert.Equal(t, "HELLO V1.0 FROM LAB", c.greeting(t, "funcs"))
	svc, err := c.kc.CoreV1().Services("funcs").Get(ctx, "app", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(8081), svc.Spec.Ports[0].Port, "the port from toYaml")

	for _, tc := range []struct{ name, values, err string }{
		{"missing key", "a: {{ .Values.nope }}", `map has no entry for key "nope"`},
		{"unknown function", "a: {{ nope 1 }}", `function "nope" not defined`},
		{"env is not there", "a: {{ env \"HOME\" }}", `function "env" not defined`},
		{"not YAML", "a: [", "values do not parse as YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := appVersion("v1.0", 80)
			bad.Helm.Values = tc.values
			assert.ErrorContains(t, r.Validate(bad), tc.err)
		})
	}
}
