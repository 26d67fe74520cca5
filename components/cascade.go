package components

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/internal/english"
)

// Pruning a Namespace deletes every object in it, and pruning a
// CustomResourceDefinition every object of its kind: a prune that only
// looked at the Namespace's own labels would delete, with it, objects that
// other components or installations still own. So an Applier prunes such a
// cascading owner only when nothing live, not itself being pruned, would
// go with it; otherwise it leaves it in place and says what it holds. The
// Recorder and Dir keep the rule here; kube/apply keeps it against the API
// server.

// pruneStage orders a prune: other objects first, then
// CustomResourceDefinitions, then Namespaces, so that a cascading owner is
// deleted after what it holds of the component's, and judged by what is
// left.
func pruneStage(r Ref) int {
	switch {
	case r.Group == "" && r.Kind == "Namespace":
		return 2
	case r.Group == "apiextensions.k8s.io" && r.Kind == "CustomResourceDefinition":
		return 1
	}
	return 0
}

// pruneOrder sorts refs, stably, by pruneStage.
func pruneOrder(refs []Ref) {
	slices.SortStableFunc(refs, func(a, b Ref) int { return cmp.Compare(pruneStage(a), pruneStage(b)) })
}

// cascade returns whether deleting the object r, whose live content is
// content, deletes other objects with it, and which: a Namespace the
// objects in it, a CustomResourceDefinition the objects of its group and
// kind (spec.group, spec.names.kind).
func cascade(r Ref, content map[string]any) (func(Ref) bool, bool) {
	switch pruneStage(r) {
	case 2:
		return func(o Ref) bool { return o.Namespace == r.Name }, true
	case 1:
		spec, _ := content["spec"].(map[string]any)
		names, _ := spec["names"].(map[string]any)
		group, _ := spec["group"].(string)
		kind, _ := names["kind"].(string)
		if group == "" || kind == "" {
			return nil, false
		}
		return func(o Ref) bool { return o.Group == group && o.Kind == kind }, true
	}
	return nil, false
}

// held is a live object that deleting a cascading owner would delete too,
// with its labels (who owns it).
type held struct {
	ref    Ref
	labels map[string]string
}

// keepReason is the reason a prune leaves a cascading owner in place: the
// objects it holds, at most three named (sorted), each with its owner as
// its labels say.
func keepReason(hs []held) string {
	slices.SortFunc(hs, func(a, b held) int { return strings.Compare(a.ref.String(), b.ref.String()) })
	var names []string
	for i, h := range hs {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(hs)-3))
			break
		}
		names = append(names, h.ref.String()+" ("+ownerText(h.labels)+")")
	}
	return fmt.Sprintf("not pruned: deleting it would delete %d live %s with it: %s; prune it again once they are gone, or delete it by hand",
		len(hs), english.Plural(len(hs), "object"), strings.Join(names, ", "))
}

// ownerText says who the labels make an object's owner.
func ownerText(labels map[string]string) string {
	c, i := labels[LabelComponent], labels[LabelInstance]
	if c == "" && i == "" {
		return "not hopdag's"
	}
	return fmt.Sprintf("component %q of instance %q", c, i)
}
