package path

import (
	"fmt"

	"github.com/hopdag/hopdag/release"
)

// Guard limits how far one component may move in a single hop. It is checked
// on every edge against the versions of Component that the edge's two
// releases ship ([release.Release.Ships]):
//
//   - when either release does not ship the component, the guard does not
//     apply (the component is added or removed by the hop);
//   - a change of major version violates the guard;
//   - otherwise the guard is violated when the minor version moves (up or
//     down) by more than MaxMinorSkew. MaxMinorSkew 0 allows patch changes
//     only.
//
// A mandatory guard (Overridable false) removes the edges it rejects. An
// overridable guard closes them unless the caller names it in
// [OverrideGuards]; a hop that uses such an edge lists the guard in
// [Hop.Overrides].
type Guard struct {
	// Name identifies the guard in options, errors and routes.
	Name string `json:"name" yaml:"name"`
	// Component is the name of the component whose version is checked.
	Component string `json:"component" yaml:"component"`
	// MaxMinorSkew is how many minor versions the component may move per hop.
	MaxMinorSkew int `json:"maxMinorSkew" yaml:"maxMinorSkew"`
	// Overridable lets the caller override the guard with OverrideGuards.
	Overridable bool `json:"overridable,omitempty" yaml:"overridable,omitempty"`
}

// KubernetesSkewGuardName is the name of the guard KubernetesSkewGuard returns.
const KubernetesSkewGuardName = "kubernetes-minor-skew"

// KubernetesSkewGuard is the mandatory guard of the Kubernetes version skew
// policy: kubernetes-master (the control plane) may move at most one minor
// version per hop, as kubeadm requires. Set Overridable on the returned value
// to let callers override it.
func KubernetesSkewGuard() Guard {
	return Guard{Name: KubernetesSkewGuardName, Component: "kubernetes-master", MaxMinorSkew: 1}
}

func (g Guard) validate() error {
	switch {
	case g.Name == "":
		return fmt.Errorf("%w: guard on component %q has no name", ErrInvalidOption, g.Component)
	case g.Component == "":
		return fmt.Errorf("%w: guard %q has no component", ErrInvalidOption, g.Name)
	case g.MaxMinorSkew < 0:
		return fmt.Errorf("%w: guard %q: MaxMinorSkew must be >= 0, got %d", ErrInvalidOption, g.Name, g.MaxMinorSkew)
	}
	return nil
}

// GuardViolation says how an edge breaks a guard.
type GuardViolation struct {
	Guard       string          `json:"guard" yaml:"guard"`
	Overridable bool            `json:"overridable,omitempty" yaml:"overridable,omitempty"`
	Component   string          `json:"component" yaml:"component"`
	From        release.Version `json:"from" yaml:"from"`
	To          release.Version `json:"to" yaml:"to"`
	// Message says what is wrong, e.g. "kubernetes-master moves from v1.32.4
	// to v1.34.1, 2 minor versions; at most 1 per hop".
	Message string `json:"message" yaml:"message"`

	guard int // index in the index's guards
}

// Check reports how the hop from one release to another violates g, if it
// does. Either release may be nil (the guard then does not apply).
func (g Guard) Check(from, to *release.Release) (GuardViolation, bool) {
	if from == nil || to == nil {
		return GuardViolation{}, false
	}
	fv, ok1 := from.Ships(g.Component)
	tv, ok2 := to.Ships(g.Component)
	if !ok1 || !ok2 {
		return GuardViolation{}, false
	}
	return g.check(fv, tv)
}

func (g Guard) check(fv, tv release.Version) (GuardViolation, bool) {
	var msg string
	switch {
	case fv.Major() != tv.Major():
		msg = fmt.Sprintf("%s changes major version from %s to %s", g.Component, fv, tv)
	default:
		skew := tv.Minor() - fv.Minor()
		if fv.Minor() > tv.Minor() {
			skew = fv.Minor() - tv.Minor()
		}
		if skew <= uint64(g.MaxMinorSkew) {
			return GuardViolation{}, false
		}
		msg = fmt.Sprintf("%s moves from %s to %s, %d minor versions; at most %d per hop", g.Component, fv, tv, skew, g.MaxMinorSkew)
	}
	return GuardViolation{Guard: g.Name, Overridable: g.Overridable, Component: g.Component, From: fv, To: tv, Message: msg}, true
}
