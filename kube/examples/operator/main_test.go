package main

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hopdag/hopdag/kube/internal/controlplane"
)

// walkNodes is the number of fake nodes of the control plane the
// walk-through test upgrades: each DaemonSet of the sample catalog rolls
// out on all of them.
const walkNodes = 5

// cp is the control plane (kube/internal/controlplane) of the tests in
// which workloads really roll out: the walk-through of docs/operator.md and the image
// test. The other tests start their own API server, or none.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	// main gives controller-runtime the operator's logger; the tests'
	// managers log through theirs, and controller-runtime's own log is
	// discarded (it complains when never set).
	ctrl.SetLogger(logr.Discard())
	os.Exit(controlplane.Main(m, &cp, controlplane.WithNodes(walkNodes)))
}
