package apply

import (
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/runner"
)

// owner checks, before o is applied over old (the live object, read by
// the apply), that old is not another component's or another instance's.
// It returns the Reason of the Change ("" when old is already o's
// owner's), or a runner.Permanent *OwnerError (applying again would not
// change the labels). The decision is components.CheckOwner, the one
// every Applier of the module makes: an object to apply without ownership
// labels (an Applier used without a Manifest) is not checked; old with
// neither label is adopted, visibly (in a dry run too); old with either
// label set to another value is refused, unless WithTakeOver.
//
// The check costs no request: old is the read the apply makes anyway to
// tell created, configured and unchanged apart. It is as fresh as that
// read: two applies of the same object by two instances at the same
// moment can both pass it, the later one then labelling the object as its
// own; the other's prune then leaves it (its labels are no longer that
// one's), so nothing is deleted from under its owner.
func (a *Applier) owner(o components.Object, old *unstructured.Unstructured) (string, error) {
	reason, err := components.CheckOwner(o, old.GetLabels(), a.cfg.takeOver)
	if oe, ok := errors.AsType[*components.OwnerError](err); ok {
		return "", runner.Permanent((*OwnerError)(oe))
	}
	return reason, err
}
