package main

import (
	"context"
	"io/fs"
	"log/slog"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// wire registers the ClusterVersion reconciler with mgr: inline handlers
// for the Go-driven components, a manifest runner for the rest, and one
// state store per ClusterVersion. manifests holds the files that the
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
	router := components.NewRouter().
		Register("inline", inline).
		Register("manifest", components.NewManifest(apply, components.WithValues(map[string]any{"registry": "registry.example"})))

	var mu sync.Mutex
	stores := map[types.NamespacedName]*state.Memory{} // kube/store keeps them on the API server
	storeOf := func(cv types.NamespacedName) (state.Store, state.Lock) {
		mu.Lock()
		defer mu.Unlock()
		if stores[cv] == nil {
			stores[cv] = state.NewMemory()
		}
		return stores[cv], stores[cv]
	}
	r := controller.New(mgr.GetClient(), router, storeOf,
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
