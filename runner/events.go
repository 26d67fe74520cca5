package runner

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopdag/hopdag/record"
)

// EventType names what happened.
type EventType string

// Event types, in the order a run emits them. Every pre- and post-check
// that runs to its end emits CheckSucceeded or CheckFailed (a check the
// caller cancelled while it ran emits neither: the hop ends Cancelled).
const (
	PlanStarted      EventType = "PlanStarted"
	HopStarted       EventType = "HopStarted"
	CheckSucceeded   EventType = "CheckSucceeded"
	CheckFailed      EventType = "CheckFailed"
	ComponentStarted EventType = "ComponentStarted"
	// ComponentWaiting says what a running attempt waits for (Reason,
	// e.g. "waiting for DaemonSet kube-system/calico-node: 3 of 5
	// updated"), as the runner reports it through Task.Waiting: once per
	// change of the message, between ComponentStarted and the attempt's
	// end. It is not recorded in the status.
	ComponentWaiting   EventType = "ComponentWaiting"
	ComponentRetrying  EventType = "ComponentRetrying"
	ComponentSucceeded EventType = "ComponentSucceeded"
	ComponentFailed    EventType = "ComponentFailed"
	ComponentSkipped   EventType = "ComponentSkipped"
	ComponentCancelled EventType = "ComponentCancelled"
	HopSucceeded       EventType = "HopSucceeded"
	HopFailed          EventType = "HopFailed"
	PlanFinished       EventType = "PlanFinished"
)

// Event is one thing that happened during Execute.
type Event struct {
	Type EventType
	Time time.Time
	// Hop is the hop's index, -1 for plan events; HopName is "from -> to".
	Hop     int
	HopName string
	// Component, Version and Attempt are set for component events; Check
	// for CheckSucceeded and CheckFailed.
	Component string
	Version   string
	Attempt   int
	Check     string
	// Err is the error of a failed attempt, component, check or run.
	Err error
	// Code and Reason explain failures, skips and cancellations (Reason
	// alone is what a ComponentWaiting attempt waits for); the Code
	// of ComponentRetrying is the failed attempt's (COMPONENT_FAILED, or
	// COMPONENT_TIMEOUT when its timeout stopped it; ROLLBACK_FAILED for
	// a rollback's).
	Code   record.Code
	Reason string
	// Duration is the time the component, check, hop or plan took so far
	// in this Execute call: after a resume it counts from the resumed
	// run's start, not the first run's (Status.StartedAt and FinishedAt
	// span every run, and the time between them). Backoff is the wait
	// before the next attempt (ComponentRetrying).
	Duration time.Duration
	Backoff  time.Duration
	// Phase is the final phase on HopSucceeded, HopFailed and PlanFinished;
	// a hop's rollback ends with a HopFailed of Phase RolledBack or
	// RollbackFailed, its Duration the rollback's.
	Phase    record.Phase
	Progress record.Progress
}

// Observer receives the events of a run.
//
// Delivery: events reach each observer in order. An observer added with
// WithObserver gets them from a goroutine of its own per Execute call,
// through a queue of its own, so a slow observer never slows the run, never
// blocks a component from starting, and never delays another observer.
// A panic in Observe is recovered and logged, and delivery goes on with the
// next event. Execute returns once every such observer has taken
// PlanFinished, or after the executor's observer drain timeout
// (WithObserverDrain, 5s by default) if one blocks; the events it did not
// take by then are dropped, and the executor's logger says, at Warn, for
// each observer that dropped events, how many.
//
// An observer added with WithBlockingObserver is called by Execute itself,
// before it goes on: it gets every event, none dropped, PlanFinished
// before Execute returns, and a slow one slows the run.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f(ev).
func (f ObserverFunc) Observe(ev Event) { f(ev) }

// SlogObserver logs every event at Info (Warn for failures) with its fields
// as attributes.
func SlogObserver(l *slog.Logger) Observer {
	return ObserverFunc(func(ev Event) {
		level := slog.LevelInfo
		switch ev.Type {
		case ComponentFailed, HopFailed, CheckFailed, ComponentRetrying:
			level = slog.LevelWarn
		}
		attrs := []slog.Attr{slog.Int("done", ev.Progress.Done), slog.Int("total", ev.Progress.Total)}
		if ev.HopName != "" {
			attrs = append(attrs, slog.String("hop", ev.HopName))
		}
		if ev.Component != "" {
			attrs = append(attrs, slog.String("component", ev.Component), slog.String("version", ev.Version), slog.Int("attempt", ev.Attempt))
		}
		if ev.Check != "" {
			attrs = append(attrs, slog.String("check", ev.Check))
		}
		if ev.Duration > 0 {
			attrs = append(attrs, slog.Duration("duration", ev.Duration))
		}
		if ev.Backoff > 0 {
			attrs = append(attrs, slog.Duration("backoff", ev.Backoff))
		}
		if ev.Code != "" {
			attrs = append(attrs, slog.String("code", string(ev.Code)))
		}
		if ev.Reason != "" {
			attrs = append(attrs, slog.String("reason", ev.Reason))
		}
		if ev.Phase != "" {
			attrs = append(attrs, slog.String("phase", string(ev.Phase)))
		}
		if ev.Err != nil {
			attrs = append(attrs, slog.String("error", ev.Err.Error()))
		}
		l.LogAttrs(context.Background(), level, string(ev.Type), attrs...)
	})
}

