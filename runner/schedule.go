package runner

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hopdag/hopdag/record"
)

// The scheduler: the one walker of a hop's graph, in either direction.
// Forward (the upgrade, schedule_forward.go) starts a component once its
// dependencies are satisfied; reverse (the rollback, schedule_reverse.go)
// rolls a component back once the dependents it rolls back with are
// rolled back. Both walks share what this file and schedule_worker.go
// hold: the ready set (longest remaining path first, in the walk's
// direction), the parallel limits (WithMaxParallel, WithGroupLimit), the
// retry policy (a failed attempt that is not Permanent is tried again
// after its backoff, holding no slot meanwhile), the write-ahead
// checkpoint of each round, the events, and the stop: the caller's ctx
// or a failed checkpoint halts the walk, nothing new starts, and the
// walk returns once nothing is in flight.
//
// One coordinator goroutine (the caller of Execute) owns the status and
// every field of the scheduler but the mailbox.
//
// Attempts run on a pool of worker goroutines that share the mailbox (a
// mutex, a queue of jobs, a list of outcomes): the coordinator queues
// attempts; a worker takes one, runs it, reports its outcome and takes the
// next without parking while there is one. The coordinator starts a
// worker whenever more attempts are in flight (queued, running, or
// reported and not yet handled) than there are workers, so an attempt
// never waits for a worker (a hanging runner holds its worker, not the
// others), and a hop runs on as many goroutines as it ever had attempts at
// once, reused instead of one per attempt.
//
// Outcomes (of attempts and of backoff waits) go into the mailbox's list;
// the one that makes the list non-empty wakes the coordinator through a
// one-slot channel, and the coordinator takes the whole list at once.
// Reporting never blocks, and a burst of outcomes costs the coordinator
// one wake-up. (A wake-up may find the list already taken: the coordinator
// then waits again.)
//
// The coordinator returns only when no component is active (no attempt or
// backoff wait is outstanding), then closes the mailbox and waits for the
// workers and backoff waits to exit: no goroutine outlives the hop.

// direction is the way a walk goes through a hop's graph.
type direction int8

const (
	// forward: dependencies first (the upgrade).
	forward direction = iota
	// reverse: dependents first (the rollback).
	reverse
)

type scheduler struct {
	r   *run
	hop int
	h   *HopPlan
	dir direction
	// ctx is the walk's context, cancelled (stop) when it halts: it ends
	// backoff waits and, forward, the attempts in flight. attemptCtx is
	// the attempts' context: ctx forward; the caller's, reverse, so that a
	// halt for a failed checkpoint lets the rollbacks in flight finish
	// (one cut short would leave its component between versions) while
	// the caller's cancel still reaches them.
	ctx        context.Context
	attemptCtx context.Context
	stop       context.CancelCauseFunc
	wg         sync.WaitGroup // the workers and backoff waits
	workers    int            // workers started
	inflight   int            // attempts queued and not yet handled
	batch      []job          // attempts launched, not yet queued (see flush)

	// The mailbox, guarded by mu.
	mu      sync.Mutex
	jobs    []job      // queued attempts: jobs[head:]
	head    int        // first queued job
	idle    int        // workers waiting on hasJob, not yet signalled
	hasJob  *sync.Cond // on mu: a job was queued or the mailbox closed
	closed  bool       // the hop is over: workers exit
	results []outcome  // reported, not yet handled

	spare []outcome     // the coordinator's other results buffer
	wake  chan struct{} // one slot: results may be non-empty

	remaining []int    // components this one waits for, in the walk's direction, not yet done
	tries     []int    // attempts in this walk
	waitMsg   []string // the last Task.Waiting message of each component's attempt
	ready     readySet
	waiting   map[string][]int // ready, held back by their group's limit
	groupRun  map[string]int   // running components of limited groups
	active    int              // components holding a slot: attempts queued or running
	slot      []bool           // component holds a slot (of MaxParallel and its group's)
	backoffs  int              // components waiting out a retry's backoff (no slot)
	holds     int              // components held at a gate or the Until step (gate.go)
	// launched are the attempts of this round: recorded Running (or
	// RollingBack), not yet checkpointed, with their records as they were
	// before.
	launched []launch
	// acks are the step entries of this round (step.go).
	acks []stepAck

	// Forward only: the Batch barrier (schedule_forward.go).
	level     []int
	levelLeft []int   // non-terminal components per level (Batch)
	deferred  [][]int // ready components of later levels (Batch)
	curLevel  int

	// Reverse only: pending[i] says component i is still to roll back
	// (schedule_reverse.go).
	pending []bool

	stopping   bool
	stopReason string

	// now is the clock's time when the coordinator last woke: one reading
	// per batch of outcomes rather than two per component.
	now time.Time
}

