package helm_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/helm"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// A helm component waits for what its chart installs to be ready (kstatus,
// Helm's status watcher) within its spec.timeout: a Deployment, which
// never becomes ready without a kubelet, makes the upgrade fail when the
// timeout ends, naming it, and the Rollback policy takes the release back
// to the from-version's revision.
func TestHelmReadinessTimeout(t *testing.T) {
	rc := apiServer(t)
	ctx := context.Background()
	r := helm.New(rc, helm.WithChartRoot("testdata"), helm.WithValues(map[string]any{"site": "lab"}), helm.WithSettings(settings(t)))
	v1 := appVersion("v1.0", 80)
	require.NoError(t, r.Run(ctx, task(nil, v1)), "the cluster runs v1.0, without a Deployment")

	v2 := appVersion("v2.0", 8080)
	v2.Timeout = release.D(3 * time.Second)
	v2.Helm.Values += "deployment: v2.0\n"
	rel := func(v string) release.Release {
		return release.Release{Version: release.MustParseVersion(v), Components: []release.ComponentRef{{Name: "app", Version: release.MustParseVersion(v)}}}
	}
	cat, err := release.NewCatalog([]release.Release{rel("v1.0"), rel("v2.0")}, []release.ComponentVersion{*v1, *v2},
		[]release.UpgradePath{{Rules: []release.Rule{{From: release.MustParseConstraint("v1.0"), To: release.MustParseVersion("v2.0")}}}})
	require.NoError(t, err)
	e := runner.New(components.NewRouter().Register(release.TypeHelm, r), runner.WithFailurePolicy(runner.Rollback))
	plan, err := runner.NewPlan(cat, path.MustParseState("v1.0"), path.MustParseState("v2.0"), runner.ForExecutor(e))
	require.NoError(t, err)
	start := time.Now()
	st, err := e.Execute(ctx, plan, nil)
	took := time.Since(start)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	assert.GreaterOrEqual(t, took, 3*time.Second, "the upgrade waited for the Deployment until its timeout")
	assert.Equal(t, record.RolledBack, st.Phase, "run phase (%s)", st.Message)
	cs := st.Hops[0].Components[0]
	assert.Contains(t, cs.Error, "; not ready: Deployment.apps apps/app: InProgress: Replicas: 0/1", "the error names what was not ready, with kstatus's word on it: %s", cs.Error)

	kc, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	svc, err := kc.CoreV1().Services("apps").Get(ctx, "app", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(80), svc.Spec.Ports[0].Port, "back at v1.0's port")
	_, err = kc.AppsV1().Deployments("apps").Get(ctx, "app", metav1.GetOptions{})
	assert.Error(t, err, "v2.0's Deployment is gone with the rollback")
}
