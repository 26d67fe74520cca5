package components

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// Manifest is a runner.Runner for components of type manifest: it renders
// the component's manifests and hands the objects to an Applier
// (openFuyao's ClusterApplier).
//
// Rendering: each manifest is a text/template executed with
//
//	.Component.Name, .Component.Version, .Component.Params  the target version
//	.From    the version before the hop ("" for a new component)
//	.Hop     the hop, "v26.06-rc.2 -> v26.06-rc.3"
//	.Values  the values given with WithValues (an image registry mirror...)
//
// A missing param or value is an error (missingkey=error), not an empty
// string. The output is cut into documents at "---" lines; each must be an
// object with apiVersion, kind and metadata.name, and no object may be
// rendered twice. Every problem of every manifest is reported at once, each
// naming the manifest, the document (from 1) and its line.
//
// Identity and ownership: a namespaced object rendered without a namespace
// gets the component's "namespace" param, else the Manifest's namespace
// (WithNamespace, "default" when not set); an object's identity is taken
// after that (group, kind, namespace, name). Which kinds are namespaced is
// known for the built-in kinds and the CRDs of the same render, and for the
// kinds given with WithClusterScoped; when the Applier is a ScopeResolver
// (kube/apply's asks the cluster's discovery), it is asked about the
// others, so that a custom resource whose CRD another component installed
// is cluster-scoped as its CRD says. A kind nothing knows (its CRD is not
// installed yet: at plan time, before the hop that installs it) is
// namespaced. Every object is applied with the ownership labels
// (LabelComponent, LabelInstance, LabelManagedBy).
//
// Run, in order:
//  1. renders the target version; nothing is applied when it fails;
//  2. when the Applier is an InventoryStore, reads the instance's
//     inventories: an object another component's inventory holds is a
//     *SharedObjectError naming both, and nothing is applied; then records
//     the union of the previous inventory and the new objects, so that a
//     crash before the prune forgets nothing;
//  3. applies the objects: Namespaces, then CustomResourceDefinitions,
//     then the rest in declared order;
//  4. polls the component's health checks through the Applier's
//     ReadyChecker, one after the other, each every Interval (default 5s)
//     until ready or Timeout (default 5m);
//  5. prunes: deletes the objects of the previous inventory that the
//     target does not render, each only while it is still labelled as this
//     component's: other objects first (in reverse inventory order), then
//     CustomResourceDefinitions, then Namespaces. A Namespace or CRD whose
//     deletion would take live objects with it (another component's or
//     installation's, or this version's own) is left in place, the
//     Applier reporting it skipped with what it holds; then records the
//     new inventory.
//     Pruning comes last so that a version that never gets ready leaves
//     the old objects in place. Old templates are never rendered again:
//     a value only they used is not needed any more.
//
// An Applier that is not an InventoryStore never prunes.
//
// Lifecycle phases: a component that declares phases with manifests
// (release.LifecyclePhase.Manifests; drain, upgrade, rollout...) has them
// run one at a time through RunPhase, which the Router calls for each
// manifest phase in order. A phase applies its own objects, owned by the
// component like any other, and records them in the inventory before it
// applies them (steps 1 to 3). The last manifest phase then waits for the
// component's health checks and prunes (steps 4 and 5), against every
// object the version's phases render: what the version leaves behind is
// the merge of its phases' objects, an object that two phases render
// (traffic at weight 0 in drain, 100 in rollout) being the later phase's.
// Render, Validate, ValidateHop and Rollback see that merge, so rolling
// back to or from a phased version applies its end state in one step.
//
// A Manifest holds no state between runs and is safe for concurrent use if
// its Applier is.
type Manifest struct {
	applier   Applier
	values    map[string]any
	opts      ApplyOptions
	instance  string
	namespace string
	cluster   map[string]bool
}

// ManifestOption configures NewManifest.
type ManifestOption func(*Manifest)

// WithValues sets the values templates see as .Values. The map is copied
// one level deep; do not modify the values it holds afterwards.
func WithValues(values map[string]any) ManifestOption {
	return func(m *Manifest) { m.values = maps.Clone(values) }
}

// WithApplyOptions sets the options passed to every Apply. A FieldManager
// left empty is "hopdag".
func WithApplyOptions(o ApplyOptions) ManifestOption {
	return func(m *Manifest) { m.opts = o }
}

