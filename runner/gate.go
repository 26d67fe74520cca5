package runner

import (
	"errors"
	"fmt"
	"strings"
)

// Gates. A hop (its UpgradePath rule's gate), a component
// (ComponentVersion.Gate) or a declared lifecycle phase
// (LifecyclePhase.Gate) may carry a gate: the run stops there, the step
// is WaitingForApproval (the component's or hop's phase, and the run's),
// Status.Waiting names it, and Execute returns a *GateError
// (ErrWaitingForApproval). Status.Approve records an approval (who and
// when, as given) in the status; the next Execute of that status passes
// the gate. Approvals are part of the record: they survive a crash with
// the status, and nothing but Approve sets one (a restart, a resume, a
// retry never does).
//
// WithGates adds gates the catalog does not have: on a hop (HOP) or a
// component (HOP/COMPONENT). Execute records them in Status.Gates, so an
// Execute that resumes the status keeps them whatever its options say.
//
// Steps are named HOP[/COMPONENT[/PHASE]]: HOP is the hop's target
// version as the catalog spells it ("v26.06"), COMPONENT a component's
// name on that hop, PHASE one of its steps (a declared lifecycle phase,
// an inline step such as "post-upgrade"). See StepName. In a route
// across tracks two hops may go to versions spelled alike (platform 2.0,
// kubernetes 2.0): the HOP of those hops, and only of those, is
// TRACK=VERSION ("platform=2.0", as a state across tracks is written),
// so that each step, its gate and its approval are its own. WithUntil and
// WithGates take TRACK=VERSION for any hop of a route across tracks;
// there a bare VERSION that names several hops is refused, and
// VERSION/COMPONENT names the hop that has the component.

// Errors of gates.
var (
	// ErrWaitingForApproval is matched by the *GateError Execute returns
	// when the run stopped at a gate.
	ErrWaitingForApproval = errors.New("runner: waiting for approval")
)

// GateError says which steps wait for approval, sorted.
type GateError struct {
	Steps []string
}

func (e *GateError) Error() string {
	return fmt.Sprintf("runner: waiting for approval of %s; approve it (Status.Approve) and run again", strings.Join(e.Steps, ", "))
}

// Is matches ErrWaitingForApproval.
func (e *GateError) Is(target error) bool { return target == ErrWaitingForApproval }

// WithGates gates each step (HOP or HOP/COMPONENT, see StepName) as if
// the catalog gated it: the run waits there until Status.Approve. Execute
// refuses a step the plan does not have (ErrInvalidPlan) and records the
// steps in Status.Gates: a resumed run keeps every gate recorded before,
// with or without this option.
func WithGates(steps ...string) Option {
	return func(e *Executor) { e.gates = append(e.gates, steps...) }
}

// gateReason is the reason of a gate added by WithGates.
const gateReason = "gated when the run started"

// hopOf is the index of the hop of p that the HOP part of a step names
// and, when component is not "", that has the component. HOP is the
// hop's step name (StepName), its target version, or, on a route across
// tracks, TRACK=VERSION. The hops of a route across tracks may go to
// versions spelled alike (platform 2.0, kubernetes 2.0): VERSION alone
// then names several hops, which is an error, and VERSION/COMPONENT
// names the one that has the component.
func hopOf(p *Plan, hop, component string) (int, error) {
	var names, matched, qualified []string
	var idx []int
	for i, h := range p.Hops {
		names = append(names, StepName(h, "", ""))
		to := h.To.Original()
		if names[i] == hop || to == hop || (h.Track != "" && h.Track+"="+to == hop) {
			idx = append(idx, i)
			matched = append(matched, fmt.Sprintf("hop %d %s", i+1, hopLabel(h)))
			qualified = append(qualified, h.Track+"="+to)
		}
	}
	switch {
	case len(idx) == 0:
		return -1, fmt.Errorf("the plan has no hop to %s; its hops are %s", hop, strings.Join(names, ", "))
	case component == "" && len(idx) > 1:
		return -1, fmt.Errorf("%s names %d hops: %s (their tracks go to versions spelled alike); write %s, or name a component of the hop (%s/COMPONENT)",
			hop, len(idx), strings.Join(matched, ", "), strings.Join(qualified, " or "), hop)
	case component == "":
		return idx[0], nil
	}
	var with []int
	for _, i := range idx {
		if _, ok := p.Hops[i].Graph.Index(component); ok {
			with = append(with, i)
		}
	}
	switch {
	case len(with) == 1:
		return with[0], nil
	case len(idx) == 1:
		return -1, fmt.Errorf("hop %s has no component %s; its components are %s", names[idx[0]], component, strings.Join(p.Hops[idx[0]].Graph.Names(), ", "))
	case len(with) == 0:
		var comps []string
		for _, i := range idx {
			comps = append(comps, fmt.Sprintf("hop %d %s: %s", i+1, hopLabel(p.Hops[i]), strings.Join(p.Hops[i].Graph.Names(), ", ")))
		}
		return -1, fmt.Errorf("no hop to %s has component %s; their components are %s", hop, component, strings.Join(comps, "; "))
	}
	return -1, fmt.Errorf("%s/%s names %d hops: %s each have component %s", hop, component, len(with), strings.Join(matched, ", "), component)
}

// hopLabel is "TRACK FROM -> TO", or "FROM -> TO" on one track.
func hopLabel(h *HopPlan) string {
	if h.Track == "" {
		return h.Name()
	}
	return h.Track + " " + h.Name()
}

// StepName names a step: the hop's target version, then the component
// and the phase when not empty ("v26.06", "v26.06/etcd",
// "v26.06/etcd/drain"). On a route across tracks whose hops go to
// versions spelled alike, each of those hops is TRACK=VERSION
// ("platform=2.0/agent"), as NewPlan sets it; other hops
// keep their target version.
func StepName(h *HopPlan, component, phase string) string {
	name := h.To.Original()
	if h.step != "" {
		name = h.step
	}
	if component != "" {
		name += "/" + component
		if phase != "" {
			name += "/" + phase
		}
	}
	return name
}

// qualifySteps names TRACK=VERSION the hops that go to a version
// spelled as another hop's target (two tracks of a route, see StepName).
func qualifySteps(hops []*HopPlan) {
	count := map[string]int{}
	for _, h := range hops {
		count[h.To.Original()]++
	}
	for _, h := range hops {
		if to := h.To.Original(); count[to] > 1 {
			h.step = h.Track + "=" + to
		}
	}
}

func waitMessage(step, reason string) string {
	msg := "waiting for approval of " + step
	if reason != "" {
		msg += ": " + reason
	}
	return msg
}
