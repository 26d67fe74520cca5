package runner

import (
	"errors"
	"time"

	"github.com/hopdag/hopdag/record"
)

// The mailbox between the coordinator and the workers of a walk (see
// schedule.go): the jobs it queues, the outcomes they report.

// launch is an attempt of this round, not yet checkpointed: its
// component's record before it was marked Running (or RollingBack).
type launch struct {
	node   int
	before record.ComponentStatus
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
	stopped  bool          // the attempt ended because the walk was stopped (a stop, not a failure)
	step     string        // a step entry (Task.Enter): the step
	reply    chan<- error  // a step entry: where to answer
	waiting  string        // a Task.Waiting report: the message
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
		// in progress (a panic is recovered in callRunner and
		// callRollback): report the attempt failed, and that this
		// worker is gone.
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
		var o outcome
		if sc.dir == reverse {
			o = sc.rollbackAttempt(j)
		} else {
			o = sc.attempt(j)
		}
		busy = false
		o.attempt = true
		sc.mu.Lock()
		sc.post(o)
	}
}

// report hands the outcome of a backoff wait (or a step entry) to the
// coordinator.
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
