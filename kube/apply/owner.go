package apply

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/runner"
)

// reasonAdopted is the Reason of the Change of an object that existed
// without ownership labels (created by kubectl, by another tool) and is
// now labelled as the component's: from now on its prune may delete it.
const reasonAdopted = "adopted: it had no hopdag ownership labels"

// owner checks, before o is applied over old (the live object, read by
// the apply), that old is not another component's or another instance's.
// It returns the Reason of the Change ("" when old is already o's
// owner's), or a runner.Permanent *OwnerError (applying again would not
// change the labels). An object to apply without ownership labels (an
// Applier used without a Manifest) claims no owner and is not checked.
//
// Who owns an object is what its labels say, as for a prune (Prune deletes
// only an object whose labels are still the pruning component's): old
// with neither label is nobody's and is adopted, visibly (reasonAdopted,
// in a dry run too); old with either label set to another value is
// refused, unless WithTakeOver. The check costs no request: old is the
// read the apply makes anyway to tell created, configured and unchanged
// apart. It is as fresh as that read: two applies of the same object by
// two instances at the same moment can both pass it, the later one then
// labelling the object as its own; the other's prune then leaves it
// (its labels are no longer that one's), so nothing is deleted from
// under its owner.
func (a *Applier) owner(o components.Object, old *unstructured.Unstructured) (string, error) {
	inst, comp, ok := components.Owner(o)
	if !ok {
		return "", nil
	}
	ls := old.GetLabels()
	oc, oi := ls[components.LabelComponent], ls[components.LabelInstance]
	switch {
	case oc == comp && oi == inst:
		return "", nil
	case oc == "" && oi == "":
		return reasonAdopted, nil
	case a.cfg.takeOver:
		return fmt.Sprintf("taken over from component %q of instance %q", oc, oi), nil
	}
	return "", runner.Permanent(&OwnerError{Object: o.Ref(), Component: comp, Instance: inst, OwnerComponent: oc, OwnerInstance: oi})
}
