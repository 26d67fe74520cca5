package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/hopdag/hopdag/components"
)

// Delete prunes objs (see Prune) and hands the ChangeSet to the reporter.
func (a *Applier) Delete(ctx context.Context, objs []components.Object) error {
	cs, err := a.Prune(ctx, objs)
	a.reportChanges(cs)
	return err
}

// Prune deletes objs with foreground propagation (dependents first, so a
// pruned Deployment takes its ReplicaSets and Pods with it), in three
// stages: other objects, then CustomResourceDefinitions, then Namespaces,
// so that nothing is deleted from under an object still to be pruned.
//
// Deleting a Namespace deletes every object in it, and deleting a CRD every
// object of its kind: such an object is Skipped, its reason naming what it
// holds, while that holds live objects that are not being deleted (another
// component's, another installation's, anyone's), so that a component
// that stops rendering its Namespace never deletes what others keep in it.
// To find them, a Namespace's prune lists every namespaced resource the
// API server serves in it (as its namespace controller would), leaving
// out Events, Endpoints and EndpointSlices (controllers keep them for
// Services, which are listed), objects with an owner reference (their
// owner decides), and the ConfigMap kube-root-ca.crt and ServiceAccount
// default the control plane makes in every namespace; a CRD's prune lists
// its custom resources in every namespace. When discovery fails for some
// API group, nothing can be said of that group's objects: the Namespace is
// Skipped, the reason naming the groups.
//
// An object whose Content carries ownership labels (Manifest sets them;
// components.Owner reads them) is deleted only while the live object still
// has them: one another component or instance took over is Skipped. The
// delete is conditional on the UID and resourceVersion read, so an object
// changed between the read and the delete is not deleted (the error says
// so; a retry reads it again). An object, or a kind, already gone is Gone.
// Under WithDryRun nothing is deleted and deletable objects are reported
// Pruned.
func (a *Applier) Prune(ctx context.Context, objs []components.Object) (ChangeSet, error) {
	var stages [3][]int
	for i, o := range objs {
		r := o.Ref()
		switch {
		case r.Group == "" && r.Kind == "Namespace":
			stages[2] = append(stages[2], i)
		case r.Group == "apiextensions.k8s.io" && r.Kind == "CustomResourceDefinition":
			stages[1] = append(stages[1], i)
		default:
			stages[0] = append(stages[0], i)
		}
	}
	changes := make([]Change, len(objs))
	done := make([]bool, len(objs))
	var cs ChangeSet
	for _, idx := range stages {
		errs := a.forEach(ctx, len(idx), func(k int) error {
			i := idx[k]
			c, err := a.pruneOne(ctx, objs[i])
			changes[i], done[i] = c, err == nil
			return err
		})
		for _, i := range idx {
			if done[i] {
				cs = append(cs, changes[i])
			}
		}
		if err := errors.Join(errs...); err != nil {
			return cs, err
		}
	}
	return cs, nil
}

