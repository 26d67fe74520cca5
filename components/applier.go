package components

import (
	"context"

	"github.com/hopdag/hopdag/release"
)

// Object is one rendered Kubernetes object.
//
// An object's identity is its kind, namespace and name: pruning compares
// objects by identity, and the Dir applier names files after it. Namespace is
// "" when the document sets none (cluster-scoped objects, or namespaced ones
// left to the applier's default).
type Object struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string

	// Component and Version name the component version that rendered the
	// object; Manifest (the manifest's name, its file for a loaded catalog)
	// and Doc (the document's position in it, from 1) say where.
	Component string
	Version   string
	Manifest  string
	Doc       int

	// Content is the decoded object (mappings are map[string]any). It is
	// shared by the copies of the Object: read it, do not modify it.
	Content map[string]any
	// YAML is the document as rendered, without the "---" separators,
	// ending in a newline.
	YAML string
}

// String is "Kind namespace/name", or "Kind name" without a namespace.
func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// objectKey is an object's identity.
type objectKey struct{ kind, namespace, name string }

func (o Object) key() objectKey { return objectKey{o.Kind, o.Namespace, o.Name} }

// ApplyOptions are the settings of one Apply call.
type ApplyOptions struct {
	// FieldManager is the server-side apply field manager; Manifest sets
	// "hopdag" unless told otherwise.
	FieldManager string
	// Force takes ownership of fields another manager owns (server-side
	// apply's --force-conflicts).
	Force bool
}

// Applier puts rendered objects in place: a Kubernetes API server, a
// directory, a recording. Manifest calls Apply with the objects of one
// component in apply order (Namespaces, then CustomResourceDefinitions,
// then the rest as declared), and Delete with the objects to prune in
// reverse apply order. Apply must be idempotent: a retried component applies
// the same objects again. Delete must ignore objects that are already gone.
//
// The executor runs components in parallel, so an Applier is called from
// many goroutines at once.
type Applier interface {
	Apply(ctx context.Context, objs []Object, opts ApplyOptions) error
	Delete(ctx context.Context, objs []Object) error
}

// ReadyChecker is an optional ability of an Applier: Ready reports whether
// the health check of a component is satisfied, given the objects that
// were applied for it (check.Params usually name the object to look at).
// Manifest polls it after Apply, every check.Interval until check.Timeout.
// Return (false, nil) while the component is on its way; an error stops the
// polling and fails the component.
type ReadyChecker interface {
	Ready(ctx context.Context, check release.HealthCheck, objs []Object) (bool, error)
}
