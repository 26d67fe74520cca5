package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"

	"k8s.io/apimachinery/pkg/types"
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
// checks the hop checks.
func wire(mgr ctrl.Manager, apply components.Applier, manifests fs.FS, handlers []string, checks []runner.Option, log *slog.Logger, webhook bool) error {
	inline := components.NewInline()
	for _, h := range handlers {
		inline.Register(h, runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
			log.Info("upgrading", "component", t.Component, "to", t.To.Version, "hop", t.Hop.Name())
			return nil // a real handler drives the component here
		}))
	}
	// Each ClusterVersion's objects are an installation of their own
	// (instanceOf), so that two ClusterVersions in one cluster never prune
	// or take over each other's objects.
	routerFor := func(cv types.NamespacedName) runner.Runner {
		return components.NewRouter().
			Register("inline", inline).
			Register("manifest", components.NewManifest(apply, components.WithInstance(instanceOf(cv)),
				components.WithValues(map[string]any{"registry": "registry.example"})))
	}

	// Each ClusterVersion's run is recorded on the API server, read and
	// written past the manager's cache.
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.QPS, cfg.Burst = 100, 200 // a checkpoint is a few requests: more than client-go's default 5/s
	direct, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	storeOf := func(cv types.NamespacedName) (state.Store, state.Lock) {
		s := store.New(direct, cv.Namespace, "hopdag-"+cv.Name)
		return s, s
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
// that is longer than an instance may be or holds a '.', "cv-" and a hash
// of it.
func instanceOf(cv types.NamespacedName) string {
	id := cv.Namespace + "-" + cv.Name
	if len(id) > 40 || strings.Contains(id, ".") {
		sum := sha256.Sum256([]byte(cv.String()))
		id = fmt.Sprintf("cv-%x", sum[:8])
	}
	return id
}
