package runner

import (
	"context"
	"errors"

	"github.com/hopdag/hopdag/record"
)

// Steps: a runner with phases (an inline handler's NeedsUpgrade,
// PreUpgrade, Upgrade, PostUpgrade; a component's declared lifecycle
// phases) calls Task.Enter before each one. The executor records the
// step in the component's record (ComponentStatus.Step) and returns once
// that record is durable (write-ahead, like Running), so that a retry,
// or a run resumed after a crash, is given the step in Task.Step and
// continues there instead of starting over: a failed PostUpgrade runs
// PostUpgrade again, and NeedsUpgrade, which would see the system at its
// target, does not run.
//
// Enter is also where a step's gate and the executor's Until stop a
// component (gate.go, until.go).

// stepper records a step entry for one attempt.
type stepper interface {
	enter(ctx context.Context, step string) error
	waiting(msg string)
}

// Enter records that the attempt enters step and returns once the record
// is durable. It returns an error the runner must return (wrapped or
// not) without running the step: the checkpoint's error when it could not
// be written, ctx's error when ctx is done, a *GateError when the step
// waits for an approval, ErrUntilReached when the run stops before it.
// Entering the step the record already names (Task.Step, a retry of the
// step that failed) costs no checkpoint.
//
// Call Enter only from the Run call the Task was given to. On a Task
// built by hand (not by an Executor) it does nothing and returns nil.
func (t Task) Enter(ctx context.Context, step string) error {
	if step == "" {
		return errors.New("runner: Task.Enter with an empty step")
	}
	if t.steps == nil {
		return ctx.Err()
	}
	return t.steps.enter(ctx, step)
}

// Waiting reports what the attempt waits for (e.g. "waiting for
// DaemonSet kube-system/calico-node: 3 of 5 updated"): the executor emits
// a ComponentWaiting event with msg as its Reason when msg differs from
// the attempt's last one. It never blocks and is not checkpointed. Call it
// only from the Run call the Task was given to; on a Task built by hand,
// or in a Rollback, it does nothing.
func (t Task) Waiting(msg string) {
	if t.steps != nil && msg != "" {
		t.steps.waiting(msg)
	}
}

// stepHook is the stepper of one attempt of component node.
type stepHook struct {
	sc   *scheduler
	node int
}

func (h *stepHook) enter(ctx context.Context, step string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	reply := make(chan error, 1)
	h.sc.report(outcome{node: h.node, step: step, reply: reply})
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		// The coordinator may still record the step; the reply is
		// buffered and dropped.
		return ctx.Err()
	}
}

func (h *stepHook) waiting(msg string) {
	h.sc.report(outcome{node: h.node, waiting: msg})
}

// waitingReported handles a Task.Waiting report on the coordinator: it
// emits ComponentWaiting when the component is still running and the
// message changed since its attempt's last one.
func (sc *scheduler) waitingReported(o outcome) {
	cs := &sc.r.s.Hops[sc.hop].Components[o.node]
	if cs.Phase != record.Running || sc.waitMsg[o.node] == o.waiting {
		return
	}
	sc.waitMsg[o.node] = o.waiting
	sc.r.emit(Event{Type: ComponentWaiting, Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: cs.Attempts, Reason: o.waiting})
}

// stepAck is a step entry waiting for the round's checkpoint.
type stepAck struct {
	reply chan<- error
	err   error // what to answer once the record is durable
}

// enterStep handles a step entry on the coordinator: it records the
// step and answers after the round's checkpoint (answerSteps), or at
// once when the record does not change.
func (sc *scheduler) enterStep(o outcome) {
	cs := &sc.r.s.Hops[sc.hop].Components[o.node]
	err := sc.stepStop(o.node, o.step)
	if cs.Step == o.step {
		o.reply <- err
		return
	}
	cs.Step = o.step
	sc.r.mark(sc.hop, o.node)
	sc.acks = append(sc.acks, stepAck{o.reply, err})
}

// answerSteps answers the step entries of the round once its checkpoint
// returned: with the checkpoint's error if it failed.
func (sc *scheduler) answerSteps() {
	for _, a := range sc.acks {
		if err := sc.r.checkpointErr; err != nil {
			a.reply <- err
			continue
		}
		a.reply <- a.err
	}
	clear(sc.acks)
	sc.acks = sc.acks[:0]
}

// stepStop says whether component node must stop before entering step:
// nil, or the error Enter returns.
func (sc *scheduler) stepStop(node int, step string) error {
	if err := sc.untilStop(node, step); err != nil {
		return err
	}
	return sc.phaseGate(node, step)
}
