package components

import (
	"cmp"
	"fmt"

	"github.com/hopdag/hopdag/runner"
)

// reasonAdopted is the reason CheckOwner gives for an object that existed
// without ownership labels (created by kubectl, by another tool, by hand)
// and is now labelled as the component's: from now on its prune may
// delete it.
const reasonAdopted = "adopted: it had no hopdag ownership labels"

// CheckOwner decides whether o may be applied over the object that exists
// with the labels existing (its metadata.labels; call it only when the
// object exists). Every Applier of this module calls it before it writes:
// Dir and Recorder here, and kube/apply.
//
// Who owns an object is what its labels say, as for a prune (an Applier
// deletes only an object whose labels are still the pruning component's,
// see OwnedBy). So:
//   - o without ownership labels (see Owner: an Applier used without a
//     Manifest) claims no owner and is not checked: reason "", err nil;
//   - an existing object with o's component and instance labels is o's
//     owner's: reason "", err nil;
//   - one with neither label is nobody's and is adopted, visibly: reason
//     "adopted: it had no hopdag ownership labels";
//   - one with either label set to another value is another component's
//     or another instance's: err is a runner.Permanent *OwnerError
//     (applying again would not change the labels), unless takeOver,
//     when reason is `taken over from component "C" of instance "I"`.
//
// Applied without the check, the object would be relabelled as o's, and
// the prune of whichever of the two owners stops rendering it would
// delete it from under the other. The reason is for the Applier's report
// of the apply.
func CheckOwner(o Object, existing map[string]string, takeOver bool) (reason string, err error) {
	inst, comp, ok := Owner(o)
	if !ok {
		return "", nil
	}
	oc, oi := existing[LabelComponent], existing[LabelInstance]
	switch {
	case oc == comp && oi == inst:
		return "", nil
	case oc == "" && oi == "":
		return reasonAdopted, nil
	case takeOver:
		return fmt.Sprintf("taken over from component %q of instance %q", oc, oi), nil
	}
	return "", runner.Permanent(&OwnerError{Object: o.Ref(), Component: comp, Instance: inst, OwnerComponent: oc, OwnerInstance: oi})
}

// OwnerError is an apply refused because the object exists labelled as
// another installation's or another component's: its hopdag.io/instance
// and hopdag.io/component labels are not those of the object to apply
// (see CheckOwner). It matches ErrOwned.
//
// Component and Instance are who applies the object; OwnerComponent and
// OwnerInstance what the existing object's labels say ("" for a label it
// does not have). TakeOver is what the message names as the way to take
// the object over: "" names this package's WithTakeOver (a Dir, a
// Recorder); kube/apply's OwnerError names apply.WithTakeOver; a program
// may set its own flag before it shows the error.
type OwnerError struct {
	Object                        Ref
	Component, Instance           string
	OwnerComponent, OwnerInstance string
	TakeOver                      string
}

// Error is "apply Kind namespace/name: refused: ...": it names the
// object, both owners and the fixes.
func (e *OwnerError) Error() string {
	fix := "give both installations the same instance (components.WithInstance; hopdag run --instance), or remove the object from one of the two components"
	if e.OwnerInstance == e.Instance {
		fix = "remove the object from one of the two components (or render it in one both depend on)"
	}
	return fmt.Sprintf("apply %s: refused: it belongs to component %q of instance %q (its %s and %s labels), not to %q of %q, and the prune of either would delete it from under the other; %s, or take it over with %s (the old owner's prune then leaves it)",
		e.Object, e.OwnerComponent, e.OwnerInstance, LabelComponent, LabelInstance, e.Component, e.Instance, fix, cmp.Or(e.TakeOver, "components.WithTakeOver"))
}

// Is matches ErrOwned.
func (e *OwnerError) Is(target error) bool { return target == ErrOwned }

// ApplierOption configures a Dir (NewDir) or a Recorder (NewRecorder).
type ApplierOption func(*applierConfig)

type applierConfig struct {
	takeOver bool
	report   func(Action)
}

// WithTakeOver makes the Applier take over an object that exists labelled
// as another component's or another instance's, as kube/apply's
// apply.WithTakeOver does: it is written with the labels of the component
// that applies it, and its Action's Reason says from whom
// (`taken over from component "C" of instance "I"`). Off by default: such
// an object is an *OwnerError, and is not written. The previous owner's
// inventory still lists the object, but its prune leaves it in place,
// since its labels are no longer that owner's.
func WithTakeOver(takeOver bool) ApplierOption {
	return func(c *applierConfig) { c.takeOver = takeOver }
}

// WithReporter calls report with the Action of every object the Applier
// writes or removes, in order, from the goroutine that called Apply or
// Delete, while the Applier is locked (report must not call it). An
// adopted or taken-over object's Action has a Reason that says so.
func WithReporter(report func(Action)) ApplierOption {
	return func(c *applierConfig) { c.report = report }
}

func newApplierConfig(opts []ApplierOption) applierConfig {
	var c applierConfig
	for _, o := range opts {
		o(&c)
	}
	return c
}

// emit reports a, when there is a reporter.
func (c *applierConfig) emit(a Action) {
	if c.report != nil {
		c.report(a)
	}
}
