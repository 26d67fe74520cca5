package components

import (
	"context"

	"github.com/hopdag/hopdag/release"
)

// Object is one rendered Kubernetes object.
//
// An object's identity is its API group, kind, namespace and name (see
// Ref): pruning compares objects by identity, and the Dir applier names
// files after it. The version of APIVersion is not part of it: an object
// moved from extensions/v1beta1 to networking.k8s.io/v1 is another object,
// one moved from apps/v1beta2 to apps/v1 is the same. Namespace is "" for
// cluster-scoped objects; Manifest.Run gives a namespaced object rendered
// without one the component's namespace (see Manifest) before it takes the
// identity.
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
	// ending in a newline. Manifest.Run adds the ownership labels and a
	// defaulted namespace to it, as to Content.
	YAML string
}

// String is "Kind namespace/name", or "Kind name" without a namespace.
func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Ref is the identity of the object.
func (o Object) Ref() Ref {
	g, v := splitAPIVersion(o.APIVersion)
	return Ref{Group: g, Version: v, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
}

func (o Object) key() objectKey { return o.Ref().key() }

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
// the same objects again. Delete must ignore objects that are already gone,
// and must delete an object only while it still belongs to the component
// that prunes it: when the Content of o carries ownership labels (Owner
// reports them; Manifest always sets them), an object whose live labels
// differ (OwnedBy) is left in place.
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
// Return (false, nil) while the component is on its way, or (false, err)
// with err matching ErrPending to say why (the timeout error then shows it);
// any other error stops the polling and fails the component. After each
// pending poll Manifest reports a one-line summary through
// runner.Task.Waiting: the error's Waiting() string method's result when
// it has one (e.g. "waiting for DaemonSet kube-system/calico-node: 3 of 5
// updated"), else "waiting for health check NAME: " and the error.
type ReadyChecker interface {
	Ready(ctx context.Context, check release.HealthCheck, objs []Object) (bool, error)
}