// WithInstance names the installation the components belong to (a cluster,
// a catalog instance): the LabelInstance value and the inventories' key.
// Two instances never prune each other's objects. The default is
// DefaultInstance.
//
// An instance is 1 to 63 lowercase letters, digits and '-', starting and
// ending with a letter or digit: it is a label value and part of the
// inventories' names (hopdag.INSTANCE.COMPONENT in kube/apply, so a '.'
// would let two instances share one). ValidateHop (plan time) and Run
// refuse another; "" is DefaultInstance.
func WithInstance(id string) ManifestOption {
	return func(m *Manifest) {
		if id == "" {
			id = DefaultInstance
		}
		m.instance = id
	}
}

// checkInstance says what is wrong with the instance, or nil.
func checkInstance(id string) error {
	ok := len(id) >= 1 && len(id) <= 63
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		ok = alnum || c == '-' && i > 0 && i < len(id)-1
	}
	if ok {
		return nil
	}
	return fmt.Errorf("WithInstance(%q): want 1 to 63 lowercase letters, digits and '-', starting and ending with a letter or digit (an instance is a label value and part of the inventories' names, hopdag.INSTANCE.COMPONENT)", id)
}

// WithNamespace sets the namespace of namespaced objects that set none and
// whose component has no "namespace" param; the default is "default".
func WithNamespace(ns string) ManifestOption {
	return func(m *Manifest) { m.namespace = ns }
}

// WithClusterScoped names custom kinds, as "Kind.group", that are
// cluster-scoped although no CRD of the same render says so.
func WithClusterScoped(kinds ...string) ManifestOption {
	return func(m *Manifest) {
		if m.cluster == nil {
			m.cluster = map[string]bool{}
		}
		for _, k := range kinds {
			m.cluster[k] = true
		}
	}
}

// NewManifest returns a Manifest that applies through a.
func NewManifest(a Applier, opts ...ManifestOption) *Manifest {
	if a == nil {
		panic("components: NewManifest with a nil Applier")
	}
	m := &Manifest{applier: a, instance: DefaultInstance, namespace: "default"}
	for _, o := range opts {
		o(m)
	}
	if m.opts.FieldManager == "" {
		m.opts.FieldManager = "hopdag"
	}
	return m
}

// Render returns the objects of t.To in apply order, namespaces defaulted,
// YAML as rendered (without the ownership labels Run adds). Errors are
// *Error values with Op "render", runner.Permanent but for a *ScopeError.
func (m *Manifest) Render(t runner.Task) ([]Object, error) {
	if t.To == nil {
		return nil, noTarget(t)
	}
	objs, err := m.render(t.To, newData(t.To, fromVersion(t), hopName(t), m.values))
	if err != nil {
		return nil, renderFailed(t.To, err)
	}
	return objs, nil
}

// renderFailed is the error of a render at run time: runner.Permanent, as
// rendering again gives the same, but for a *ScopeError (a ScopeResolver's
// lookup that failed), which a retry may get past.
func renderFailed(cv *release.ComponentVersion, err error) error {
	err = wrap(cv, "render", err)
	if _, ok := errors.AsType[*ScopeError](err); ok {
		return err
	}
	return runner.Permanent(err)
}

// render renders what cv leaves behind: its manifests, or, when it
// declares lifecycle phases, the merge of its manifest phases' objects in
// phase order (an object a later phase renders again is that phase's).
func (m *Manifest) render(cv *release.ComponentVersion, data templateData) ([]Object, error) {
	if len(cv.Phases) == 0 {
		return m.renderManifests(cv, cv.Manifests, data)
	}
	var (
		all  []Object
		at   = map[objectKey]int{}
		errs []error
	)
	for _, p := range cv.Phases {
		if len(p.Manifests) == 0 {
			continue
		}
		objs, err := m.renderManifests(cv, p.Manifests, data)
		if err != nil {
			errs = append(errs, annotate(err, "phase %s", p.Name))
			continue
		}
		for _, o := range objs {
			if i, ok := at[o.key()]; ok {
				all[i] = o
				continue
			}
			at[o.key()] = len(all)
			all = append(all, o)
		}
	}
	if err := join(errs); err != nil {
		return nil, err
	}
	if len(at) == 0 && lastManifestPhase(cv) == "" {
		return nil, ErrNoManifests
	}
	sortObjects(all)
	return all, nil
}

