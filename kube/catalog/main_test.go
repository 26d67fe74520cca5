package catalog_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// The API server of the package's integration tests: a real kube-apiserver
// and etcd on 127.0.0.1, started once by TestMain through envtest from the
// binaries in KUBEBUILDER_ASSETS, with the CRDs of kube/config/crd (the
// ones go generate ./api/... writes) installed. The unit tests run
// without it.
var (
	cfg        *rest.Config
	skipReason string
)

const howTo = `no kube-apiserver: run eval "$(tools/env.sh kube)" from the repository root to set KUBEBUILDER_ASSETS`

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "kube/catalog: CI=true and KUBEBUILDER_ASSETS is unset: "+howTo)
			return 1
		}
		skipReason = howTo
		return m.Run()
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:        []string{"../config/crd"},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 3 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	var err error
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "kube/catalog: start the API server:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	return m.Run()
}

// newClient skips the test without an API server (never under CI=true:
// TestMain fails first) and returns a client of the catalog kinds.
func newClient(t *testing.T) client.Client {
	t.Helper()
	if cfg == nil {
		t.Skip(skipReason)
	}
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1alpha1.AddToScheme(s))
	c, err := client.New(cfg, client.Options{Scheme: s})
	require.NoError(t, err)
	return c
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "catalog-"}}
	require.NoError(t, c.Create(context.Background(), ns))
	return ns.Name
}
