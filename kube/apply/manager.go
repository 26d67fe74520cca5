package apply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/hopdag/hopdag/components"
)

// Applier applies, prunes and waits for Kubernetes objects through one
// API server. It is a components.Applier, components.ReadyChecker,
// components.InventoryStore and components.ScopeResolver: give it to
// components.NewManifest.
//
// It is safe for concurrent use; it keeps no state between calls but the
// discovery cache of its REST mapper and, under WithDryRun, the namespaces
// it has reported created.
type Applier struct {
	dyn    dynamic.Interface
	meta   metadata.Interface
	disco  discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	cfg    config
	// dryRunNS is what a dry run has created of namespaces; only WithDryRun
	// fills it.
	dryRunNS dryRunNamespaces
}

type config struct {
	fieldManager string
	force        bool
	takeOver     bool
	dryRun       bool
	invNamespace string
	parallel     int
	report       func(ChangeSet)
	log          *slog.Logger
}

// Option configures New.
type Option func(*config)

// WithFieldManager sets the server-side apply field manager (default
// "hopdag"). A components.ApplyOptions FieldManager other than "hopdag"
// takes precedence.
func WithFieldManager(name string) Option { return func(c *config) { c.fieldManager = name } }

// WithForce makes every apply take ownership of fields another field
// manager owns (kubectl's --force-conflicts). Off by default: a conflict is
// a *ConflictError.
func WithForce(force bool) Option { return func(c *config) { c.force = force } }

// WithTakeOver makes every apply take over an object that exists labelled
// as another component's or another instance's (hopdag.io/component,
// hopdag.io/instance): it is applied with the labels of the component
// that applies it, reported Configured "(taken over from component C of
// instance I)". Off by default: such an object is an *OwnerError, and is
// not applied. The previous owner's inventory still lists the object, but
// its prune leaves it in place, since its labels are no longer that
// owner's.
//
// It is an option of its own, not part of WithForce: Force settles fields
// that another field manager (kubectl, an HPA, a controller) owns, which
// a run meets in the normal course of things; taking over another
// installation's object is a decision about who may later prune it, and
// one flag for both would have a run forced past a field conflict
// silently take over, and later prune, another installation's objects.
func WithTakeOver(takeOver bool) Option { return func(c *config) { c.takeOver = takeOver } }

// WithDryRun makes the Applier change nothing: applies are server-side
// dry runs (the API server validates and defaults them, admission runs),
// prunes and inventories are only reported, and readiness is reported at
// once. The ChangeSets say what a real run would do. A namespace a dry run
// reports created does not exist (or is being deleted), so the API server
// refuses to dry-run apply objects in it: the Applier remembers such
// namespaces, for as long as it lives, and reports the objects in them
// Created "(its namespace is created by this dry run; not checked by the
// server)". Use one Applier for one dry run: the namespaces one dry run
// creates are not there for another.
func WithDryRun() Option { return func(c *config) { c.dryRun = true } }

// WithInventoryNamespace sets the namespace of the inventory ConfigMaps
// (default "hopdag-system"; created when missing).
func WithInventoryNamespace(ns string) Option { return func(c *config) { c.invNamespace = ns } }

// WithParallelism bounds how many requests one call makes at once (default
// 8). 1 applies the objects of a stage strictly in the order given.
func WithParallelism(n int) Option { return func(c *config) { c.parallel = max(n, 1) } }

// WithReporter calls report with the ChangeSet of every Apply and Delete,
// from the goroutine that called them.
func WithReporter(report func(ChangeSet)) Option { return func(c *config) { c.report = report } }

// WithLogger sets the logger (default, and nil: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.log = l
	}
}

// New returns an Applier for the API server of cfg (from
// controller-runtime's manager.GetConfig(), or clientcmd). cfg is copied;
// when it sets no QPS the copy allows 200 requests a second (burst 400),
// client-go's default of 5 being made for controllers, not for applying a
// release.
func New(cfg *rest.Config, opts ...Option) (*Applier, error) {
	if cfg == nil {
		return nil, errors.New("apply: New with a nil *rest.Config")
	}
	c := config{fieldManager: "hopdag", invNamespace: "hopdag-system", parallel: 8,
		log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&c)
	}
	rc := rest.CopyConfig(cfg)
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 200, 400
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("apply: dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("apply: discovery client: %w", err)
	}
	md, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("apply: metadata client: %w", err)
	}
	disco := memory.NewMemCacheClient(dc)
	return &Applier{dyn: dyn, meta: md, disco: disco, mapper: restmapper.NewDeferredDiscoveryRESTMapper(disco), cfg: c}, nil
}

// mapping returns the REST mapping of group/kind, preferring version. A
// kind the cached discovery does not know (a CRD applied a moment ago)
// resets the cache and is looked up once more.
func (a *Applier) mapping(gk schema.GroupKind, version string) (*meta.RESTMapping, error) {
	m, err := a.mapper.RESTMapping(gk, version)
	if meta.IsNoMatchError(err) {
		a.mapper.Reset()
		m, err = a.mapper.RESTMapping(gk, version)
	}
	return m, err
}

// resource returns the client of the object's resource, in its namespace
// for a namespaced kind. It checks the object's scope against discovery.
func (a *Applier) resource(r components.Ref) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	m, err := a.mapping(schema.GroupKind{Group: r.Group, Kind: r.Kind}, r.Version)
	if err != nil {
		return nil, nil, &ObjectError{Object: r, Op: "map", Err: fmt.Errorf("%w; is its CRD installed (and applied before it)?", err)}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if r.Namespace == "" {
			return nil, nil, &ObjectError{Object: r, Op: "map", Err: errors.New("is namespaced but has no namespace")}
		}
		return a.dyn.Resource(m.Resource).Namespace(r.Namespace), m, nil
	}
	if r.Namespace != "" {
		return nil, nil, &ObjectError{Object: r, Op: "map", Err: fmt.Errorf("is cluster-scoped but has namespace %s; tell the Manifest with components.WithClusterScoped(%q)", r.Namespace, r.Kind+"."+r.Group)}
	}
	return a.dyn.Resource(m.Resource), m, nil
}

func (a *Applier) reportChanges(cs ChangeSet) {
	if a.cfg.report != nil && len(cs) > 0 {
		a.cfg.report(cs)
	}
}

// forEach runs fn for i in [0, n) with at most the Applier's parallelism
// at once, and returns the errors in index order. It starts no call once
// ctx has ended (that call's error is ctx.Err()).
func (a *Applier) forEach(ctx context.Context, n int, fn func(i int) error) []error {
	errs := make([]error, n)
	sem := make(chan struct{}, a.cfg.parallel)
	var wg sync.WaitGroup
	for i := range n {
		if err := ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(i)
		})
	}
	wg.Wait()
	var out []error
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	return out
}