// newScheduler returns the scheduler of a walk of hop in direction dir;
// the caller readies its first components (initForward, initReverse),
// then walks (loop) and closes it.
func newScheduler(ctx context.Context, r *run, hop int, dir direction) *scheduler {
	h := r.plan.Hops[hop]
	n := h.Graph.Len()
	wctx, stop := context.WithCancelCause(ctx)
	sc := &scheduler{
		r: r, hop: hop, h: h, dir: dir, ctx: wctx, attemptCtx: wctx, stop: stop, wake: make(chan struct{}, 1),
		remaining: make([]int, n), tries: make([]int, n), waitMsg: make([]string, n), slot: make([]bool, n), now: r.e.clock.Now(),
	}
	if dir == reverse {
		sc.attemptCtx = ctx
	}
	sc.hasJob = sync.NewCond(&sc.mu)
	sc.ready.init(sc.priorities())
	return sc
}

// next returns the components that wait for component i in the walk's
// direction: its dependents forward, its dependencies reverse.
func (sc *scheduler) next(i int) []int {
	if sc.dir == reverse {
		return sc.h.Graph.Deps(i)
	}
	return sc.h.Graph.Dependents(i)
}

// priorities is each component's expected remaining path in the walk's
// direction (its Duration plus the longest of those waiting for it): with
// limited slots, starting the longest first starts the components that
// hold up the most work.
func (sc *scheduler) priorities() []time.Duration {
	g := sc.h.Graph
	levels := g.Levels()
	prio := make([]time.Duration, g.Len())
	for k := range levels {
		l := len(levels) - 1 - k // forward: dependents before what they depend on
		if sc.dir == reverse {
			l = k
		}
		for _, i := range levels[l] {
			var tail time.Duration
			for _, d := range sc.next(i) {
				tail = max(tail, prio[d])
			}
			prio[i] = g.Node(i).Duration + tail
		}
	}
	return prio
}

// loop is the coordinator: it starts what is ready, checkpoints each
// round, hands the round's attempts to workers and handles their
// outcomes, until nothing is active.
func (sc *scheduler) loop(ctx context.Context) {
	done := ctx.Done()
	cancelled := func() {
		done = nil
		sc.now = sc.r.e.clock.Now()
		sc.halt("the run was cancelled: " + context.Cause(ctx).Error())
	}
	for {
		// Look at ctx before starting more, and not only when waiting:
		// outcomes of a busy hop may never leave the coordinator idle.
		select {
		case <-done:
			cancelled()
		default:
		}
		if !sc.stopping {
			sc.startReady()
		}
		// One checkpoint per round: the outcomes handled since the last
		// one and the attempts just launched, which start only once it
		// has returned (write-ahead).
		sc.commit()
		sc.answerSteps()
		sc.flush()
		if sc.active == 0 && sc.backoffs == 0 {
			return
		}
		sc.mu.Lock()
		batch := sc.results
		sc.results = sc.spare[:0]
		sc.mu.Unlock()
		if len(batch) == 0 {
			sc.spare = batch
			select {
			case <-sc.wake:
			case <-done:
				cancelled()
			}
			continue
		}
		sc.now = sc.r.e.clock.Now()
		for _, o := range batch {
			sc.handle(o)
		}
		clear(batch) // drop the errors it holds
		sc.spare = batch
	}
}

