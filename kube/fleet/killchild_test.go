package fleet_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hopdag/hopdag/kube/fleet"
)

// The kill test (kill_test.go) runs the fleet controller as separate OS
// processes: this test binary, re-executed with envFleetChild set, runs
// fleetChild instead of the tests (see TestMain). A child runs the
// UpgradeRollout controller alone, on the parent's API server, watching
// one namespace; the ClusterVersions' reconciler stays in the parent. It
// logs, as JSON lines appended to the file of envFleetLog (one write a
// line), "ready" once its caches are synced and its controller starting,
// and the fleet's own "fleet: started" line for each ClusterVersion it
// starts, each with its pid.
const (
	envFleetChild = "HOPDAG_FLEET_CHILD"     // the kubeconfig file
	envFleetNS    = "HOPDAG_FLEET_CHILD_NS"  // the fleet's namespace
	envFleetLog   = "HOPDAG_FLEET_CHILD_LOG" // the log of the children
)

// fleetChildMain runs a child and exits: it never returns to the tests.
func fleetChildMain() {
	if err := fleetChild(); err != nil {
		fmt.Fprintln(os.Stderr, "fleet child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func fleetChild() error {
	kc, err := os.ReadFile(os.Getenv(envFleetChild))
	if err != nil {
		return err
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return err
	}
	// A wave's starts go 16 patches at once: client-go's default rate
	// limit would make the kills land in its queue, not in the API.
	rc.QPS, rc.Burst = 200, 400
	ns := os.Getenv(envFleetNS)
	logf, err := os.OpenFile(os.Getenv(envFleetLog), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(logf, nil)).With("pid", os.Getpid())
	// No leader election: each child starts once the last is dead, and
	// at once, so it decides right after its predecessor's last writes,
	// the harder case for a controller that must not count on memory.
	mgr, err := ctrl.NewManager(rc, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		return err
	}
	if err := fleet.New(mgr.GetClient(), fleet.WithManifests(os.DirFS(catalogDir)), fleet.WithLogger(logger)).SetupWithManager(mgr); err != nil {
		return err
	}
	// A runnable that does not say otherwise goes with the controllers
	// (the leader-election group), which the manager starts once its
	// caches are synced.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		logger.Info("ready")
		<-ctx.Done()
		return nil
	})); err != nil {
		return err
	}
	return mgr.Start(context.Background())
}
