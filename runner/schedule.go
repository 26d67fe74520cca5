package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/hopdag/hopdag/release"
)

// The scheduler of one hop. One coordinator goroutine (the caller of
// Execute) owns the status and every field of the scheduler but the
// mailbox.
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

// launch is an attempt of this round, not yet checkpointed: its
// component's record before it was marked Running.
type launch struct {
	node   int
	before ComponentStatus
}

// job is one attempt handed to a worker: the worker builds the Task from
// the hop's read-only graph, off the coordinator's path.
type job struct {
	node    int
	attempt int
	step    string // the record's Step when it was launched
}

// outcome is what a worker or a backoff wait reports.
type outcome struct {
	node     int
	attempt  bool // from a worker (else from a backoff wait)
	exited   bool // the worker exited (runtime.Goexit in the runner)
	err      error
	backoff  bool          // a backoff wait ended (err is set if it was cut short)
	timedOut bool          // the attempt ran past its timeout
	timeout  time.Duration // the attempt's timeout, 0 for none
	own      bool          // timeout is the component's spec.timeout
	stopped  bool          // the runner returned the hop's ctx error (a stop, not a failure)
	step     string        // a step entry (Task.Enter): the step
	reply    chan<- error  // a step entry: where to answer
}

type scheduler struct {
	r        *run
	hop      int
	h        *HopPlan
	ctx      context.Context // the hop's context: cancelled to stop runners
	stop     context.CancelCauseFunc
	wg       sync.WaitGroup // the workers and backoff waits
	workers  int            // workers started
	inflight int            // attempts queued and not yet handled
	batch    []job          // attempts launched, not yet queued (see flush)

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

	remaining []int // dependencies not yet satisfied
	tries     []int // attempts in this Execute call
	ready     readySet
	waiting   map[string][]int // ready, held back by their group's limit
	groupRun  map[string]int   // running components of limited groups
	active    int              // components holding a slot: attempts queued or running
	slot      []bool           // component holds a slot (of MaxParallel and its group's)
	backoffs  int              // components waiting out a retry's backoff (no slot)
	holds     int              // components held at a gate or the Until step (gate.go)
	// launched are the attempts of this round: recorded Running, not yet
	// checkpointed, with their records as they were before.
	launched []launch
	// acks are the step entries of this round (step.go).
	acks []stepAck

	level     []int
	levelLeft []int   // non-terminal components per level (Batch)
	deferred  [][]int // ready components of later levels (Batch)
	curLevel  int

	stopping   bool
	stopReason string

	// now is the clock's time when the coordinator last woke: one reading
	// per batch of outcomes rather than two per component.
	now time.Time
}

