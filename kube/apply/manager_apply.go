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
	"k8s.io/client-go/dynamic"

	"github.com/hopdag/hopdag/components"
)

// crdEstablishTimeout bounds the wait for an applied CRD to be Established.
const crdEstablishTimeout = time.Minute

// An apply of an object being deleted reads it again after
// deletionPollMin, then at doubling intervals up to deletionPollMax, until
// it is gone: a ConfigMap's deletion is over in milliseconds, a
// Deployment's foreground deletion waits for its Pods' grace period (30s
// by default).
const (
	deletionPollMin = 50 * time.Millisecond
	deletionPollMax = time.Second
	// deletionWarnEvery is how often a wait for a deletion logs a warning.
	deletionWarnEvery = 30 * time.Second
)

// The Reasons of a Created Change for an object that was being deleted.
const (
	reasonRecreated       = "was being deleted; recreated once gone"
	reasonRecreatedDryRun = "being deleted; recreated once gone"
)

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
// An object that exists but is being deleted (it has a deletionTimestamp:
// its finalizers hold it, e.g. foregroundDeletion while the garbage
// collector deletes its dependents, or its grace period runs) is not
// applied to, since its deletion would then take what was applied with
// it: the apply reads it again, at intervals from 50ms up to 1s, until it
// is gone, then creates it; its Change is Created, with the reason "was
// being deleted; recreated once gone". This is what a rollback or an
// upgrade that renders again an object a prune has just deleted meets.
// The wait lasts as long as ctx, with no limit of its own: when ctx ends
// first, the error is a *TerminatingError naming the object, since when
// it is being deleted and its finalizers. Under WithDryRun nothing waits: the object is
// dry-run applied as it is (the API server validates the content against
// the object being deleted) and reported Created with the reason "being
// deleted; recreated once gone". An object not being deleted costs no
// more than the read and the apply.
//
// A namespaced object whose namespace does not exist is an *ObjectError
// that names the namespace (and matches apierrors.IsNotFound). Under
// WithDryRun, when the namespace is one this Applier has reported created
// (in this Apply's first stage, or an Apply before it), the object is
// reported Created with the reason "its namespace is created by this dry
// run; not checked by the server": the API server refuses content in a
// namespace that does not exist or is being deleted, so it validates
// nothing of it.
//
// An object whose ownership labels (components.Owner) name a component
// or an instance other than the live object's is not applied: it is a
// runner.Permanent *OwnerError, unless WithTakeOver, under which it is
// taken over and its Change says from whom. A live object without
// ownership labels is adopted, its Change saying so. The check uses the
// read above: it costs nothing more (see owner).
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

// applyOne reads and applies one object: it reads the live object
// (current), checks who owns it (owner), patches it (patch), and says
// what the patch did (change) or what its refusal means (refused).
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
	old, reason, err := a.current(ctx, res, r)
	if err != nil {
		return Change{}, err
	}
	// owned is the Reason of an object taken from no owner or another
	// one. An object being deleted is not checked: it is created again
	// (under a dry run, the deletion is assumed to finish).
	var owned string
	if old != nil && reason == "" {
		if owned, err = a.owner(o, old); err != nil {
			return Change{}, err
		}
	}
	body, err := json.Marshal(o.Content)
	if err != nil {
		return Change{}, &ObjectError{Object: r, Op: "apply", Err: fmt.Errorf("encode as JSON: %w", err)}
	}
	got, err := a.patch(ctx, res, r, body, manager, force)
	if err != nil {
		return a.refused(r, manager, err)
	}
	return a.change(r, old, got, reason, owned), nil
}

// current reads the live object of r: nil when there is none. An object
// being deleted is waited for until it is gone (nil, and reason
// reasonRecreated), or created again by another client (that object);
// under a dry run it is assumed gone (reason reasonRecreatedDryRun).
func (a *Applier) current(ctx context.Context, res dynamic.ResourceInterface, r components.Ref) (old *unstructured.Unstructured, reason string, err error) {
	old, err = res.Get(ctx, r.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, "", nil
	case err != nil:
		return nil, "", &ObjectError{Object: r, Op: "get", Err: err}
	case old.GetDeletionTimestamp() == nil:
		return old, "", nil
	case a.cfg.dryRun:
		return old, reasonRecreatedDryRun, nil
	}
	if old, err = a.awaitDeletion(ctx, res, r, old); err != nil {
		return nil, "", err
	}
	if old == nil {
		reason = reasonRecreated
	}
	return old, reason, nil
}

// patch applies body, r's object as JSON, server-side and returns the
// object the API server returned.
func (a *Applier) patch(ctx context.Context, res dynamic.ResourceInterface, r components.Ref, body []byte, manager string, force bool) (*unstructured.Unstructured, error) {
	po := metav1.PatchOptions{FieldManager: manager, Force: &force}
	if a.cfg.dryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	return res.Patch(ctx, r.Name, types.ApplyPatchType, body, po)
}

