package helm_test

import (
	"cmp"
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	rv1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hopdag/hopdag/release"
)

// cluster is one API server that a test's cases share, each case in its
// own namespace.
type cluster struct {
	rc *rest.Config
	kc *kubernetes.Clientset
}

func newCluster(t *testing.T) *cluster {
	rc := apiServer(t)
	return &cluster{rc: rc, kc: mustClient(t, rc)}
}

func mustClient(t *testing.T, rc *rest.Config) *kubernetes.Clientset {
	t.Helper()
	kc, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	return kc
}

// greeting is the greeting of the chart's ConfigMap in ns, "" when there
// is none.
func (c *cluster) greeting(t *testing.T, ns string) string {
	t.Helper()
	cm, err := c.kc.CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	require.NoError(t, err)
	return cm.Data["greeting"]
}

func (c *cluster) storage(ns string) *storage.Storage {
	return storage.Init(driver.NewSecrets(c.kc.CoreV1().Secrets(ns)))
}

// revisions is release app's history in ns, oldest first.
func (c *cluster) revisions(t *testing.T, ns string) []*rv1.Release {
	t.Helper()
	hs, err := c.storage(ns).History("app")
	if err != nil {
		require.ErrorIs(t, err, driver.ErrReleaseNotFound)
		return nil
	}
	var out []*rv1.Release
	for _, h := range hs {
		out = append(out, h.(*rv1.Release))
	}
	slices.SortFunc(out, func(a, b *rv1.Release) int { return cmp.Compare(a.Version, b.Version) })
	return out
}

// in is cv with its release in namespace ns.
func in(cv *release.ComponentVersion, ns string) *release.ComponentVersion {
	c := *cv
	h := *cv.Helm
	h.Namespace = ns
	c.Helm = &h
	return &c
}
