package runner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hopdag/hopdag/record"
)

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
	sc.hold(i, record.WaitingForApproval, record.CodeWaitingForApproval, waitMessage(step, g.Reason))
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
		sc.hold(i, record.WaitingForApproval, record.CodeWaitingForApproval, waitMessage(ge.Steps[0], reason))
		sc.r.addWaiting(ge.Steps[0])
		return true
	}
	if errors.Is(err, ErrUntilReached) {
		cs := &sc.r.s.Hops[sc.hop].Components[i]
		sc.hold(i, record.Paused, record.CodeUntilReached, fmt.Sprintf("stopped before step %s as asked (until %s)", cs.Step, sc.r.until.name))
		sc.r.untilHit = true
		return true
	}
	return false
}

// hold records component i held (waiting for approval, or paused at the
// Until step): not finished, not failed; its dependents stay Pending.
func (sc *scheduler) hold(i int, phase record.Phase, code record.Code, reason string) {
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

// untilStop is ErrUntilReached when component i of the scheduler's hop
// enters step after the Until phase, or nil.
func (sc *scheduler) untilStop(i int, step string) error {
	u := sc.r.until
	if u == nil || u.hop != sc.hop || u.phase == "" || sc.h.Graph.Node(i).Name != u.component {
		return nil
	}
	if cs := &sc.r.s.Hops[sc.hop].Components[i]; cs.Step == u.phase && step != u.phase {
		return ErrUntilReached
	}
	return nil
}
