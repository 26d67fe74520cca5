// Command operator is a runnable hopdag upgrade operator: a
// controller-runtime manager with the ClusterVersion reconciler, simulated
// inline handlers, and a manifest runner: kube/apply's server-side apply
// against a cluster, an in-memory recorder in the demo (its API server runs
// no kubelet, so no Deployment would become ready).
//
// Against a cluster (its kubeconfig from --kubeconfig or KUBECONFIG), with
// the CRDs of kube/config/crd and a catalog applied to a namespace:
//
//	kubectl apply -k kube/config/crd
//	kubectl create namespace demo
//	kubectl apply -n demo -f testdata/catalog -f testdata/catalog/components
//	kubectl apply -n demo -f clusterversion.yaml  # spec.installedVersion and spec.desiredVersion
//	cd kube && go run ./examples/operator -catalog ../testdata/catalog
//
// Each ClusterVersion's manifests are an instance of their own (see
// instanceOf in wire.go), so several ClusterVersions can share a cluster.
//
// With -webhook-cert-dir DIR it also serves the validating webhook of
// kube/config/webhook (DIR holds tls.crt and tls.key, e.g. from
// cert-manager; point the webhook configuration's clientConfig at this
// process), and with -leader-elect only the replica holding the leader
// Lease acts.
//
// The demo starts its own API server from KUBEBUILDER_ASSETS (the binaries
// tools/env.sh builds), applies the CRDs, the sample catalog and a
// ClusterVersion upgrading v26.06-rc.2 to v26.09, and prints the
// ClusterVersion as the upgrade goes:
//
//	eval "$(tools/env.sh kube)" && cd kube && go run ./examples/operator -demo -catalog ../testdata/catalog
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/apply"
	"github.com/hopdag/hopdag/kube/catalog"
	"github.com/hopdag/hopdag/kube/fleet"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

func main() {
	catalogDir := flag.String("catalog", "testdata/catalog", "catalog directory: its manifest files, handler and check names")
	demo := flag.Bool("demo", false, "start an API server from KUBEBUILDER_ASSETS, apply the catalog and a ClusterVersion, and upgrade")
	leaderElect := flag.Bool("leader-elect", false, "only the replica holding the leader Lease acts")
	leaderNS := flag.String("leader-election-namespace", "default", "namespace of the leader Lease")
	certDir := flag.String("webhook-cert-dir", "", "serve the validating webhook (kube/config/webhook) with tls.crt and tls.key from this directory; the demo always serves it")
	flag.StringVar(&serving.metrics, "metrics-bind-address", "0", "address of the Prometheus /metrics endpoint (e.g. :8080); 0 serves none")
	flag.StringVar(&serving.probes, "health-probe-bind-address", "0", "address of the /healthz and /readyz endpoints (e.g. :8081); 0 serves none")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler()))
	// client-go logs through klog: into the same logger, not klog's own
	// format on stderr.
	klog.SetSlogLogger(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *catalogDir, *demo, *leaderElect, *leaderNS, *certDir, []string{"cluster"}, log); err != nil {
		fmt.Fprintln(os.Stderr, "operator:", err)
		os.Exit(1)
	}
}

// serving is where the manager serves metrics and probes (flags).
var serving struct{ metrics, probes string }

// run runs the operator; with demo, its own API server and an upgrade of
// the ClusterVersions demo/NAME of names.
func run(ctx context.Context, dir string, demo, leaderElect bool, leaderNS, certDir string, names []string, log *slog.Logger) error {
	cat, err := release.LoadDir(dir)
	if err != nil {
		return err
	}
	var cfg *rest.Config
	serve := certDir != ""
	hook := webhook.Options{CertDir: certDir}
	if demo {
		// The demo's API server calls the webhook this process serves,
		// with a certificate envtest makes.
		env := &envtest.Environment{CRDDirectoryPaths: []string{configDir("crd")}, ErrorIfCRDPathMissing: true,
			WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{configDir("webhook")}}}
		if cfg, err = env.Start(); err != nil {
			return fmt.Errorf("starting the demo API server (set KUBEBUILDER_ASSETS: eval \"$(tools/env.sh kube)\"): %w", err)
		}
		defer func() { _ = env.Stop() }()
		wio := &env.WebhookInstallOptions
		hook, serve = webhook.Options{Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir}, true
	} else if cfg, err = ctrl.GetConfig(); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: cmp.Or(serving.metrics, "0")},
		HealthProbeBindAddress: cmp.Or(serving.probes, "0"),
		LeaderElection:         leaderElect, LeaderElectionID: "hopdag-operator", LeaderElectionNamespace: leaderNS,
		// A stopping leader gives up the Lease at once: the next replica
		// resumes the run from its record without waiting for it to expire.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 webhook.NewServer(hook),
	})
	if err != nil {
		return err
	}
	// Live while the process runs; ready once the informers of every kind
	// the controllers watch have synced (GetInformer blocks until then: a
	// cache with no informer yet would count as synced), and, when it
	// serves the webhook, once that listens.
	// (GetWebhookServer adds the server to the manager: only when it serves.)
	webhookStarted := healthz.Ping
	if serve {
		webhookStarted = mgr.GetWebhookServer().StartedChecker()
	}
	ready := healthz.Checker(func(req *http.Request) error {
		for _, obj := range []client.Object{&v1alpha1.ClusterVersion{}, &v1alpha1.Release{}, &v1alpha1.ComponentVersion{}, &v1alpha1.UpgradePath{}, &v1alpha1.UpgradeRollout{}} {
			if _, err := mgr.GetCache().GetInformer(req.Context(), obj); err != nil {
				return fmt.Errorf("the cache of %T has not synced: %w", obj, err)
			}
		}
		return webhookStarted(req)
	})
	if err := errors.Join(mgr.AddHealthzCheck("ping", healthz.Ping), mgr.AddReadyzCheck("ready", ready)); err != nil {
		return err
	}
	// Against a real cluster the manifests are applied with server-side
	// apply (kube/apply). The demo's API server runs no kubelet, so no
	// Deployment of the catalog would ever become ready: there the
	// manifests go to an in-memory Recorder instead.
	// A ClusterVersion whose spec.clusterRef names another cluster gets
	// an Applier of that cluster's.
	var applier components.Applier = components.NewRecorder()
	if !demo {
		if applier, err = apply.New(cfg, apply.WithFieldManager("hopdag-operator")); err != nil {
			return err
		}
	}
	applierFor := func(cluster *rest.Config) (components.Applier, error) {
		if cluster == nil || demo {
			return applier, nil
		}
		return apply.New(cluster, apply.WithFieldManager("hopdag-operator"))
	}
	if err := wire(mgr, applierFor, os.DirFS(dir), handlers(cat), checks(cat), log, serve); err != nil {
		return err
	}
	// UpgradeRollouts: fleets of ClusterVersions upgraded in waves.
	if err := fleet.New(mgr.GetClient(), fleet.WithLogger(log)).SetupWithManager(mgr); err != nil {
		return err
	}
	if !demo {
		return mgr.Start(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(ctx) }()
	if err := upgradeDemo(ctx, cfg, scheme, dir, names); err != nil {
		return err
	}
	cancel()
	return <-errc
}

