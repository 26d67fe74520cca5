package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hopdag/hopdag/release"
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

// WaitingForApproval is the phase of a step held by its gate, and of the
// run stopped there.
const WaitingForApproval Phase = "WaitingForApproval"

// CodeWaitingForApproval: a gate holds the step until it is approved.
const CodeWaitingForApproval Code = "WAITING_FOR_APPROVAL"

// Errors of gates.
var (
	// ErrWaitingForApproval is matched by the *GateError Execute returns
	// when the run stopped at a gate.
	ErrWaitingForApproval = errors.New("runner: waiting for approval")
	// ErrNotWaiting is matched by the error Approve returns for a step
	// that is not waiting for approval.
	ErrNotWaiting = errors.New("runner: step is not waiting for approval")
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

// resolveGates checks the executor's gates against p and returns s's
// gates with them, sorted, once each.
func (e *Executor) resolveGates(p *Plan, s *Status) ([]string, error) {
	gates := slices.Clone(s.Gates)
	for _, step := range e.gates {
		hop, component, sub := strings.Cut(step, "/")
		switch {
		case strings.Contains(component, "/"):
			return nil, fmt.Errorf("%w: gate %s: a gate added at run time is on a hop (HOP) or a component (HOP/COMPONENT); a phase's gate is declared in the catalog (gate: on the phase, in the ComponentVersion's spec.phases)", ErrInvalidPlan, step)
		case sub && component == "":
			return nil, fmt.Errorf("%w: gate %s: empty component; write HOP or HOP/COMPONENT", ErrInvalidPlan, step)
		}
		i, err := hopOf(p, hop, component)
		if err != nil {
			return nil, fmt.Errorf("%w: gate %s: %w", ErrInvalidPlan, step, err)
		}
		// Recorded as the step is named when it waits (TRACK=VERSION for
		// a hop that has a twin), whichever way it was written.
		gates = append(gates, StepName(p.Hops[i], component, ""))
	}
	slices.Sort(gates)
	return slices.Compact(gates), nil
}

// gate is the gate of step: the catalog's g, else one recorded in
// Status.Gates (WithGates), else nil.
func (r *run) gate(step string, g *release.Gate) *release.Gate {
	if g == nil && slices.Contains(r.s.Gates, step) {
		return &release.Gate{Reason: gateReason}
	}
	return g
}

// Approval is an operator's approval of a gated step.
type Approval struct {
	Step string    `json:"step" yaml:"step"`
	By   string    `json:"by" yaml:"by"`
	At   time.Time `json:"at" yaml:"at"`
}

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

// Approve records that by approved the gated step at at. The step must
// be waiting (in s.Waiting) and not yet approved; otherwise the error
// matches ErrNotWaiting and names what waits. Save the status (a
// state.Store) for the approval to count.
func (s *Status) Approve(step, by string, at time.Time) error {
	if by == "" {
		return errorf("approve %s: say who approves (by is empty)", step)
	}
	if s.Approved(step) {
		return fmt.Errorf("%w: %s was already approved", ErrNotWaiting, step)
	}
	if !slices.Contains(s.Waiting, step) {
		waiting := "nothing waits"
		if len(s.Waiting) > 0 {
			waiting = "waiting: " + strings.Join(s.Waiting, ", ")
		}
		return fmt.Errorf("%w: %s (%s)", ErrNotWaiting, step, waiting)
	}
	s.Approvals = append(s.Approvals, Approval{Step: step, By: by, At: at})
	return nil
}

// Approved reports whether step has an approval.
func (s *Status) Approved(step string) bool {
	return slices.ContainsFunc(s.Approvals, func(a Approval) bool { return a.Step == step })
}

// addWaiting notes that step waits, once.
func (r *run) addWaiting(step string) {
	if !slices.Contains(r.s.Waiting, step) {
		r.s.Waiting = append(r.s.Waiting, step)
		slices.Sort(r.s.Waiting)
	}
}

// gateHop stops hop i at its rule's gate unless approved. It reports
// whether the hop waits.
func (r *run) gateHop(ctx context.Context, i int, h *HopPlan) bool {
	step := StepName(h, "", "")
	g := r.gate(step, h.Rule.Gate)
	if g == nil || r.s.Approved(step) {
		return false
	}
	hs := &r.s.Hops[i]
	hs.Phase, hs.Code, hs.Message = WaitingForApproval, CodeWaitingForApproval, waitMessage(step, g.Reason)
	r.addWaiting(step)
	r.checkpoint(ctx)
	return true
}

func waitMessage(step, reason string) string {
	msg := "waiting for approval of " + step
	if reason != "" {
		msg += ": " + reason
	}
	return msg
}

// gated holds component i at its gate unless approved: it reports
// whether it did (the component is WaitingForApproval and does not
// start).
func (sc *scheduler) gated(i int) bool {
	to := sc.h.Graph.Node(i).To
	if to == nil {
		return false
	}
	step := StepName(sc.h, to.Name, "")
	g := sc.r.gate(step, to.Gate)
	if g == nil || sc.r.s.Approved(step) {
		return false
	}
	sc.hold(i, WaitingForApproval, CodeWaitingForApproval, waitMessage(step, g.Reason))
	sc.r.addWaiting(step)
	return true
}

// phaseGate is the *GateError of entering step of component i when the
// step is a declared phase whose gate is not approved, or nil.
func (sc *scheduler) phaseGate(i int, step string) error {
	to := sc.h.Graph.Node(i).To
	if to == nil {
		return nil
	}
	p, ok := to.Phase(step)
	if !ok || p.Gate == nil {
		return nil
	}
	name := StepName(sc.h, to.Name, step)
	if sc.r.s.Approved(name) {
		return nil
	}
	return &GateError{Steps: []string{name}}
}

// held handles an attempt that ended at a gate or at the Until step: the
// component is held there instead of failing, and the attempt is not
// counted: the next run goes on with it as the same attempt (Attempts
// counts the attempts that failed or were interrupted, and the last). It
// reports whether it was.
func (sc *scheduler) held(i int, err error) bool {
	ge, gate := errors.AsType[*GateError](err)
	gate = gate && len(ge.Steps) == 1
	if gate || errors.Is(err, ErrUntilReached) {
		sc.r.s.Hops[sc.hop].Components[i].Attempts--
	}
	if gate {
		to := sc.h.Graph.Node(i).To
		reason := ""
		if _, phase, ok := strings.Cut(strings.TrimPrefix(ge.Steps[0], StepName(sc.h, to.Name, "")), "/"); ok {
			if p, ok := to.Phase(phase); ok && p.Gate != nil {
				reason = p.Gate.Reason
			}
		}
		sc.hold(i, WaitingForApproval, CodeWaitingForApproval, waitMessage(ge.Steps[0], reason))
		sc.r.addWaiting(ge.Steps[0])
		return true
	}
	if errors.Is(err, ErrUntilReached) {
		cs := &sc.r.s.Hops[sc.hop].Components[i]
		sc.hold(i, Paused, CodeUntilReached, fmt.Sprintf("stopped before step %s as asked (until %s)", cs.Step, sc.r.until.name))
		sc.r.untilHit = true
		return true
	}
	return false
}

// hold records component i held (waiting for approval, or paused at the
// Until step): not finished, not failed; its dependents stay Pending.
func (sc *scheduler) hold(i int, phase Phase, code Code, reason string) {
	r := sc.r
	cs := &r.s.Hops[sc.hop].Components[i]
	cs.Phase, cs.Code, cs.Reason, cs.Error = phase, code, reason, ""
	sc.release(i)
	r.mark(sc.hop, i)
	sc.holds++
	sc.levelLeft[sc.level[i]]--
	sc.advanceLevel()
}

// holding reports whether the hop's unfinished components stay Pending
// at its end: something is held, or Until leaves them out, and the hop
// was not stopped.
func (sc *scheduler) holding() bool {
	return !sc.stopping && (sc.holds > 0 || sc.r.until.limits(sc.hop))
}

// heldHop is the phase of hop i when it ended with components held: the
// gate's or the Until step's, and ok; not ok when nothing was held.
func (r *run) heldHop(i int) (Phase, Code, string, bool) {
	hs := &r.s.Hops[i]
	var waiting []string
	paused := false
	for _, c := range hs.Components {
		switch c.Phase {
		case WaitingForApproval:
			waiting = append(waiting, c.Reason)
		case Paused:
			paused = true
		}
	}
	switch {
	case len(waiting) > 0:
		return WaitingForApproval, CodeWaitingForApproval, strings.Join(waiting, "; "), true
	case paused || (r.until.limits(i) && !allSatisfied(hs.Components)):
		r.untilHit = true
		return Paused, CodeUntilReached, fmt.Sprintf("stopped at %s as asked (until)", r.until.name), true
	}
	return "", "", "", false
}

// heldRun is the run's phase when it stopped at a gate or the Until
// step, and ok.
func (r *run) heldRun() (Phase, Code, string, bool) {
	if len(r.s.Waiting) > 0 {
		return WaitingForApproval, CodeWaitingForApproval, (&GateError{Steps: r.s.Waiting}).Error(), true
	}
	if r.untilHit {
		return Paused, CodeUntilReached, fmt.Sprintf("stopped after %s as asked (until %s); run again without it to continue", r.until.name, r.until.name), true
	}
	return "", "", "", false
}

// heldErr is Execute's error for a run stopped at a gate or the Until
// step, or nil.
func (r *run) heldErr() error {
	if len(r.s.Waiting) > 0 {
		return &GateError{Steps: slices.Clone(r.s.Waiting)}
	}
	if r.untilHit {
		return fmt.Errorf("%w: stopped after %s as asked", ErrUntilReached, r.until.name)
	}
	return nil
}

// held reports whether the run stopped at a gate or the Until step.
func (r *run) held() bool {
	_, _, _, ok := r.heldRun()
	return ok
}
