package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
)

// The forward walk: the upgrade of a hop's components, dependencies
// first, through the Runner (the shared machinery is in schedule.go).

// initForward readies the components whose dependencies are satisfied;
// the others wait for them. What Until leaves out stays Pending.
func (sc *scheduler) initForward() {
	r, g, hop := sc.r, sc.h.Graph, sc.hop
	n := g.Len()
	levels := g.Levels()
	sc.level = make([]int, n)
	for l, nodes := range levels {
		for _, i := range nodes {
			sc.level[i] = l
		}
	}
	sc.levelLeft = make([]int, len(levels))
	sc.deferred = make([][]int, len(levels))
	cs := r.s.Hops[hop].Components
	for i := 0; i < n; i++ {
		if satisfied(&cs[i]) {
			continue
		}
		if cs[i].Phase != record.Pending || cs[i].Code != "" || cs[i].Reason != "" {
			cs[i].Phase, cs[i].Code, cs[i].Reason = record.Pending, "", ""
			r.mark(hop, i)
		}
		if !r.until.allows(hop, i) {
			continue // until.go: left out, stays Pending
		}
		sc.levelLeft[sc.level[i]]++
		for _, d := range g.Deps(i) {
			if !satisfied(&cs[d]) {
				sc.remaining[i]++
			}
		}
	}
	sc.advanceLevel()
	for i := 0; i < n; i++ {
		if !satisfied(&cs[i]) && sc.remaining[i] == 0 {
			sc.push(i)
		}
	}
}

// endForward records what never started: cancelled if the run stopped.
// (Without a stop every component either ran or was skipped behind a
// failure.)
func (sc *scheduler) endForward() {
	cs := sc.r.s.Hops[sc.hop].Components
	for i := range cs {
		switch cs[i].Phase {
		case record.Pending:
			if sc.holding() {
				continue // behind a held component, or left out by Until: stays Pending
			}
			sc.terminal(i, record.Cancelled, record.CodeCancelled, "not started: "+sc.stopReason, nil)
		case record.Running:
			// Its backoff ended, and the stop came before a slot did.
			sc.terminal(i, record.Cancelled, record.CodeCancelled, "retry not started: "+sc.stopReason, nil)
		}
	}
	sc.commit()
	sc.answerSteps()
}

// push readies component i, unless Until leaves it out or the Batch
// barrier holds it back.
func (sc *scheduler) push(i int) {
	if !sc.r.until.allows(sc.hop, i) {
		return
	}
	if sc.r.e.mode == Batch && sc.level[i] > sc.curLevel {
		sc.deferred[sc.level[i]] = append(sc.deferred[sc.level[i]], i)
		return
	}
	sc.ready.push(i)
}

// advanceLevel moves the Batch barrier past every finished level.
func (sc *scheduler) advanceLevel() {
	for sc.curLevel < len(sc.levelLeft)-1 && sc.levelLeft[sc.curLevel] == 0 {
		sc.curLevel++
		for _, i := range sc.deferred[sc.curLevel] {
			sc.ready.push(i)
		}
		sc.deferred[sc.curLevel] = nil
	}
}

// recordRunning records attempt i Running and returns its number
// (Attempts, which counts on across resumes).
func (sc *scheduler) recordRunning(i int) int {
	r := sc.r
	cs := &r.s.Hops[sc.hop].Components[i]
	cs.Attempts++
	if sc.tries[i] == 1 {
		cs.StartedAt, cs.FinishedAt, cs.Duration = sc.now, time.Time{}, release.Duration{}
	}
	cs.Phase, cs.Code, cs.Reason, cs.Error, cs.Stack = record.Running, "", "", "", ""
	r.mark(sc.hop, i)
	if len(r.e.observers) > 0 {
		r.emit(Event{Type: ComponentStarted, Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: cs.Attempts})
	}
	return cs.Attempts
}

// attempt runs one attempt with its timeout. It reads only what does not
// change during the hop: the graph, the executor's settings and sc.ctx.
func (sc *scheduler) attempt(j job) outcome {
	e := sc.r.e
	node := sc.h.Graph.Node(j.node)
	task := Task{Hop: sc.h, HopIndex: sc.hop, Component: node.Name, From: node.From, To: node.To, Attempt: j.attempt, Logger: e.logger,
		Step: j.step, steps: &stepHook{sc, j.node}}
	if e.logger.Enabled(sc.ctx, slog.LevelError) {
		task.Logger = e.logger.With("hop", sc.h.Name(), "component", node.Name, "attempt", j.attempt)
	}
	timeout, own := e.timeout, false
	if node.To != nil && node.To.Timeout.Duration > 0 {
		timeout, own = node.To.Timeout.Duration, true
	}
	actx, cancel := sc.ctx, context.CancelFunc(nil)
	if timeout > 0 {
		actx, cancel = e.clock.WithTimeout(sc.ctx, timeout)
	}
	err := callRunner(actx, e.runner, task)
	timedOut := err != nil && errors.Is(actx.Err(), context.DeadlineExceeded) && sc.ctx.Err() == nil
	if cancel != nil {
		cancel()
	}
	// Cancelled, not failed, only when the stop reached the runner: its ctx
	// is done and its error says so. Judging by timing alone would call
	// cancelled a runner that failed by itself a moment before the stop.
	stopped := err != nil && sc.ctx.Err() != nil &&
		(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Cause(sc.ctx)))
	return outcome{node: j.node, err: err, timedOut: timedOut, timeout: timeout, own: own, stopped: stopped}
}

