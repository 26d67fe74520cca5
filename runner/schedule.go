package runner

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
)

// The scheduler of one hop. One coordinator goroutine (the caller of
// Execute) owns every piece of state below and the status; each attempt
// runs on its own goroutine and reports through the results channel, which
// has room for one message per component, so a runner goroutine never
// blocks on the coordinator and none outlives the hop: the coordinator
// returns only when no component is active.

// outcome is what a runner goroutine or a backoff wait reports.
type outcome struct {
	node     int
	err      error
	backoff  bool // a backoff wait ended (err is set if it was cut short)
	timedOut bool // the attempt ran past its timeout
}

type scheduler struct {
	r      *run
	hop    int
	h      *HopPlan
	ctx    context.Context // the hop's context: cancelled to stop runners
	stop   context.CancelCauseFunc
	result chan outcome

	remaining []int // dependencies not yet satisfied
	prio      []time.Duration
	tries     []int // attempts in this Execute call
	ready     readyQueue
	waiting   map[string][]int // ready, held back by their group's limit
	groupRun  map[string]int
	active    int // started and not yet terminal (includes backoff waits)

	level     []int
	levelLeft []int   // non-terminal components per level (Batch)
	deferred  [][]int // ready components of later levels (Batch)
	curLevel  int

	stopping   bool
	stopReason string
}

