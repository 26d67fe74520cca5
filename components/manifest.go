package components

import (
	"context"
	"fmt"
	"maps"
	"slices"

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
// Run, in order:
//  1. renders the target version, and the previous one (t.From) when there
//     is one, so that nothing is applied when either fails to render;
//  2. applies the objects: Namespaces, then CustomResourceDefinitions,
//     then the rest in declared order;
//  3. polls the component's health checks through the Applier's
//     ReadyChecker, one after the other, each every Interval (default 5s)
//     until ready or Timeout (default 5m);
//  4. prunes: deletes, in reverse apply order, the objects the previous
//     version rendered and the target does not (same kind, namespace and
//     name). Pruning comes last so that a version that never gets ready
//     leaves the old objects in place.
//
// The previous version is rendered with the same values, and with .From and
// .Hop empty: only the identity of its objects is used.
//
// A Manifest holds no state between runs and is safe for concurrent use if
// its Applier is.
type Manifest struct {
	applier Applier
	values  map[string]any
	opts    ApplyOptions
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

// NewManifest returns a Manifest that applies through a.
func NewManifest(a Applier, opts ...ManifestOption) *Manifest {
	if a == nil {
		panic("components: NewManifest with a nil Applier")
	}
	m := &Manifest{applier: a}
	for _, o := range opts {
		o(m)
	}
	if m.opts.FieldManager == "" {
		m.opts.FieldManager = "hopdag"
	}
	return m
}

// Render returns the objects of t.To in apply order. Errors are *Error
// values with Op "render".
func (m *Manifest) Render(t runner.Task) ([]Object, error) {
	if t.To == nil {
		return nil, noTarget(t)
	}
	objs, err := renderObjects(t.To, newData(t.To, fromVersion(t), hopName(t), m.values))
	if err != nil {
		return nil, runner.Permanent(wrap(t.To, "render", err))
	}
	return objs, nil
}

// Run renders, applies, waits for readiness and prunes (see Manifest).
// A rendering error is runner.Permanent; the Applier's errors are not.
func (m *Manifest) Run(ctx context.Context, t runner.Task) error {
	objs, err := m.Render(t)
	if err != nil {
		return err
	}
	cv, log := t.To, logger(t)
	fail := func(op string, err error) error {
		return &Error{Component: cv.Name, Version: cv.Version.Original(), Op: op, Err: err}
	}

	var stale []Object
	if t.From != nil && len(t.From.Manifests) > 0 {
		prev, err := renderObjects(t.From, newData(t.From, "", "", m.values))
		if err != nil {
			return runner.Permanent(fail("prune", annotate(err, "render previous version %s", t.From.Version.Original())))
		}
		stale = gone(prev, objs)
	}
	rc, canCheck := m.applier.(ReadyChecker)
	if len(cv.HealthChecks) > 0 && !canCheck {
		return runner.Permanent(fail("ready", fmt.Errorf("%w (%T)", ErrNoReadyChecker, m.applier)))
	}

	if err := ctx.Err(); err != nil {
		return fail("apply", err)
	}
	if len(objs) > 0 {
		if err := m.applier.Apply(ctx, objs, m.opts); err != nil {
			return fail("apply", err)
		}
	}
	log.Debug("applied objects", "objects", len(objs))
	if len(cv.HealthChecks) > 0 {
		if err := waitReady(ctx, rc, cv.HealthChecks, objs); err != nil {
			return fail("ready", err)
		}
		log.Debug("component ready", "checks", len(cv.HealthChecks))
	}
	if len(stale) > 0 {
		if err := ctx.Err(); err != nil {
			return fail("prune", err)
		}
		if err := m.applier.Delete(ctx, stale); err != nil {
			return fail("prune", err)
		}
		log.Info("pruned objects the previous version rendered", "from", t.From.Version.Original(), "objects", len(stale))
	}
	return nil
}

// Validate reports, at plan time, whether cv can be run: it has manifests,
// they parse, and they render to valid objects for a new component (.From
// and .Hop empty), so that a missing param or value shows before anything
// runs; and when cv has health checks the Applier is a ReadyChecker.
func (m *Manifest) Validate(cv *release.ComponentVersion) error {
	if cv == nil {
		return nilComponent()
	}
	if _, err := renderObjects(cv, newData(cv, "", "", m.values)); err != nil {
		return wrap(cv, "validate", err)
	}
	if _, ok := m.applier.(ReadyChecker); len(cv.HealthChecks) > 0 && !ok {
		return wrap(cv, "validate", fmt.Errorf("%w (%T); the component has health checks", ErrNoReadyChecker, m.applier))
	}
	return nil
}

// gone returns the objects of prev that next does not have, in reverse
// order.
func gone(prev, next []Object) []Object {
	keep := make(map[objectKey]bool, len(next))
	for _, o := range next {
		keep[o.key()] = true
	}
	var out []Object
	for _, o := range slices.Backward(prev) {
		if !keep[o.key()] {
			out = append(out, o)
		}
	}
	return out
}