func callRunner(ctx context.Context, rn Runner, t Task) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: string(debug.Stack())}
		}
	}()
	return rn.Run(ctx, t)
}

// attemptEnded handles the end of an attempt: success, a skip, a hold at
// a gate or the Until step, a cancellation, or a failure, retried while
// the component's retry policy allows.
func (sc *scheduler) attemptEnded(o outcome) {
	i := o.node
	if o.err != nil && sc.held(i, o.err) {
		return
	}
	switch err := o.err; {
	case err == nil:
		sc.terminal(i, record.Succeeded, "", "", nil)
	case errors.Is(err, ErrSkipped):
		reason := err.Error()
		var se *skipError
		if errors.As(err, &se) {
			reason = se.reason
		}
		sc.terminal(i, record.Skipped, "", reason, nil)
	case o.stopped:
		// The runner returned after its ctx was done: the stop's doing.
		// (One that failed by itself before is a failure, stop or not.)
		sc.terminal(i, record.Cancelled, record.CodeCancelled, "cancelled: "+sc.stopReason, err)
	case panicOf(err) != nil:
		sc.r.s.Hops[sc.hop].Components[i].Stack = recorded(panicOf(err).Stack)
		sc.r.mark(sc.hop, i)
		sc.terminal(i, record.Failed, record.CodePanic, "", err)
	default:
		code := record.CodeComponentFailed
		if o.timedOut {
			code = record.CodeComponentTimeout
			err = &timeoutError{d: o.timeout, own: o.own, cv: sc.h.Graph.Node(i).To, err: err}
		}
		pol := sc.r.e.retriesFor(sc.h.Graph.Node(i).To)
		if sc.tries[i] >= pol.attempts || IsPermanent(err) || sc.stopping {
			sc.terminal(i, record.Failed, code, "", err)
			return
		}
		// The failed attempt's error is recorded while the component
		// waits to be tried again.
		cs := &sc.r.s.Hops[sc.hop].Components[i]
		cs.Error = recorded(err.Error())
		sc.r.mark(sc.hop, i)
		sc.backoff(i, pol, code, err)
	}
}

// panicOf returns the recovered panic err holds, or nil. (A function of
// its own, so that the variable errors.As needs escapes only when there is
// an error to look at.)
func panicOf(err error) *PanicError {
	var p *PanicError
	if errors.As(err, &p) {
		return p
	}
	return nil
}

// terminal records the end of component i and does what follows from it:
// release its slot, free its dependents, skip them on failure, apply the
// failure policy, move the Batch barrier.
func (sc *scheduler) terminal(i int, phase record.Phase, code record.Code, reason string, err error) {
	r := sc.r
	cs := &r.s.Hops[sc.hop].Components[i]
	now := sc.now
	wasStarted := cs.Phase == record.Running
	cs.Phase, cs.Code, cs.Reason = phase, code, reason
	if err != nil {
		cs.Error = recorded(err.Error())
	}
	if wasStarted && !cs.StartedAt.IsZero() {
		cs.FinishedAt, cs.Duration = now, durationOf(cs.StartedAt, now)
	}
	sc.release(i)
	r.mark(sc.hop, i)
	sc.levelLeft[sc.level[i]]--
	// Only components that are not yet satisfied reach terminal, so the
	// progress moves by one at most (counting it again would cost O(n) per
	// component).
	if satisfied(cs) {
		r.s.Progress.Done++
	}
	evType := ComponentCancelled
	switch phase {
	case record.Succeeded, record.Skipped:
		if satisfied(cs) {
			all := r.s.Hops[sc.hop].Components
			for _, d := range sc.h.Graph.Dependents(i) {
				if sc.remaining[d]--; sc.remaining[d] == 0 && all[d].Phase == record.Pending {
					sc.push(d)
				}
			}
		}
		evType = ComponentSucceeded
		if phase == record.Skipped {
			evType = ComponentSkipped
		}
	case record.Failed:
		evType = ComponentFailed
		r.failures++
		r.s.LastFailure = &record.Failure{Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: cs.Attempts, Code: code, Error: cs.Error, Time: now}
		r.errs = append(r.errs, &ComponentError{Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: cs.Attempts, Code: code, Err: err})
	}
	if len(r.e.observers) > 0 {
		r.emit(Event{Type: evType, Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: cs.Attempts, Code: code, Reason: reason, Err: err, Duration: cs.Duration.Duration})
	}
	if phase == record.Failed {
		// Stop first (the running siblings see their ctx done now), then
		// skip the dependents: all of it goes into the round's one
		// checkpoint.
		if m := r.e.policy.maxFailures; m > 0 && r.failures >= m {
			sc.halt(fmt.Sprintf("stopped by the %s policy after %s failed", r.e.policy, cs.Name))
		}
		sc.skipDependents(i)
	}
	sc.advanceLevel()
}

// skipDependents marks every component downstream of the failed component
// i Skipped, naming i as the reason.
func (sc *scheduler) skipDependents(i int) {
	g := sc.h.Graph
	cs := sc.r.s.Hops[sc.hop].Components
	reason := fmt.Sprintf("dependency %s failed", cs[i].Name)
	for _, d := range g.Descendants(i) {
		if cs[d].Phase == record.Pending {
			sc.terminal(d, record.Skipped, record.CodeDependencyFailed, reason, nil)
		}
	}
}