// WithBlockingObserver adds an observer that Execute calls itself, in
// order, before it goes on (see Observer): it gets every event, PlanFinished
// before Execute returns, whatever the other observers do, and a slow one
// slows the run. It is for an audit log that must be complete, such as one
// written a line per event; a display should use WithObserver.
func WithBlockingObserver(o Observer) Option {
	return func(e *Executor) { e.observers = append(e.observers, blocking{o}) }
}

// blocking marks an observer of WithBlockingObserver among the executor's.
type blocking struct{ Observer }

// dispatcher delivers the events of one Execute call: to each blocking
// observer at once, on the caller's goroutine, and to each other observer
// through a queue of its own (see Observer).
type dispatcher struct {
	blocking []Observer
	queues   []*queue
	logger   *slog.Logger
}

func newDispatcher(observers []Observer, logger *slog.Logger) *dispatcher {
	d := &dispatcher{logger: logger}
	for _, o := range observers {
		if b, ok := o.(blocking); ok {
			d.blocking = append(d.blocking, b.Observer)
			continue
		}
		q := &queue{o: o, logger: logger, wake: make(chan struct{}, 1), done: make(chan struct{})}
		d.queues = append(d.queues, q)
		go q.loop()
	}
	return d
}

// emit delivers ev to the blocking observers, then queues it for the
// others; it returns once the blocking observers took it.
func (d *dispatcher) emit(ev Event) {
	for _, o := range d.blocking {
		deliver(d.logger, o, ev)
	}
	for _, q := range d.queues {
		q.emit(ev)
	}
}

// close stops accepting events and waits, up to drain in all, for every
// queue to be delivered. For each observer that did not take all its
// events by then, it logs at Warn how many were dropped.
func (d *dispatcher) close(drain time.Duration) {
	for _, q := range d.queues {
		q.close()
	}
	t := time.NewTimer(drain)
	defer t.Stop()
	expired := false
	for _, q := range d.queues {
		if !expired {
			select {
			case <-q.done:
				continue
			case <-t.C:
				expired = true
			}
		}
		select {
		case <-q.done:
			continue
		default:
		}
		if n := q.drop(); n > 0 {
			d.logger.Warn("runner: observers did not take every event before the drain timeout; these were dropped",
				"observer", fmt.Sprintf("%T", q.o), "dropped", n, "timeout", drain)
		}
	}
}

// queue delivers events to one observer on its own goroutine through an
// unbounded queue, so that emit never blocks the scheduler.
type queue struct {
	o      Observer
	logger *slog.Logger

	mu     sync.Mutex
	events []Event
	closed bool
	// taken counts the events o returned from (dropped ones not): the
	// events emitted but not taken when close gave up were dropped.
	emitted, taken int
	wake           chan struct{} // capacity 1: "the queue may be non-empty"
	done           chan struct{} // closed when the goroutine has delivered everything
	// dropped is set when close gave up waiting: the goroutine delivers
	// nothing more and exits once the observer that blocked returns.
	dropped atomic.Bool
}

func (q *queue) emit(ev Event) {
	q.mu.Lock()
	q.events = append(q.events, ev)
	q.emitted++
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue) loop() {
	defer close(q.done)
	for {
		q.mu.Lock()
		batch, closed := q.events, q.closed
		q.events = nil
		q.mu.Unlock()
		for _, ev := range batch {
			if q.dropped.Load() {
				return
			}
			deliver(q.logger, q.o, ev)
			q.mu.Lock()
			q.taken++
			q.mu.Unlock()
		}
		if q.dropped.Load() || (closed && len(batch) == 0) {
			return
		}
		if len(batch) == 0 {
			<-q.wake
		}
	}
}

// close stops accepting events: the goroutine exits once it delivered
// what is queued.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// drop makes the goroutine deliver nothing more and returns how many
// events the observer did not take (the one it is in the middle of
// counts: it has not returned).
func (q *queue) drop() int {
	q.dropped.Store(true)
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.emitted - q.taken
}

// deliver calls o.Observe(ev), recovering a panic and logging it.
func deliver(logger *slog.Logger, o Observer, ev Event) {
	defer func() {
		if r := recover(); r != nil {
			logger.Error("runner: observer panicked", "event", string(ev.Type), "panic", r)
		}
	}()
	o.Observe(ev)
}
