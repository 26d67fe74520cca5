package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"log/slog"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/kube/store"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// wire registers the ClusterVersion reconciler with mgr: inline handlers
// for the Go-driven components, a manifest runner for the rest, and each
// ClusterVersion's run record in kube/store. manifests holds the files that the
// catalog's ComponentVersions name; handlers are the inline handler names,
// checks the hop checks. applierFor gives the Applier of a cluster: of
// the kubeconfig a ClusterVersion's spec.clusterRef names, or, for nil,
// of the operator's own cluster.
func wire(mgr ctrl.Manager, applierFor func(cluster *rest.Config) (components.Applier, error), manifests fs.FS, handlers []string, checks []runner.Option, log *slog.Logger, webhook bool) error {
	inline := components.NewInline()
	for _, h := range handlers {
		inline.Register(h, runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
			log.Info("upgrading", "component", t.Component, "to", t.To.Version, "hop", t.Hop.Name())
			return nil // a real handler drives the component here
		}))
	}
	// Each ClusterVersion's objects are an installation of their own
	// (instanceOf), so that two ClusterVersions in one cluster never prune
	// or take over each other's objects. They go to the cluster its
	// spec.clusterRef names, if any.
	routerFor := func(cv types.NamespacedName, cluster *rest.Config) (runner.Runner, error) {
		apply, err := applierFor(cluster)
		if err != nil {
			return nil, err
		}
		return components.NewRouter().
			Register("inline", inline).
			Register("manifest", components.NewManifest(apply, components.WithInstance(instanceOf(cv)),
				components.WithValues(map[string]any{"registry": "registry.example"}))), nil
	}

	// Each ClusterVersion's run is recorded on the API server, read and
	// written past the manager's cache.
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.QPS, cfg.Burst = 100, 200 // a checkpoint is a few requests: more than client-go's default 5/s
	direct, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	storeOf := func(cv types.NamespacedName) (state.Store, state.Lock, error) {
		s, err := store.New(direct, cv.Namespace, storeName(cv))
		return s, s, err
	}
	r := controller.New(mgr.GetClient(), nil, storeOf,
		controller.WithRunnerFor(routerFor),
		controller.WithManifests(manifests),
		controller.WithExecutorOptions(append(checks, runner.WithMaxParallel(8))...),
		controller.WithLogger(log))
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	if webhook {
		return controller.NewValidator(mgr.GetAPIReader(), manifests).SetupWebhookWithManager(mgr)
	}
	return nil
}

// instanceOf is the instance of cv's objects: NAMESPACE-NAME, or, when
// that is longer than an instance may be (40) or holds a '.', "cv-" and a
// hash of cv.
func instanceOf(cv types.NamespacedName) string {
	return nameOf(cv, "", cv.Namespace+"-"+cv.Name, validation.IsDNS1123Label, 40)
}

// storeName names cv's run record (kube/store): hopdag-NAME, or, when
// that is too long for a label value (63), "hopdag-cv-" and a hash of cv.
func storeName(cv types.NamespacedName) string {
	return nameOf(cv, "hopdag-", cv.Name, validation.IsDNS1123Subdomain, validation.LabelValueMaxLength)
}

// nameOf is a name made from cv's for a place that takes names valid
// says are valid, of at most limit characters: prefix+id when it is one,
// else prefix, "cv-" and a hash of cv. Every name this operator derives
// from a ClusterVersion's goes through it.
func nameOf(cv types.NamespacedName, prefix, id string, valid func(string) []string, limit int) string {
	if n := prefix + id; len(n) <= limit && len(valid(n)) == 0 {
		return n
	}
	sum := sha256.Sum256([]byte(cv.String()))
	return fmt.Sprintf("%scv-%x", prefix, sum[:8])
}