// renderManifests renders ms, manifests of cv. When the Applier is a
// ScopeResolver and it says that kinds of the objects are cluster-scoped,
// ms are rendered again with those kinds added to WithClusterScoped's, so
// that namespaces are defaulted, checked and compared for duplicates as
// for any cluster-scoped kind. A first render that fails is returned as it
// is: an assumed namespaced kind never hides a problem, at worst it names
// a cluster-scoped object that sets a namespace as a duplicate.
func (m *Manifest) renderManifests(cv *release.ComponentVersion, ms []release.Manifest, data templateData) ([]Object, error) {
	sc := scoping{ns: m.namespaceFor(cv.Params), extra: m.cluster}
	objs, err := renderObjects(cv, ms, data, sc)
	r, ok := m.applier.(ScopeResolver)
	if err != nil || !ok {
		return objs, err
	}
	cluster, err := resolveScopes(r, objs, m.cluster)
	if err != nil || cluster == nil {
		return objs, err
	}
	maps.Copy(cluster, m.cluster)
	sc.extra = cluster
	return renderObjects(cv, ms, data, sc)
}

// Run renders, applies, waits for readiness and prunes (see Manifest).
// A rendering error and a shared object are runner.Permanent; the
// Applier's errors, its ScopeResolver's included, are not.
func (m *Manifest) Run(ctx context.Context, t runner.Task) error {
	objs, err := m.Render(t)
	if err != nil {
		return err
	}
	return m.apply(ctx, t, objs, nonNil(objs))
}

// nonNil is objs, or an empty slice: apply's final set, which prunes also
// when the version renders no object at all.
func nonNil(objs []Object) []Object {
	if objs == nil {
		return []Object{}
	}
	return objs
}

// RunPhase runs the manifest phase of t.To named phase (see Manifest): it
// applies the phase's objects, and when it is the version's last manifest
// phase it also waits for the health checks and prunes. A phase that does
// not exist or has no manifests, and a rendering error, are
// runner.Permanent (a *ScopeError is not).
func (m *Manifest) RunPhase(ctx context.Context, t runner.Task, phase string) error {
	cv := t.To
	if cv == nil {
		return noTarget(t)
	}
	p, ok := cv.Phase(phase)
	if !ok || len(p.Manifests) == 0 {
		return runner.Permanent(wrap(cv, "run", fmt.Errorf("%s has no manifest phase %q", cv.Key(), phase)))
	}
	data := newData(cv, fromVersion(t), hopName(t), m.values)
	objs, err := m.renderManifests(cv, p.Manifests, data)
	if err != nil {
		return renderFailed(cv, fmt.Errorf("phase %s: %w", phase, err))
	}
	var final []Object // nil: not the last manifest phase, nothing to prune yet
	if lastManifestPhase(cv) == phase {
		if final, err = m.render(cv, data); err != nil {
			return renderFailed(cv, err)
		}
		final = nonNil(final)
	}
	return m.apply(ctx, t, objs, final)
}

// lastManifestPhase is the name of cv's last phase with manifests.
func lastManifestPhase(cv *release.ComponentVersion) string {
	for i := len(cv.Phases) - 1; i >= 0; i-- {
		if len(cv.Phases[i].Manifests) > 0 {
			return cv.Phases[i].Name
		}
	}
	return ""
}