func (r *run) schedule(ctx context.Context, hop int, h *HopPlan) {
	g := h.Graph
	n := g.Len()
	hctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	sc := &scheduler{
		r: r, hop: hop, h: h, ctx: hctx, stop: stop, result: make(chan outcome, n),
		remaining: make([]int, n), prio: make([]time.Duration, n), tries: make([]int, n),
		level: make([]int, n), ready: readyQueue{},
	}
	sc.ready.prio = sc.prio
	levels := g.Levels()
	for l, nodes := range levels {
		for _, i := range nodes {
			sc.level[i] = l
		}
	}
	// Longest remaining path first: with limited slots this starts the
	// components that hold up the most work.
	for l := len(levels) - 1; l >= 0; l-- {
		for _, i := range levels[l] {
			var tail time.Duration
			for _, d := range g.Dependents(i) {
				tail = max(tail, sc.prio[d])
			}
			sc.prio[i] = g.Node(i).Duration + tail
		}
	}
	sc.levelLeft = make([]int, len(levels))
	sc.deferred = make([][]int, len(levels))
	cs := r.s.Hops[hop].Components
	for i := 0; i < n; i++ {
		if satisfied(&cs[i]) {
			continue
		}
		cs[i].Phase, cs[i].Code, cs[i].Reason = Pending, "", ""
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
	sc.loop(ctx)
}

func (sc *scheduler) loop(ctx context.Context) {
	done := ctx.Done()
	for {
		if !sc.stopping {
			sc.startReady()
		}
		if sc.active == 0 {
			break
		}
		select {
		case o := <-sc.result:
			sc.handle(o)
		case <-done:
			done = nil
			sc.halt("the run was cancelled: " + context.Cause(ctx).Error())
		}
	}
	// Whatever never started: cancelled if the run stopped. (Without a stop
	// every component either ran or was skipped behind a failure.)
	cs := sc.r.s.Hops[sc.hop].Components
	for i := range cs {
		if cs[i].Phase == Pending {
			sc.terminal(i, Cancelled, CodeCancelled, "not started: "+sc.stopReason, nil)
		}
	}
	sc.r.checkpoint(ctx)
}

// halt stops the hop: nothing new starts and running attempts see their
// ctx done.
func (sc *scheduler) halt(reason string) {
	if sc.stopping {
		return
	}
	sc.stopping, sc.stopReason = true, reason
	sc.stop(errors.New(reason))
}

func (sc *scheduler) push(i int) {
	if sc.r.e.mode == Batch && sc.level[i] > sc.curLevel {
		sc.deferred[sc.level[i]] = append(sc.deferred[sc.level[i]], i)
		return
	}
	heap.Push(&sc.ready, i)
}

// advanceLevel moves the Batch barrier past every finished level.
func (sc *scheduler) advanceLevel() {
	for sc.curLevel < len(sc.levelLeft)-1 && sc.levelLeft[sc.curLevel] == 0 {
		sc.curLevel++
		for _, i := range sc.deferred[sc.curLevel] {
			heap.Push(&sc.ready, i)
		}
		sc.deferred[sc.curLevel] = nil
	}
}

func (sc *scheduler) startReady() {
	limit := sc.r.e.maxParallel
	for sc.ready.Len() > 0 && (limit == 0 || sc.active < limit) && !sc.stopping {
		i := heap.Pop(&sc.ready).(int)
		group := sc.group(i)
		if gl, ok := sc.r.e.groupLimits[group]; ok && group != "" && sc.groupRun[group] >= gl {
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
		sc.active++
		sc.launch(i)
	}
}

func (sc *scheduler) group(i int) string {
	if to := sc.h.Graph.Node(i).To; to != nil {
		return to.Group
	}
	return ""
}

// launch starts attempt i after recording it as Running (write-ahead).
func (sc *scheduler) launch(i int) {
	r := sc.r
	node := sc.h.Graph.Node(i)
	cs := &r.s.Hops[sc.hop].Components[i]
	now := r.e.clock.Now()
	sc.tries[i]++
	cs.Attempts++
	if sc.tries[i] == 1 {
		cs.StartedAt, cs.FinishedAt, cs.Duration = now, time.Time{}, durationOf(now, now)
	}
	cs.Phase, cs.Code, cs.Reason, cs.Error, cs.Stack = Running, "", "", "", ""
	r.checkpoint(sc.ctx)
	if r.checkpointErr != nil {
		sc.halt("checkpoint failed: " + r.checkpointErr.Error())
		sc.terminal(i, Cancelled, CodeCheckpointFailed, "not started: checkpoint failed", nil)
		return
	}
	r.emit(Event{Type: ComponentStarted, Hop: sc.hop, Component: node.Name, Version: cs.ToVersion, Attempt: cs.Attempts})

	task := Task{Hop: sc.h, HopIndex: sc.hop, Component: node.Name, From: node.From, To: node.To, Attempt: cs.Attempts, Logger: r.e.logger}
	if r.e.logger.Enabled(sc.ctx, slog.LevelError) {
		task.Logger = r.e.logger.With("hop", sc.h.Name(), "component", node.Name, "attempt", cs.Attempts)
	}
	timeout := r.e.timeout
	if node.To != nil && node.To.Timeout.Duration > 0 {
		timeout = node.To.Timeout.Duration
	}
	go func() {
		actx, cancel := sc.ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			actx, cancel = r.e.clock.WithTimeout(sc.ctx, timeout)
		}
		err := callRunner(actx, r.e.runner, task)
		timedOut := err != nil && errors.Is(actx.Err(), context.DeadlineExceeded) && sc.ctx.Err() == nil
		cancel()
		sc.result <- outcome{node: i, err: err, timedOut: timedOut}
	}()
}

func callRunner(ctx context.Context, rn Runner, t Task) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: string(debug.Stack())}
		}
	}()
	return rn.Run(ctx, t)
}

func (sc *scheduler) handle(o outcome) {
	i := o.node
	if o.backoff {
		if o.err != nil || sc.stopping {
			sc.terminal(i, Cancelled, CodeCancelled, "cancelled while waiting to retry: "+sc.stopReason, nil)
			return
		}
		sc.launch(i)
		return
	}
	var panicErr *PanicError
	switch err := o.err; {
	case err == nil:
		sc.terminal(i, Succeeded, "", "", nil)
	case errors.Is(err, ErrSkipped):
		reason := err.Error()
		var se *skipError
		if errors.As(err, &se) {
			reason = se.reason
		}
		sc.terminal(i, Skipped, "", reason, nil)
	case sc.stopping:
		sc.terminal(i, Cancelled, CodeCancelled, "cancelled: "+sc.stopReason, err)
	case errors.As(err, &panicErr):
		sc.r.s.Hops[sc.hop].Components[i].Stack = panicErr.Stack
		sc.terminal(i, Failed, CodePanic, "", err)
	default:
		code := CodeComponentFailed
		if o.timedOut {
			code = CodeComponentTimeout
		}
		pol := sc.r.e.retriesFor(sc.h.Graph.Node(i).To)
		if sc.tries[i] >= pol.attempts || IsPermanent(err) {
			sc.terminal(i, Failed, code, "", err)
			return
		}
		sc.retry(i, pol, err)
	}
}