// close ends the walk: it closes the mailbox and waits for the workers
// and backoff waits to exit.
func (sc *scheduler) close() {
	sc.mu.Lock()
	sc.closed = true
	sc.mu.Unlock()
	sc.hasJob.Broadcast()
	sc.wg.Wait()
	sc.stop(nil)
}

// commit checkpoints the round. If the checkpoint fails, the hop halts at
// once, and the attempts of the round do not start (unlaunch).
func (sc *scheduler) commit() {
	r := sc.r
	if len(r.changes.changed) > 0 {
		r.checkpoint(sc.ctx)
		if r.checkpointErr != nil {
			sc.halt("checkpoint failed: " + r.checkpointErr.Error())
		}
	}
	switch {
	case len(sc.launched) == 0:
	case r.checkpointErr != nil:
		sc.unlaunch()
	case sc.dir == reverse:
		sc.rollbacksStarted()
	}
	sc.launched = sc.launched[:0]
}

// unlaunch takes back the attempts of a round whose checkpoint failed:
// they never reach a worker. Forward, their records go back to what they
// were, and they are Cancelled (CHECKPOINT_FAILED); reverse, they stay
// RollingBack, to resume.
func (sc *scheduler) unlaunch() {
	sc.batch = sc.batch[:0]
	cs := sc.r.s.Hops[sc.hop].Components
	for _, l := range sc.launched {
		i := l.node
		sc.inflight--
		sc.tries[i]--
		if sc.dir == reverse {
			sc.release(i)
			continue
		}
		cs[i] = l.before
		reason := "not started: checkpoint failed"
		if sc.tries[i] > 0 {
			reason = "retry not started: checkpoint failed"
		}
		sc.terminal(i, record.Cancelled, record.CodeCheckpointFailed, reason, nil)
	}
}

// halt stops the hop: nothing new starts, backoff waits end and, forward,
// running attempts see their ctx done.
func (sc *scheduler) halt(reason string) {
	if sc.stopping {
		return
	}
	sc.stopping, sc.stopReason = true, reason
	sc.stop(errors.New(reason))
}

// startReady launches ready components while the limits allow.
func (sc *scheduler) startReady() {
	limit := sc.r.e.maxParallel
	for sc.ready.Len() > 0 && (limit == 0 || sc.active < limit) && !sc.stopping {
		i := sc.ready.pop()
		if !sc.startable(i) {
			continue
		}
		if group, gl := sc.limitOf(i); gl > 0 {
			if sc.groupRun[group] >= gl {
				if sc.waiting == nil {
					sc.waiting = map[string][]int{}
				}
				sc.waiting[group] = append(sc.waiting[group], i)
				continue
			}
			if sc.groupRun == nil {
				sc.groupRun = map[string]int{}
			}
			sc.groupRun[group]++
		}
		sc.active++
		sc.slot[i] = true
		sc.launch(i)
	}
}

// startable reports whether ready component i starts: forward, unless
// held at its gate; reverse, unless blocked meanwhile or irreversible.
func (sc *scheduler) startable(i int) bool {
	if sc.dir == reverse {
		return sc.rollbackStartable(i)
	}
	return !sc.gated(i)
}

// limitOf returns the group of component i and its limit, 0 when the
// group has none.
func (sc *scheduler) limitOf(i int) (string, int) {
	if len(sc.r.e.groupLimits) == 0 {
		return "", 0
	}
	to := sc.h.Graph.Node(i).To
	if to == nil || to.Group == "" {
		return "", 0
	}
	return to.Group, sc.r.e.groupLimits[to.Group]
}