// apply owns and applies objs; when final is not nil (the objects the
// version renders in all: objs for a component without phases) it then
// waits for the health checks against final and prunes what the previous
// inventory holds and final does not.
func (m *Manifest) apply(ctx context.Context, t runner.Task, objs, final []Object) error {
	var err error
	cv, log := t.To, logger(t)
	fail := func(op string, err error) error {
		return &Error{Component: cv.Name, Version: cv.Version.Original(), Op: op, Err: err}
	}
	if err := checkInstance(m.instance); err != nil {
		return runner.Permanent(fail("apply", err))
	}
	labels := OwnerLabels(m.instance, cv.Name)
	for i, o := range objs {
		if objs[i], err = own(o, labels); err != nil {
			return runner.Permanent(fail("render", err))
		}
	}
	rc, canCheck := m.applier.(ReadyChecker)
	if len(cv.HealthChecks) > 0 && !canCheck {
		return runner.Permanent(fail("ready", fmt.Errorf("%w (%T)", ErrNoReadyChecker, m.applier)))
	}
	if err := ctx.Err(); err != nil {
		return fail("apply", err)
	}

	refs := refsOf(objs)
	store, pruning := m.applier.(InventoryStore)
	var prev Inventory
	if pruning {
		invs, err := store.Inventories(ctx, m.instance)
		if err != nil {
			return fail("inventory", err)
		}
		if err := join(claims(cv.Name, refs, invs)); err != nil {
			return runner.Permanent(fail("apply", err))
		}
		for _, inv := range invs {
			if inv.Component == cv.Name {
				prev = inv
			}
		}
		if err := store.SaveInventory(ctx, m.inventory(cv, union(prev.Objects, refs))); err != nil {
			return fail("inventory", err)
		}
	}
	if len(objs) > 0 {
		if err := m.applier.Apply(ctx, objs, m.opts); err != nil {
			return fail("apply", err)
		}
	}
	log.Debug("applied objects", "objects", len(objs))
	if final == nil {
		return nil
	}
	if len(cv.HealthChecks) > 0 {
		if err := waitReady(ctx, rc, cv.HealthChecks, final, t.Waiting); err != nil {
			return fail("ready", err)
		}
		log.Debug("component ready", "checks", len(cv.HealthChecks))
	}
	if !pruning {
		return nil
	}
	refs = refsOf(final)
	if gone := stale(prev.Objects, refs); len(gone) > 0 {
		if err := ctx.Err(); err != nil {
			return fail("prune", err)
		}
		del := make([]Object, len(gone))
		for i, r := range gone {
			del[i] = pruneObject(r, m.instance, cv.Name, prev.Version)
		}
		if err := m.applier.Delete(ctx, del); err != nil {
			return fail("prune", err)
		}
		log.Info("pruned objects the previous inventory holds and this version does not render", "from", prev.Version, "objects", len(del))
	}
	if err := store.SaveInventory(ctx, m.inventory(cv, refs)); err != nil {
		return fail("inventory", err)
	}
	return nil
}

func (m *Manifest) inventory(cv *release.ComponentVersion, refs []Ref) Inventory {
	return Inventory{Instance: m.instance, Component: cv.Name, Version: cv.Version.Original(), Objects: refs}
}

// Validate reports, at plan time, whether cv can be run: it has manifests,
// they parse, and they render to valid objects for a new component (.From
// and .Hop empty), so that a missing param or value shows before anything
// runs; and when cv has health checks the Applier is a ReadyChecker.
func (m *Manifest) Validate(cv *release.ComponentVersion) error {
	if cv == nil {
		return nilComponent()
	}
	if _, err := m.render(cv, newData(cv, "", "", m.values)); err != nil {
		return wrap(cv, "validate", err)
	}
	if _, ok := m.applier.(ReadyChecker); len(cv.HealthChecks) > 0 && !ok {
		return wrap(cv, "validate", fmt.Errorf("%w (%T); the component has health checks", ErrNoReadyChecker, m.applier))
	}
	return nil
}

// ValidateHop reports, at plan time, every object that two manifest
// components of the hop render (a *SharedObjectError naming both, sorted
// by object), the check that Validate cannot make one component at a time.
// Components that do not render are left to Validate.
func (m *Manifest) ValidateHop(h *runner.HopPlan) error {
	if h == nil || h.Graph == nil {
		return nil
	}
	if err := checkInstance(m.instance); err != nil {
		for i := range h.Graph.Len() {
			if n := h.Graph.Node(i); n.To != nil && (len(n.To.Manifests) > 0 || lastManifestPhase(n.To) != "") {
				return err // once for the hop, not per component
			}
		}
	}
	var invs []Inventory
	for i := range h.Graph.Len() {
		n := h.Graph.Node(i)
		if n.To == nil || (len(n.To.Manifests) == 0 && lastManifestPhase(n.To) == "") {
			continue
		}
		objs, err := m.render(n.To, newData(n.To, "", "", m.values))
		if err != nil {
			continue
		}
		invs = append(invs, Inventory{Component: n.To.Name, Objects: refsOf(objs)})
	}
	slices.SortFunc(invs, func(a, b Inventory) int { return strings.Compare(a.Component, b.Component) })
	var errs []error
	for i, inv := range invs {
		errs = append(errs, claims(inv.Component, inv.Objects, invs[i+1:])...)
	}
	return join(errs)
}