// retry records the failed attempt and waits out the backoff; the
// component keeps its slot meanwhile.
func (sc *scheduler) retry(i int, pol retryPolicy, err error) {
	r := sc.r
	cs := &r.s.Hops[sc.hop].Components[i]
	wait := pol.delay(sc.tries[i]+1, r.e.jitter, r.rnd)
	cs.Error = err.Error()
	r.checkpoint(sc.ctx)
	r.emit(Event{Type: ComponentRetrying, Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: cs.Attempts, Err: err, Backoff: wait})
	ctx, after := sc.ctx, r.e.clock.After(wait)
	go func() {
		select {
		case <-after:
			sc.result <- outcome{node: i, backoff: true}
		case <-ctx.Done():
			sc.result <- outcome{node: i, backoff: true, err: ctx.Err()}
		}
	}()
}

// terminal records the end of component i and does what follows from it:
// release its slot, free its dependents, skip them on failure, apply the
// failure policy, move the Batch barrier.
func (sc *scheduler) terminal(i int, phase Phase, code Code, reason string, err error) {
	r := sc.r
	cs := &r.s.Hops[sc.hop].Components[i]
	now := r.e.clock.Now()
	wasStarted := cs.Phase == Running
	cs.Phase, cs.Code, cs.Reason = phase, code, reason
	if err != nil {
		cs.Error = err.Error()
	}
	if wasStarted {
		cs.FinishedAt, cs.Duration = now, durationOf(cs.StartedAt, now)
		sc.active--
		sc.groupRun[sc.group(i)]--
		if g := sc.group(i); len(sc.waiting[g]) > 0 {
			for _, w := range sc.waiting[g] {
				heap.Push(&sc.ready, w)
			}
			sc.waiting[g] = nil
		}
	}
	sc.levelLeft[sc.level[i]]--
	r.s.Progress = progressOf(r.s)
	ev := Event{Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: cs.Attempts, Code: code, Reason: reason, Err: err, Duration: cs.Duration.Duration}
	switch phase {
	case Succeeded, Skipped:
		if satisfied(cs) {
			for _, d := range sc.h.Graph.Dependents(i) {
				if sc.remaining[d]--; sc.remaining[d] == 0 && r.s.Hops[sc.hop].Components[d].Phase == Pending {
					sc.push(d)
				}
			}
		}
		ev.Type = ComponentSucceeded
		if phase == Skipped {
			ev.Type = ComponentSkipped
		}
	case Failed:
		ev.Type = ComponentFailed
		r.failures++
		r.s.LastFailure = &Failure{Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: cs.Attempts, Code: code, Error: cs.Error, Time: now}
		r.errs = append(r.errs, &ComponentError{Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: cs.Attempts, Code: code, Err: err})
	case Cancelled:
		ev.Type = ComponentCancelled
	}
	r.checkpoint(sc.ctx)
	r.emit(ev)
	if phase == Failed {
		sc.skipDependents(i)
		if m := r.e.policy.maxFailures; m > 0 && r.failures >= m {
			sc.halt(fmt.Sprintf("stopped by the %s policy after %s failed", r.e.policy, cs.Name))
		}
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
		if cs[d].Phase == Pending {
			sc.terminal(d, Skipped, CodeDependencyFailed, reason, nil)
		}
	}
}

// readyQueue is a max-heap of component indexes by remaining critical path,
// then by index (name order), so that the start order is deterministic.
type readyQueue struct {
	items []int
	prio  []time.Duration
}

func (q readyQueue) Len() int { return len(q.items) }
func (q readyQueue) Less(a, b int) bool {
	x, y := q.items[a], q.items[b]
	if q.prio[x] != q.prio[y] {
		return q.prio[x] > q.prio[y]
	}
	return x < y
}
func (q readyQueue) Swap(a, b int) { q.items[a], q.items[b] = q.items[b], q.items[a] }
func (q *readyQueue) Push(x any)   { q.items = append(q.items, x.(int)) }
func (q *readyQueue) Pop() any {
	n := len(q.items) - 1
	x := q.items[n]
	q.items = q.items[:n]
	return x
}