// release gives back the slots component i holds, if any, and readies
// the components its group's limit held back.
func (sc *scheduler) release(i int) {
	if !sc.slot[i] {
		return
	}
	sc.slot[i] = false
	sc.active--
	if g, gl := sc.limitOf(i); gl > 0 {
		sc.groupRun[g]--
		if ws := sc.waiting[g]; len(ws) > 0 {
			for _, w := range ws {
				sc.ready.push(w)
			}
			sc.waiting[g] = ws[:0]
		}
	}
}

// launch records an attempt of component i (Running forward, RollingBack
// reverse); the round's checkpoint (commit) records it before flush
// hands it to a worker (write-ahead).
func (sc *scheduler) launch(i int) {
	cs := &sc.r.s.Hops[sc.hop].Components[i]
	sc.launched = append(sc.launched, launch{node: i, before: *cs})
	sc.tries[i]++
	sc.waitMsg[i] = ""
	attempt := sc.tries[i]
	if sc.dir == reverse {
		sc.recordRollingBack(i)
	} else {
		attempt = sc.recordRunning(i)
	}
	sc.inflight++
	sc.batch = append(sc.batch, job{node: i, attempt: attempt, step: cs.Step})
}

// handle takes one outcome of a worker or a backoff wait.
func (sc *scheduler) handle(o outcome) {
	i := o.node
	if o.reply != nil {
		sc.enterStep(o)
		return
	}
	if o.waiting != "" {
		sc.waitingReported(o)
		return
	}
	if o.attempt {
		sc.inflight--
	}
	if o.exited {
		sc.workers--
	}
	if o.err != nil && o.stopped && !sc.stopping {
		// The caller's ctx is done but the loop has not seen it yet: an
		// error now is the cancellation's doing, not the component's.
		sc.halt("the run was cancelled: " + context.Cause(sc.ctx).Error())
	}
	switch {
	case o.backoff:
		sc.backoffs--
		if o.err != nil || sc.stopping {
			sc.retryCancelled(i)
			return
		}
		// Ready again: it takes a slot like any other component.
		sc.ready.push(i)
	case sc.dir == reverse:
		sc.rollbackEnded(o)
	default:
		sc.attemptEnded(o)
	}
}

// backoff waits out the backoff before component i's next attempt (of
// either walk) after an attempt that failed with err (code in the
// event). The component gives its slot back meanwhile, so that a long
// backoff never starves another component, and takes one again when the
// wait ends; a halt ends the wait (retryCancelled).
func (sc *scheduler) backoff(i int, pol retryPolicy, code record.Code, err error) {
	r := sc.r
	cs := &r.s.Hops[sc.hop].Components[i]
	wait := pol.delay(sc.tries[i]+1, r.e.jitter, r.rnd)
	sc.release(i)
	sc.backoffs++
	attempt := cs.Attempts
	if sc.dir == reverse {
		attempt = sc.tries[i]
	}
	r.emit(Event{Type: ComponentRetrying, Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: attempt, Err: err, Code: code, Backoff: wait})
	ctx, after := sc.ctx, r.e.clock.After(wait)
	sc.wg.Add(1) // waited for with the workers
	go func() {
		defer sc.wg.Done()
		select {
		case <-after:
			sc.report(outcome{node: i, backoff: true})
		case <-ctx.Done():
			sc.report(outcome{node: i, backoff: true, err: ctx.Err()})
		}
	}()
}

// retryCancelled records component i, whose backoff a halt ended, not
// tried again: Cancelled forward; reverse, still RollingBack, to resume.
func (sc *scheduler) retryCancelled(i int) {
	if sc.dir == reverse {
		sc.rollbackInterrupted(i, "rollback interrupted while waiting to retry: "+sc.stopReason)
		return
	}
	sc.terminal(i, record.Cancelled, record.CodeCancelled, "cancelled while waiting to retry: "+sc.stopReason, nil)
}