func (a *Applier) pruneOne(ctx context.Context, o components.Object) (Change, error) {
	r := o.Ref()
	c := Change{Object: r, DryRun: a.cfg.dryRun}
	res, _, err := a.resource(r)
	if err != nil {
		if meta.IsNoMatchError(err) {
			c.Action, c.Reason = Gone, "kind not served"
			return c, nil
		}
		return c, err
	}
	live, err := res.Get(ctx, r.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		c.Action = Gone
		return c, nil
	} else if err != nil {
		return c, &ObjectError{Object: r, Op: "get", Err: err}
	}
	if inst, comp, owned := components.Owner(o); owned && !components.OwnedBy(live.GetLabels(), inst, comp) {
		ls := live.GetLabels()
		c.Action = Skipped
		c.Reason = fmt.Sprintf("labelled as component %q of instance %q, not %q of %q", ls[components.LabelComponent], ls[components.LabelInstance], comp, inst)
		return c, nil
	}
	if live.GetDeletionTimestamp() != nil {
		c.Action, c.Reason = Pruned, "already being deleted"
		return c, nil
	}
	if reason, err := a.holds(ctx, r, live); err != nil {
		return c, &ObjectError{Object: r, Op: "list what deleting it would delete", Err: err}
	} else if reason != "" {
		c.Action, c.Reason = Skipped, reason
		return c, nil
	}
	c.Action = Pruned
	if a.cfg.dryRun {
		return c, nil
	}
	uid, rv := live.GetUID(), live.GetResourceVersion()
	fg := metav1.DeletePropagationForeground
	err = res.Delete(ctx, r.Name, metav1.DeleteOptions{
		PropagationPolicy: &fg,
		Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
	})
	switch {
	case apierrors.IsNotFound(err):
		c.Action = Gone
	case apierrors.IsConflict(err):
		return c, &ObjectError{Object: r, Op: "delete", Err: fmt.Errorf("changed since it was read, not deleted (the component is retried, which reads it again): %w", err)}
	case err != nil:
		return c, &ObjectError{Object: r, Op: "delete", Err: err}
	}
	return c, nil
}

// holds returns, for a Namespace or a CustomResourceDefinition live as
// live, the reason its prune must leave it (what deleting it would delete
// with it, see Prune), or "" when it holds nothing live or is neither.
func (a *Applier) holds(ctx context.Context, r components.Ref, live *unstructured.Unstructured) (string, error) {
	var (
		hs  []held
		err error
	)
	switch {
	case r.Group == "" && r.Kind == "Namespace":
		var unknown []string
		if hs, unknown, err = a.heldInNamespace(ctx, r.Name); len(unknown) > 0 && err == nil {
			return "not pruned: what it holds cannot all be listed (" + strings.Join(unknown, "; ") +
				"), and deleting it would delete that too; prune it again once it can be, or delete it by hand", nil
		}
	case r.Group == "apiextensions.k8s.io" && r.Kind == "CustomResourceDefinition":
		if hs, err = a.heldByCRD(ctx, live); apierrors.IsForbidden(errors.Unwrap(err)) {
			return "not pruned: its objects cannot be listed (" + err.Error() + "), and deleting it would delete them; prune it again once they can be, or delete it by hand", nil
		}
	default:
		return "", nil
	}
	if err != nil || len(hs) == 0 {
		return "", err
	}
	return keepReason(hs), nil
}

// held is a live object that deleting a Namespace or CRD would delete.
type held struct {
	ref    components.Ref
	labels map[string]string
}

// keepReason is the Skipped reason of a Namespace or CRD that holds hs:
// how many, the first three (sorted) with their owners as their labels
// say. The Recorder and Dir appliers of package components say the same.
func keepReason(hs []held) string {
	slices.SortFunc(hs, func(a, b held) int { return strings.Compare(a.ref.String(), b.ref.String()) })
	var names []string
	for i, h := range hs {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(hs)-3))
			break
		}
		owner := "not hopdag's"
		if c, in := h.labels[components.LabelComponent], h.labels[components.LabelInstance]; c != "" || in != "" {
			owner = fmt.Sprintf("component %q of instance %q", c, in)
		}
		names = append(names, h.ref.String()+" ("+owner+")")
	}
	objects := "objects"
	if len(hs) == 1 {
		objects = "object"
	}
	return fmt.Sprintf("not pruned: deleting it would delete %d live %s with it: %s; prune it again once they are gone, or delete it by hand",
		len(hs), objects, strings.Join(names, ", "))
}

// everyNamespace holds what the control plane makes in every namespace;
// it does not hold a Namespace (see Prune).
var everyNamespace = map[schema.GroupKind]string{
	{Kind: "ConfigMap"}:      "kube-root-ca.crt",
	{Kind: "ServiceAccount"}: "default",
}