func (r *run) schedule(ctx context.Context, hop int, h *HopPlan) {
	g := h.Graph
	n := g.Len()
	hctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	sc := &scheduler{
		r: r, hop: hop, h: h, ctx: hctx, stop: stop, wake: make(chan struct{}, 1),
		remaining: make([]int, n), tries: make([]int, n), level: make([]int, n), slot: make([]bool, n),
	}
	sc.hasJob = sync.NewCond(&sc.mu)
	levels := g.Levels()
	for l, nodes := range levels {
		for _, i := range nodes {
			sc.level[i] = l
		}
	}
	// Longest remaining path first: with limited slots this starts the
	// components that hold up the most work.
	prio := make([]time.Duration, n)
	for l := len(levels) - 1; l >= 0; l-- {
		for _, i := range levels[l] {
			var tail time.Duration
			for _, d := range g.Dependents(i) {
				tail = max(tail, prio[d])
			}
			prio[i] = g.Node(i).Duration + tail
		}
	}
	sc.ready.init(prio)
	sc.levelLeft = make([]int, len(levels))
	sc.deferred = make([][]int, len(levels))
	cs := r.s.Hops[hop].Components
	for i := 0; i < n; i++ {
		if satisfied(&cs[i]) {
			continue
		}
		if cs[i].Phase != Pending || cs[i].Code != "" || cs[i].Reason != "" {
			cs[i].Phase, cs[i].Code, cs[i].Reason = Pending, "", ""
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
	sc.now = r.e.clock.Now()
	for i := 0; i < n; i++ {
		if !satisfied(&cs[i]) && sc.remaining[i] == 0 {
			sc.push(i)
		}
	}
	sc.loop(ctx)
	sc.mu.Lock()
	sc.closed = true
	sc.mu.Unlock()
	sc.hasJob.Broadcast()
	sc.wg.Wait()
}

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
			break
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
	// Whatever never started: cancelled if the run stopped. (Without a stop
	// every component either ran or was skipped behind a failure.)
	cs := sc.r.s.Hops[sc.hop].Components
	for i := range cs {
		switch cs[i].Phase {
		case Pending:
			if sc.holding() {
				continue // behind a held component, or left out by Until: stays Pending
			}
			sc.terminal(i, Cancelled, CodeCancelled, "not started: "+sc.stopReason, nil)
		case Running:
			// Its backoff ended, and the stop came before a slot did.
			sc.terminal(i, Cancelled, CodeCancelled, "retry not started: "+sc.stopReason, nil)
		}
	}
	sc.commit()
	sc.answerSteps()
}

// commit checkpoints the round. If the checkpoint fails, the hop halts at
// once, and the attempts of the round do not start: their records go back
// to what they were, and they are Cancelled (CHECKPOINT_FAILED).
func (sc *scheduler) commit() {
	r := sc.r
	if len(r.changes.changed) == 0 {
		sc.launched = sc.launched[:0]
		return
	}
	r.checkpoint(sc.ctx)
	if r.checkpointErr == nil {
		sc.launched = sc.launched[:0]
		return
	}
	sc.halt("checkpoint failed: " + r.checkpointErr.Error())
	if len(sc.launched) == 0 {
		return
	}
	sc.batch = sc.batch[:0]
	cs := r.s.Hops[sc.hop].Components
	for _, l := range sc.launched {
		i := l.node
		sc.inflight--
		sc.tries[i]--
		cs[i] = l.before
		reason := "not started: checkpoint failed"
		if sc.tries[i] > 0 {
			reason = "retry not started: checkpoint failed"
		}
		sc.terminal(i, Cancelled, CodeCheckpointFailed, reason, nil)
	}
	sc.launched = sc.launched[:0]
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

func (sc *scheduler) startReady() {
	limit := sc.r.e.maxParallel
	for sc.ready.Len() > 0 && (limit == 0 || sc.active < limit) && !sc.stopping {
		i := sc.ready.pop()
		if sc.gated(i) {
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

// launch records attempt i Running; the round's checkpoint (commit)
// records it before flush hands it to a worker (write-ahead).
func (sc *scheduler) launch(i int) {
	r := sc.r
	cs := &r.s.Hops[sc.hop].Components[i]
	now := sc.now
	sc.launched = append(sc.launched, launch{node: i, before: *cs})
	sc.tries[i]++
	cs.Attempts++
	if sc.tries[i] == 1 {
		cs.StartedAt, cs.FinishedAt, cs.Duration = now, time.Time{}, release.Duration{}
	}
	cs.Phase, cs.Code, cs.Reason, cs.Error, cs.Stack = Running, "", "", "", ""
	r.mark(sc.hop, i)
	if len(r.e.observers) > 0 {
		r.emit(Event{Type: ComponentStarted, Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: cs.Attempts})
	}
	sc.inflight++
	sc.batch = append(sc.batch, job{node: i, attempt: cs.Attempts, step: cs.Step})
}

// flush queues the attempts launched since the last flush, in one go, and
// gets workers for them: idle ones woken, new ones started.
func (sc *scheduler) flush() {
	if len(sc.batch) == 0 {
		return
	}
	sc.mu.Lock()
	if sc.head == len(sc.jobs) {
		sc.jobs, sc.head = sc.jobs[:0], 0
	}
	sc.jobs = append(sc.jobs, sc.batch...)
	// Wake as many waiting workers as there are queued jobs. idle counts
	// the workers that wait and have not been signalled, so each Signal
	// below wakes a distinct one.
	wake := min(sc.idle, len(sc.jobs)-sc.head)
	sc.idle -= wake
	sc.mu.Unlock()
	sc.batch = sc.batch[:0]
	for ; sc.inflight > sc.workers; sc.workers++ {
		sc.wg.Add(1)
		go sc.work()
	}
	for range wake {
		sc.hasJob.Signal()
	}
}

// errGoexit is the error of an attempt whose runner called runtime.Goexit
// (t.FailNow from a runner in a test, say).
var errGoexit = errors.New("runner: the runner called runtime.Goexit")

// work runs queued attempts until the hop closes the mailbox.
func (sc *scheduler) work() {
	var (
		j    job  // the attempt taken last
		busy bool // j is in progress
	)
	defer func() {
		// Only runtime.Goexit in a runner ends the loop with an attempt
		// in progress (a panic is recovered in callRunner): report the
		// attempt failed, and that this worker is gone.
		if busy {
			sc.report(outcome{node: j.node, attempt: true, exited: true, err: errGoexit})
		}
		sc.wg.Done()
	}()
	sc.mu.Lock()
	for {
		for sc.head == len(sc.jobs) && !sc.closed {
			sc.idle++ // the coordinator takes it back when it signals
			sc.hasJob.Wait()
		}
		if sc.head == len(sc.jobs) {
			sc.mu.Unlock()
			return
		}
		j = sc.jobs[sc.head]
		sc.head++
		sc.mu.Unlock()
		busy = true
		o := sc.attempt(j)
		busy = false
		o.attempt = true
		sc.mu.Lock()
		sc.post(o)
	}
}

// report hands the outcome of a backoff wait to the coordinator.
func (sc *scheduler) report(o outcome) {
	sc.mu.Lock()
	sc.post(o)
	sc.mu.Unlock()
}

// post adds o to the results and wakes the coordinator if they were
// empty. The caller holds mu; post never blocks.
func (sc *scheduler) post(o outcome) {
	sc.results = append(sc.results, o)
	if len(sc.results) == 1 {
		select {
		case sc.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
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

func (sc *scheduler) handle(o outcome) {
	i := o.node
	if o.reply != nil {
		sc.enterStep(o)
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
	if o.backoff {
		sc.backoffs--
		if o.err != nil || sc.stopping {
			sc.terminal(i, Cancelled, CodeCancelled, "cancelled while waiting to retry: "+sc.stopReason, nil)
			return
		}
		// Ready again: it takes a slot like any other component.
		sc.ready.push(i)
		return
	}
	if o.err != nil && sc.held(i, o.err) {
		return
	}
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
	case o.stopped:
		// The runner returned after its ctx was done: the stop's doing.
		// (One that failed by itself before is a failure, stop or not.)
		sc.terminal(i, Cancelled, CodeCancelled, "cancelled: "+sc.stopReason, err)
	case panicOf(err) != nil:
		sc.r.s.Hops[sc.hop].Components[i].Stack = recorded(panicOf(err).Stack)
		sc.r.mark(sc.hop, i)
		sc.terminal(i, Failed, CodePanic, "", err)
	default:
		code := CodeComponentFailed
		if o.timedOut {
			code = CodeComponentTimeout
			err = &timeoutError{d: o.timeout, own: o.own, cv: sc.h.Graph.Node(i).To, err: err}
		}
		pol := sc.r.e.retriesFor(sc.h.Graph.Node(i).To)
		if sc.tries[i] >= pol.attempts || IsPermanent(err) || sc.stopping {
			sc.terminal(i, Failed, code, "", err)
			return
		}
		sc.retry(i, pol, code, err)
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

// retry records the failed attempt (its error, and code in the event)
// and waits out the backoff. The
// component gives its slot back meanwhile, so that a long backoff never
// starves another component, and takes one again when the wait ends.
func (sc *scheduler) retry(i int, pol retryPolicy, code Code, err error) {
	r := sc.r
	cs := &r.s.Hops[sc.hop].Components[i]
	wait := pol.delay(sc.tries[i]+1, r.e.jitter, r.rnd)
	cs.Error = recorded(err.Error())
	r.mark(sc.hop, i)
	sc.release(i)
	sc.backoffs++
	r.emit(Event{Type: ComponentRetrying, Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: cs.Attempts, Err: err, Code: code, Backoff: wait})
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

// terminal records the end of component i and does what follows from it:
// release its slot, free its dependents, skip them on failure, apply the
// failure policy, move the Batch barrier.
func (sc *scheduler) terminal(i int, phase Phase, code Code, reason string, err error) {
	r := sc.r
	cs := &r.s.Hops[sc.hop].Components[i]
	now := sc.now
	wasStarted := cs.Phase == Running
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
	case Succeeded, Skipped:
		if satisfied(cs) {
			all := r.s.Hops[sc.hop].Components
			for _, d := range sc.h.Graph.Dependents(i) {
				if sc.remaining[d]--; sc.remaining[d] == 0 && all[d].Phase == Pending {
					sc.push(d)
				}
			}
		}
		evType = ComponentSucceeded
		if phase == Skipped {
			evType = ComponentSkipped
		}
	case Failed:
		evType = ComponentFailed
		r.failures++
		r.s.LastFailure = &Failure{Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: cs.Attempts, Code: code, Error: cs.Error, Time: now}
		r.errs = append(r.errs, &ComponentError{Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: cs.Attempts, Code: code, Err: err})
	}
	if len(r.e.observers) > 0 {
		r.emit(Event{Type: evType, Hop: sc.hop, Component: cs.Name, Version: cs.ToVersion, Attempt: cs.Attempts, Code: code, Reason: reason, Err: err, Duration: cs.Duration.Duration})
	}
	if phase == Failed {
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

// readySet holds the components ready to start and pops them in start
// order: longest remaining critical path first, then by index (name
// order), so that the order is deterministic. That order is fixed for the
// hop, so each component gets its rank once, and the set is a bitmap over
// ranks with one summary bit per word: push and pop cost a few word
// operations where a heap would cost log n comparisons.
type readySet struct {
	rank    []int32 // component -> rank
	byRank  []int32 // rank -> component
	words   []uint64
	summary []uint64 // bit w: words[w] != 0
	n       int
}

// init ranks the components by prio, descending, then by index.
func (q *readySet) init(prio []time.Duration) {
	n := len(prio)
	q.rank, q.byRank = make([]int32, n), make([]int32, n)
	for i := range q.byRank {
		q.byRank[i] = int32(i)
	}
	if slices.ContainsFunc(prio, func(p time.Duration) bool { return p != prio[0] }) {
		slices.SortStableFunc(q.byRank, func(a, b int32) int { return cmp.Compare(prio[b], prio[a]) })
	}
	for r, i := range q.byRank {
		q.rank[i] = int32(r)
	}
	q.words = make([]uint64, (n+63)/64)
	q.summary = make([]uint64, (len(q.words)+63)/64)
}

func (q *readySet) Len() int { return q.n }

func (q *readySet) push(i int) {
	r := q.rank[i]
	w := r >> 6
	if q.words[w] == 0 {
		q.summary[w>>6] |= 1 << (w & 63)
	}
	q.words[w] |= 1 << (r & 63)
	q.n++
}

// pop removes and returns the first component in start order; the set
// must not be empty.
func (q *readySet) pop() int {
	for s, sw := range q.summary {
		if sw == 0 {
			continue
		}
		w := s<<6 + bits.TrailingZeros64(sw)
		b := bits.TrailingZeros64(q.words[w])
		q.words[w] &^= 1 << b
		if q.words[w] == 0 {
			q.summary[s] &^= 1 << (w & 63)
		}
		q.n--
		return int(q.byRank[w<<6+b])
	}
	panic("runner: pop of an empty ready set")
}
