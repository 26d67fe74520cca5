package helm

import (
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/action"

	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// releaseID is a Helm release's identity: its namespace and name after
// defaulting (namespace and releaseName), which is where Helm keeps its
// history.
type releaseID struct{ namespace, name string }

func idOf(cv *release.ComponentVersion) releaseID {
	return releaseID{namespace: namespace(cv), name: releaseName(cv)}
}

func (id releaseID) String() string { return id.namespace + "/" + id.name }

// moved is the error for a to-version whose release is not its
// from-version's, or nil. A from-version that is no helm component (nil,
// or of another type) has no release: the hop installs to's.
//
// hopdag does not move a release: Run would install the chart a second
// time at to's release (Helm's history is per namespace and name) while
// from's keeps running, and Rollback, which looks at to's release, could
// not find the from-version. A move done as an install, a wait and an
// uninstall is not one Helm operation, and a rollback after the uninstall
// would have to install from's chart again: that is left to the catalog
// (a new component) or to the operator.
func moved(from, to *release.ComponentVersion) error {
	if from == nil || from.Helm == nil || to == nil || to.Helm == nil {
		return nil
	}
	was, is := idOf(from), idOf(to)
	if was == is {
		return nil
	}
	var changed []string
	field := func(name, from, to, dflt string) {
		if from == "" {
			from = fmt.Sprintf("%q (%s)", from, dflt)
		} else {
			from = fmt.Sprintf("%q", from)
		}
		if to == "" {
			to = fmt.Sprintf("%q (%s)", to, dflt)
		} else {
			to = fmt.Sprintf("%q", to)
		}
		changed = append(changed, "spec.helm."+name+" "+from+" -> "+to)
	}
	if was.namespace != is.namespace {
		field("namespace", from.Helm.Namespace, to.Helm.Namespace, "default")
	}
	if was.name != is.name {
		field("release", from.Helm.Release, to.Helm.Release, from.Name)
	}
	return &movedError{fmt.Sprintf("helm: %s: release %s is not %s's release %s (%s): hopdag does not move a Helm release "+
		"(the upgrade would install a second release beside %s, which would keep running, and a rollback could not find the from-version %s); "+
		"keep spec.helm.namespace and spec.helm.release as %s has them, or move it explicitly: ship it at %s as a new component "+
		"(another name: the hop installs it, and %s stays until it is uninstalled, by hand with `helm uninstall %s -n %s` or by a component of the hop)",
		to.Key(), is, from.Key(), was, strings.Join(changed, ", "), was, from.Key(),
		from.Key(), is, was, was.name, was.namespace)}
}

// movedError is moved's error; it matches ErrReleaseMoved.
type movedError struct{ msg string }

func (e *movedError) Error() string        { return e.msg }
func (e *movedError) Is(target error) bool { return target == ErrReleaseMoved }

// ValidateHop refuses, at plan time, every helm component of h whose
// release (namespace and name, after defaulting) is not its
// from-version's, naming both versions and both releases (ErrReleaseMoved;
// see moved). The components are in name order.
func (r *Runner) ValidateHop(h *runner.HopPlan) error {
	if h == nil || h.Graph == nil {
		return nil
	}
	var errs []error
	for i := range h.Graph.Len() {
		n := h.Graph.Node(i)
		if err := moved(n.From, n.To); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// rollbackMoved is Rollback for a task whose release moved (see moved):
// Run refuses such a task before it changes anything, so there is
// nothing to undo while t.To's release does not exist, and t.From's
// release is as the hop found it. A t.To release that exists was not
// installed by this hop's Run (a hopdag before this check installed
// moved releases; a person or another component may have): it may be a
// second copy of t.From's or someone else's, so Rollback leaves both and
// says which to look at.
func (r *Runner) rollbackMoved(cfg *action.Configuration, t runner.Task) error {
	cv := t.To
	was, is := idOf(t.From), idOf(cv)
	hs, err := history(cfg, is.name)
	if err != nil {
		return fmt.Errorf("helm: %s: history of release %s: %w", cv.Key(), is, err)
	}
	if len(hs) == 0 {
		r.taskLogger(t).Info("helm: nothing to roll back: the release moved, and Run does not move one",
			"release", is.String(), "from", was.String(), "version", t.From.Version.Original())
		return nil
	}
	return runner.Permanent(&movedError{fmt.Sprintf("helm: %s: roll back to %s: release %s exists, and %s's release is %s: hopdag does not move a Helm release, "+
		"so its Run did not install %s (revisions: %s), and it is left as it is: if it is a second copy of %s, uninstall it by hand "+
		"(`helm uninstall %s -n %s`), then run the rollback again",
		cv.Key(), t.From.Key(), is, t.From.Key(), was, is, describe(hs), was, is.name, is.namespace)})
}
