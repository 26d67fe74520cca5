package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/hopdag/hopdag/components"
)

// crdEstablishTimeout bounds the wait for an applied CRD to be Established.
const crdEstablishTimeout = time.Minute

// Apply applies objs with server-side apply (see ApplyAll) and hands the
// ChangeSet to the reporter (WithReporter).
func (a *Applier) Apply(ctx context.Context, objs []components.Object, opts components.ApplyOptions) error {
	cs, err := a.ApplyAll(ctx, objs, opts)
	a.reportChanges(cs)
	return err
}

// ApplyAll applies objs with server-side apply, in two stages:
// Namespaces and CustomResourceDefinitions first, then, once every CRD is
// Established and discovery is refreshed, the rest. Within a stage up to
// the parallelism (WithParallelism) objects are applied at once. Each
// object is read before it is applied, so that its Change says created,
// configured (its resourceVersion moved) or unchanged.
//
// The field manager is opts.FieldManager when it is set and not "hopdag",
// else the Applier's; Force is opts.Force or WithForce. A field another
// manager owns is a *ConflictError naming the managers and fields. All
// errors of a stage are returned joined; the second stage does not start
// after an error in the first.
func (a *Applier) ApplyAll(ctx context.Context, objs []components.Object, opts components.ApplyOptions) (ChangeSet, error) {
	var first, rest []int
	for i, o := range objs {
		if isStageOne(o.Ref()) {
			first = append(first, i)
		} else {
			rest = append(rest, i)
		}
	}
	manager := a.cfg.fieldManager
	if opts.FieldManager != "" && opts.FieldManager != "hopdag" {
		manager = opts.FieldManager
	}
	force := a.cfg.force || opts.Force
	changes := make([]Change, len(objs))
	done := make([]bool, len(objs))
	stage := func(idx []int) error {
		errs := a.forEach(ctx, len(idx), func(k int) error {
			i := idx[k]
			c, err := a.applyOne(ctx, objs[i], manager, force)
			changes[i], done[i] = c, err == nil
			return err
		})
		return errors.Join(errs...)
	}
	collect := func() ChangeSet {
		var cs ChangeSet
		for _, i := range append(first, rest...) {
			if done[i] {
				cs = append(cs, changes[i])
			}
		}
		return cs
	}
	if err := stage(first); err != nil {
		return collect(), err
	}
	var crds []components.Ref
	for _, i := range first {
		if r := objs[i].Ref(); r.Kind == "CustomResourceDefinition" {
			crds = append(crds, r)
		}
	}
	if len(crds) > 0 {
		if !a.cfg.dryRun {
			if err := a.waitEstablished(ctx, crds); err != nil {
				return collect(), err
			}
		}
		a.mapper.Reset()
	}
	err := stage(rest)
	return collect(), err
}

func isStageOne(r components.Ref) bool {
	return (r.Group == "" && r.Kind == "Namespace") ||
		(r.Group == "apiextensions.k8s.io" && r.Kind == "CustomResourceDefinition")
}

// applyOne reads and applies one object.
func (a *Applier) applyOne(ctx context.Context, o components.Object, manager string, force bool) (Change, error) {
	r := o.Ref()
	res, _, err := a.resource(r)
	if err != nil {
		if a.cfg.dryRun && meta.IsNoMatchError(err) {
			// A dry run applies no CRD, so its custom resources cannot be
			// checked: they would be created.
			return Change{Object: r, Action: Created, DryRun: true, Reason: "kind not served yet"}, nil
		}
		return Change{}, err
	}
	var old *unstructured.Unstructured
	old, err = res.Get(ctx, r.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		old = nil
	case err != nil:
		return Change{}, &ObjectError{Object: r, Op: "get", Err: err}
	}
	body, err := json.Marshal(o.Content)
	if err != nil {
		return Change{}, &ObjectError{Object: r, Op: "apply", Err: fmt.Errorf("encode as JSON: %w", err)}
	}
	po := metav1.PatchOptions{FieldManager: manager, Force: &force}
	if a.cfg.dryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	got, err := res.Patch(ctx, r.Name, types.ApplyPatchType, body, po)
	if err != nil {
		if ce := conflictOf(r, manager, err); ce != nil {
			return Change{}, ce
		}
		return Change{}, &ObjectError{Object: r, Op: "apply", Err: err}
	}
	c := Change{Object: r, DryRun: a.cfg.dryRun}
	switch {
	case old == nil:
		c.Action = Created
	case a.cfg.dryRun && sameContent(old, got), !a.cfg.dryRun && old.GetResourceVersion() == got.GetResourceVersion():
		c.Action = Unchanged
	default:
		c.Action = Configured
	}
	return c, nil
}

// sameContent compares a live object with a dry-run result, leaving out
// what a dry run changes without changing the object.
func sameContent(a, b *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy()
		unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
		unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
		unstructured.RemoveNestedField(c.Object, "metadata", "generation")
		return c.Object
	}
	x, _ := json.Marshal(strip(a))
	y, _ := json.Marshal(strip(b))
	return string(x) == string(y)
}

var conflictManager = regexp.MustCompile(`conflict with "([^"]*)"`)

// conflictOf returns the *ConflictError of an apply refused for field
// manager conflicts, or nil.
func conflictOf(r components.Ref, manager string, err error) *ConflictError {
	if !apierrors.IsConflict(err) {
		return nil
	}
	var se apierrors.APIStatus
	if !errors.As(err, &se) || se.Status().Details == nil {
		return nil
	}
	ce := &ConflictError{Object: r, FieldManager: manager, Err: err}
	for _, c := range se.Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		if m := conflictManager.FindStringSubmatch(c.Message); m != nil {
			ce.Managers = append(ce.Managers, m[1])
		}
		ce.Fields = append(ce.Fields, c.Field)
	}
	if len(ce.Fields) == 0 {
		return nil
	}
	ce.Managers, ce.Fields = sortedUnique(ce.Managers), sortedUnique(ce.Fields)
	return ce
}

// waitEstablished waits until every CRD of crds has the condition
// Established=True, or its NamesAccepted is False (an error naming the
// reason).
func (a *Applier) waitEstablished(ctx context.Context, crds []components.Ref) error {
	for _, r := range crds {
		res, _, err := a.resource(r)
		if err != nil {
			return err
		}
		var last string
		err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, crdEstablishTimeout, true, func(ctx context.Context) (bool, error) {
			u, err := res.Get(ctx, r.Name, metav1.GetOptions{})
			if err != nil {
				return false, &ObjectError{Object: r, Op: "wait", Err: err}
			}
			conds := conditionsOf(u)
			if c, ok := conds["NamesAccepted"]; ok && c.status == "False" {
				return false, &ObjectError{Object: r, Op: "wait", Err: fmt.Errorf("names not accepted: %s: %s", c.reason, c.message)}
			}
			c := conds["Established"]
			last = c.String("Established")
			return c.status == "True", nil
		})
		if err != nil {
			var oe *ObjectError
			if errors.As(err, &oe) {
				return err
			}
			return &ObjectError{Object: r, Op: "wait", Err: fmt.Errorf("not Established within %s (%s): %w", crdEstablishTimeout, last, err)}
		}
	}
	return nil
}