// notHeld are the namespaced kinds a Namespace's prune does not list.
var notHeld = map[schema.GroupResource]bool{
	{Resource: "events"}:                                    true,
	{Group: "events.k8s.io", Resource: "events"}:            true,
	{Resource: "endpoints"}:                                 true,
	{Group: "discovery.k8s.io", Resource: "endpointslices"}: true,
}

// heldInNamespace lists what is live in namespace ns (see Prune), and
// says what it could not list: API groups whose discovery failed,
// resources the Applier may not list.
func (a *Applier) heldInNamespace(ctx context.Context, ns string) ([]held, []string, error) {
	lists, err := discovery.ServerPreferredNamespacedResources(a.disco)
	var failed *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &failed) {
		var groups []string
		for gv := range failed.Groups {
			groups = append(groups, gv.String())
		}
		slices.Sort(groups)
		return nil, []string{"discovery failed for " + strings.Join(groups, ", ")}, nil
	} else if err != nil {
		return nil, nil, err
	}
	var forbidden []string
	var hs []held
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, nil, err
		}
		for _, res := range l.APIResources {
			if notHeld[gv.WithResource(res.Name).GroupResource()] || !slices.Contains(res.Verbs, "list") || strings.Contains(res.Name, "/") {
				continue
			}
			gk := schema.GroupKind{Group: gv.Group, Kind: res.Kind}
			more, err := a.liveOf(ctx, gv.WithResource(res.Name), ns, func(m metav1.Object) bool {
				return len(m.GetOwnerReferences()) == 0 && everyNamespace[gk] != m.GetName()
			})
			if apierrors.IsForbidden(errors.Unwrap(err)) {
				forbidden = append(forbidden, gv.WithResource(res.Name).GroupResource().String())
				continue
			} else if err != nil {
				return nil, nil, err
			}
			for i := range more {
				more[i].ref.Group, more[i].ref.Version, more[i].ref.Kind = gv.Group, gv.Version, res.Kind
			}
			hs = append(hs, more...)
		}
	}
	if len(forbidden) > 0 {
		return hs, []string{"forbidden to list " + strings.Join(forbidden, ", ")}, nil
	}
	return hs, nil, nil
}

// heldByCRD lists the live custom resources of the CRD live.
func (a *Applier) heldByCRD(ctx context.Context, live *unstructured.Unstructured) ([]held, error) {
	group, _, _ := unstructured.NestedString(live.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(live.Object, "spec", "names", "plural")
	kind, _, _ := unstructured.NestedString(live.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(live.Object, "spec", "versions")
	var version string
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); served {
			version, _ = m["name"].(string)
			break
		}
	}
	if group == "" || plural == "" || version == "" {
		return nil, nil // serves nothing: deleting it deletes nothing
	}
	hs, err := a.liveOf(ctx, schema.GroupVersionResource{Group: group, Version: version, Resource: plural}, metav1.NamespaceAll, func(metav1.Object) bool { return true })
	for i := range hs {
		hs[i].ref.Group, hs[i].ref.Version, hs[i].ref.Kind = group, version, kind
	}
	return hs, err
}

// liveOf lists the objects of resource res in namespace ns (all namespaces
// for ""), page by page, and returns those that are not being deleted and
// that keep says hold their namespace or kind.
func (a *Applier) liveOf(ctx context.Context, res schema.GroupVersionResource, ns string, keep func(metav1.Object) bool) ([]held, error) {
	var hs []held
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := a.meta.Resource(res).Namespace(ns).List(ctx, opts)
		if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
			return hs, nil
		} else if err != nil {
			return nil, fmt.Errorf("list %s: %w", res.GroupResource(), err)
		}
		for i := range l.Items {
			m := &l.Items[i]
			if m.GetDeletionTimestamp() == nil && keep(m) {
				hs = append(hs, held{ref: components.Ref{Namespace: m.GetNamespace(), Name: m.GetName()}, labels: m.GetLabels()})
			}
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return hs, nil
		}
	}
}
