package components

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// The ownership labels Manifest.Run puts on every object it applies. An
// Applier deletes, when pruning, only an object that still carries the
// labels of the component that prunes it.
const (
	// LabelComponent names the component that applied the object.
	LabelComponent = "hopdag.io/component"
	// LabelInstance names the installation (catalog instance, cluster)
	// the component belongs to; see WithInstance.
	LabelInstance = "hopdag.io/instance"
	// LabelManagedBy is the well-known app.kubernetes.io/managed-by label,
	// set to "hopdag".
	LabelManagedBy = "app.kubernetes.io/managed-by"
)

// DefaultInstance is the instance of a Manifest without WithInstance.
const DefaultInstance = "default"

// Ref is the identity of an object: its API group, kind, namespace (after
// defaulting; "" for a cluster-scoped object) and name. Version is the
// API version it was applied with; it is kept to address the object, but
// two Refs that differ only in Version are the same object.
type Ref struct {
	Group     string `json:"group,omitempty" yaml:"group,omitempty"`
	Version   string `json:"version" yaml:"version"`
	Kind      string `json:"kind" yaml:"kind"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	Name      string `json:"name" yaml:"name"`
}

// String is "Kind.group namespace/name" ("Kind" alone for the core
// group, no "namespace/" for a cluster-scoped object).
func (r Ref) String() string {
	k := r.Kind
	if r.Group != "" {
		k += "." + r.Group
	}
	if r.Namespace == "" {
		return k + " " + r.Name
	}
	return k + " " + r.Namespace + "/" + r.Name
}

// APIVersion is "group/version", or "version" for the core group.
func (r Ref) APIVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// objectKey is an object's identity: a Ref without its version.
type objectKey struct{ group, kind, namespace, name string }

func (r Ref) key() objectKey { return objectKey{r.Group, r.Kind, r.Namespace, r.Name} }

// compareRefs orders refs by group, kind, namespace and name.
func compareRefs(a, b Ref) int {
	return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

func splitAPIVersion(apiVersion string) (group, version string) {
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		return g, v
	}
	return "", apiVersion
}

// Inventory is what one component of one instance applied: the objects
// the next version prunes when it no longer renders them (DESIGN.md,
// "Manifests in a real cluster"). Objects are sorted by group, kind,
// namespace and name.
type Inventory struct {
	Instance  string `json:"instance" yaml:"instance"`
	Component string `json:"component" yaml:"component"`
	// Version is the component version that wrote the inventory.
	Version string `json:"version" yaml:"version"`
	Objects []Ref  `json:"objects" yaml:"objects"`
}

// InventoryStore is an optional ability of an Applier: it keeps each
// component's Inventory where it outlives the process (the cluster, the
// directory). Manifest prunes only through it: an Applier without it never
// prunes, and old templates are never rendered again to find what to
// delete.
//
// Inventories returns every inventory of the instance, sorted by
// component; SaveInventory replaces the component's.
type InventoryStore interface {
	Inventories(ctx context.Context, instance string) ([]Inventory, error)
	SaveInventory(ctx context.Context, inv Inventory) error
}

// OwnedBy reports whether labels (an object's metadata.labels) say the
// object belongs to component of instance. Appliers call it before they
// delete an object to prune it.
func OwnedBy(labels map[string]string, instance, component string) bool {
	return labels[LabelComponent] == component && labels[LabelInstance] == instance
}

// OwnerLabels are the labels Manifest puts on the objects of component.
func OwnerLabels(instance, component string) map[string]string {
	return map[string]string{LabelComponent: component, LabelInstance: instance, LabelManagedBy: "hopdag"}
}

// labelsOf returns the metadata.labels of decoded object content; values
// that are not strings are left out.
func labelsOf(content map[string]any) map[string]string {
	md, _ := content["metadata"].(map[string]any)
	ls, _ := md["labels"].(map[string]any)
	out := make(map[string]string, len(ls))
	for k, v := range ls {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// ownerOf returns the component and instance labels of an object's
// content.
func ownerOf(content map[string]any) (component, instance string) {
	ls := labelsOf(content)
	return ls[LabelComponent], ls[LabelInstance]
}

// SharedObjectError is an object that two components render (at plan
// time) or that one component applies while another's inventory holds it
// (at run time). It matches ErrSharedObject.
type SharedObjectError struct {
	Object Ref
	// Components are the two components, sorted.
	Components [2]string
}

func (e *SharedObjectError) Error() string {
	return fmt.Sprintf("%s is rendered by two components, %s and %s: an object has one owner, or a prune of one deletes it under the other; render it in one of them (or in a component both depend on)",
		e.Object, e.Components[0], e.Components[1])
}

// Is matches ErrSharedObject.
func (e *SharedObjectError) Is(target error) bool { return target == ErrSharedObject }

// claims checks refs of component against the inventories of the other
// components and returns a *SharedObjectError per object another one
// holds, sorted.
func claims(component string, refs []Ref, invs []Inventory) []error {
	owner := map[objectKey]string{}
	for _, inv := range invs {
		if inv.Component == component {
			continue
		}
		for _, r := range inv.Objects {
			owner[r.key()] = inv.Component
		}
	}
	var errs []error
	for _, r := range refs {
		if other, ok := owner[r.key()]; ok {
			pair := [2]string{component, other}
			slices.Sort(pair[:])
			errs = append(errs, &SharedObjectError{Object: r, Components: pair})
		}
	}
	return errs
}

// stale returns the refs of prev that next does not hold, in the order a
// prune deletes them: other objects, then CustomResourceDefinitions, then
// Namespaces (see pruneOrder), each stage in reverse order of prev (an
// inventory is sorted, so the order is deterministic).
func stale(prev, next []Ref) []Ref {
	keep := make(map[objectKey]bool, len(next))
	for _, r := range next {
		keep[r.key()] = true
	}
	var out []Ref
	for _, r := range slices.Backward(prev) {
		if !keep[r.key()] {
			out = append(out, r)
		}
	}
	pruneOrder(out)
	return out
}

// union returns the refs of a and b, each identity once (b's version
// wins), sorted.
func union(a, b []Ref) []Ref {
	m := make(map[objectKey]Ref, len(a)+len(b))
	for _, r := range a {
		m[r.key()] = r
	}
	for _, r := range b {
		m[r.key()] = r
	}
	out := make([]Ref, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, compareRefs)
	return out
}

// refsOf returns the identities of objs, sorted.
func refsOf(objs []Object) []Ref {
	out := make([]Ref, len(objs))
	for i, o := range objs {
		out[i] = o.Ref()
	}
	slices.SortFunc(out, compareRefs)
	return out
}

// pruneObject is the Object Delete gets for a ref to prune: identity, the
// component, and content holding only apiVersion, kind and metadata with
// the ownership labels the live object must still carry.
func pruneObject(r Ref, instance, component, version string) Object {
	md := map[string]any{"name": r.Name}
	if r.Namespace != "" {
		md["namespace"] = r.Namespace
	}
	ls := map[string]any{}
	for k, v := range OwnerLabels(instance, component) {
		ls[k] = v
	}
	md["labels"] = ls
	return Object{
		APIVersion: r.APIVersion(), Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
		Component: component, Version: version,
		Content: map[string]any{"apiVersion": r.APIVersion(), "kind": r.Kind, "metadata": md},
	}
}

// Owner returns the instance and component an object to delete must still
// belong to: the ownership labels of its Content (see Applier.Delete).
// ok is false for an object without them, which an Applier deletes
// unconditionally.
func Owner(o Object) (instance, component string, ok bool) {
	c, i := ownerOf(o.Content)
	return i, c, c != ""
}
