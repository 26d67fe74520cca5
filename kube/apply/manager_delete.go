package apply

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