// refused is what the API server's refusal, err, to apply r means: a
// *ConflictError with another field manager; under a dry run, an object
// in a namespace the dry run would create, which cannot be checked and
// would be created; otherwise an *ObjectError, which says to create a
// namespace that is missing.
func (a *Applier) refused(r components.Ref, manager string, err error) (Change, error) {
	if ce := conflictOf(r, manager, err); ce != nil {
		return Change{}, ce
	}
	if a.cfg.dryRun && r.Namespace != "" && a.dryRunNS.has(r.Namespace) && namespaceRefused(err, r.Namespace) {
		// A dry run creates no namespace, so the objects in one it
		// creates cannot be checked: they would be created.
		return Change{Object: r, Action: Created, DryRun: true, Reason: reasonDryRunNamespace}, nil
	}
	if r.Namespace != "" && namespaceNotFound(err, r.Namespace) {
		err = fmt.Errorf("%w; create namespace %s, or add a Namespace object for it to this component or to one it depends on", err, r.Namespace)
	}
	return Change{}, &ObjectError{Object: r, Op: "apply", Err: err}
}

// change says what applying r did, given the live object before (old,
// nil when there was none), the one the patch returned, why it was
// created again (reason) and from whom it was taken (owned). A namespace
// a dry run would create is remembered, for the objects in it.
func (a *Applier) change(r components.Ref, old, got *unstructured.Unstructured, reason, owned string) Change {
	c := Change{Object: r, DryRun: a.cfg.dryRun, Reason: reason}
	switch {
	case old == nil, reason != "":
		c.Action = Created
	case a.cfg.dryRun && sameContent(old, got), !a.cfg.dryRun && old.GetResourceVersion() == got.GetResourceVersion():
		c.Action = Unchanged
	default:
		c.Action = Configured
	}
	if owned != "" {
		c.Reason = owned
	}
	if a.cfg.dryRun && c.Action == Created && r.Group == "" && r.Kind == "Namespace" {
		a.dryRunNS.add(r.Name)
	}
	return c
}

// awaitDeletion waits until old, an object being deleted, is gone, and
// returns nil; or, when another client has created the object again in
// the meantime, that object. It reads the object at intervals from
// deletionPollMin doubling up to deletionPollMax. When ctx ends first the
// error is a *TerminatingError made from the last read.
func (a *Applier) awaitDeletion(ctx context.Context, res dynamic.ResourceInterface, r components.Ref, old *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	a.cfg.log.InfoContext(ctx, "waiting for an object being deleted to be gone before applying it",
		"object", r.String(), "deletionTimestamp", old.GetDeletionTimestamp(), "finalizers", old.GetFinalizers())
	start := time.Now()
	warned := start
	interval := deletionPollMin
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, terminatingError(r, old, time.Since(start), context.Cause(ctx))
		case <-timer.C:
		}
		u, err := res.Get(ctx, r.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			a.cfg.log.InfoContext(ctx, "the object being deleted is gone; applying it", "object", r.String(), "waited", time.Since(start))
			return nil, nil
		case err != nil && ending(ctx):
			return nil, terminatingError(r, old, time.Since(start), context.Cause(ctx))
		case err != nil:
			return nil, &ObjectError{Object: r, Op: "get", Err: err}
		case u.GetDeletionTimestamp() == nil:
			return u, nil
		}
		old = u
		if time.Since(warned) >= deletionWarnEvery {
			// No limit but ctx's: say, now and then, what holds the apply.
			warned = time.Now()
			a.cfg.log.WarnContext(ctx, "still waiting for an object being deleted to be gone before applying it; its finalizers must be removed by their controller",
				"object", r.String(), "waited", time.Since(start).Round(time.Second), "finalizers", u.GetFinalizers())
		}
		interval = min(2*interval, deletionPollMax)
		timer.Reset(interval)
	}
}

// ending reports whether ctx has ended, after a read failed: a read
// refused because ctx's deadline is near (client-go's rate limiter does
// not wait past it, and its error is not context.DeadlineExceeded) is
// the deadline's doing, said as such once it is reached; a deadline within
// the next poll is waited for.
func ending(ctx context.Context) bool {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= deletionPollMax {
		<-ctx.Done()
	}
	return ctx.Err() != nil
}

func terminatingError(r components.Ref, u *unstructured.Unstructured, waited time.Duration, err error) *TerminatingError {
	e := &TerminatingError{Object: r, Finalizers: u.GetFinalizers(), Waited: waited, Err: err}
	if ts := u.GetDeletionTimestamp(); ts != nil {
		e.Since = ts.UTC()
	}
	return e
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