// upgradeDemo applies the catalog and the ClusterVersions of names to
// namespace demo and prints each ClusterVersion until its upgrade ends.
func upgradeDemo(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, dir string, names []string) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	const ns = "demo"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	objs, err := catalog.ReadDir(dir)
	if err != nil {
		return err
	}
	var all []client.Object
	for i := range objs.Releases {
		all = append(all, &objs.Releases[i])
	}
	for i := range objs.Components {
		all = append(all, &objs.Components[i])
	}
	for i := range objs.UpgradePaths {
		all = append(all, &objs.UpgradePaths[i])
	}
	for _, name := range names {
		all = append(all, &v1alpha1.ClusterVersion{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       v1alpha1.ClusterVersionSpec{InstalledVersion: "v26.06-rc.2", DesiredVersion: "v26.09"},
		})
	}
	for _, o := range all {
		o.SetNamespace(ns)
		if err := c.Create(ctx, o); err != nil {
			return err
		}
	}
	for _, name := range names {
		prefix := ""
		if len(names) > 1 {
			prefix = name + ": "
		}
		if err := watchDemo(ctx, c, ns, name, prefix); err != nil {
			return err
		}
	}
	return nil
}

// watchDemo prints the ClusterVersion ns/name, each line after prefix,
// until its upgrade ends.
func watchDemo(ctx context.Context, c client.Client, ns, name, prefix string) error {
	last := ""
	for {
		var cv v1alpha1.ClusterVersion
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cv); err != nil {
			return err
		}
		if cv.Status.Phase == "" {
			// Not reconciled yet: an empty current version and phase
			// would only look like a fault.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		line := prefix + fmt.Sprintf("desired %s  current %s  phase %s", cv.Spec.DesiredVersion, cv.Status.CurrentVersion, cv.Status.Phase)
		if f := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionFailing); f != nil && f.Status == metav1.ConditionTrue {
			line += "\n  failing: " + f.Reason + ": " + f.Message
		}
		if p := cv.Status.Plan; p != nil {
			line += fmt.Sprintf("  progress %s  hop %s", p.Progress.Summary, p.Hop)
		}
		if line != last {
			fmt.Println(line)
			last = line
		}
		if cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == string(cv.Spec.DesiredVersion) && len(cv.Status.History) > 0 {
			fmt.Printf("%shistory: %s -> %s %s\n", prefix, cv.Status.History[0].From, cv.Status.History[0].To, cv.Status.History[0].State)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// configDir is kube/config/NAME from the kube module, the repository root
// or this directory.
func configDir(name string) string {
	for _, d := range []string{"config/", "kube/config/", "../../config/"} {
		if _, err := os.Stat(d + name); err == nil {
			return d + name
		}
	}
	return filepath.Join("kube", "config", name)
}

// handlers are the inline handler names of the catalog, sorted.
func handlers(c *release.Catalog) []string {
	var out []string
	for _, cv := range c.Components {
		if cv.Handler != "" && !slices.Contains(out, cv.Handler) {
			out = append(out, cv.Handler)
		}
	}
	slices.Sort(out)
	return out
}

// checks makes every hop check the catalog names pass (simulated).
func checks(c *release.Catalog) []runner.Option {
	var names []string
	for _, t := range c.Tracks() {
		for _, r := range c.Rules(t) {
			for _, ch := range append(slices.Clone(r.PreChecks), r.PostChecks...) {
				if !slices.Contains(names, ch.Name) {
					names = append(names, ch.Name)
				}
			}
		}
	}
	slices.Sort(names)
	var out []runner.Option
	for _, n := range names {
		out = append(out, runner.WithCheck(n, func(context.Context, runner.CheckTask) error { return nil }))
	}
	return out
}
