package rollout_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/apply"
	"github.com/hopdag/hopdag/kube/internal/controlplane"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// nodes is the number of fake nodes: a DaemonSet's pods, one per node.
const nodes = 5

// cp is the control plane the tests share.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	// kube/store's controller-runtime client logs through
	// controller-runtime's global logger, which complains when unset.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(controlplane.Main(m, &cp, controlplane.WithNodes(nodes)))
}

var nsSeq atomic.Int64

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// setup returns a clientset and a namespace of the test's own.
func setup(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	cp.Need(t)
	cs, err := kubernetes.NewForConfig(cp.Config())
	require.NoError(t, err)
	name := nonName.ReplaceAllString(strings.ToLower(t.Name()), "-")
	name = fmt.Sprintf("%.40s-%d", strings.Trim(name, "-"), nsSeq.Add(1))
	_, err = cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return cs, name
}

// manifest is a components.Manifest over an Applier whose inventories
// live in the test's namespace, the way components' manifest runner is
// used in a hopdag run.
func manifest(t *testing.T, ns string) *components.Manifest {
	t.Helper()
	a, err := apply.New(cp.Config(), apply.WithInventoryNamespace(ns))
	require.NoError(t, err)
	return components.NewManifest(a)
}

// component is version v of a manifest component with one health check
// on the objects of kind, polled every 100ms until timeout.
func component(name, version, ns, kind, tpl string, timeout time.Duration) *release.ComponentVersion {
	return &release.ComponentVersion{
		Name: name, Version: release.MustParseVersion(version), Type: release.TypeManifest,
		Params:    map[string]string{"namespace": ns},
		Manifests: []release.Manifest{{Name: name + ".yaml", Template: tpl}},
		HealthChecks: []release.HealthCheck{{
			Name:     name + "-ready",
			Timeout:  release.Duration{Duration: timeout},
			Interval: release.Duration{Duration: 100 * time.Millisecond},
			Params:   map[string]string{"kind": kind},
		}},
	}
}

// run runs one hop of a component (from nil: its install) and returns
// when the Manifest does, with how long it took.
func run(t *testing.T, m *components.Manifest, from, to *release.ComponentVersion) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	err := m.Run(context.Background(), runner.Task{Component: to.Name, From: from, To: to, Attempt: 1})
	took := time.Since(start)
	what := "install " + to.Version.String()
	if from != nil {
		what = from.Version.String() + " -> " + to.Version.String()
	}
	t.Logf("%s %s: %s (err: %v)", to.Name, what, took.Round(time.Millisecond), err)
	return took, err
}
