package runner

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// EventType names what happened.
type EventType string

// Event types, in the order a run emits them. Every pre- and post-check
// that runs to its end emits CheckSucceeded or CheckFailed (a check the
// caller cancelled while it ran emits neither: the hop ends Cancelled).
const (
	PlanStarted        EventType = "PlanStarted"
	HopStarted         EventType = "HopStarted"
	CheckSucceeded     EventType = "CheckSucceeded"
	CheckFailed        EventType = "CheckFailed"
	ComponentStarted   EventType = "ComponentStarted"
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
	// Code and Reason explain failures, skips and cancellations; the Code
	// of ComponentRetrying is the failed attempt's (COMPONENT_FAILED, or
	// COMPONENT_TIMEOUT when its timeout stopped it).
	Code   Code
	Reason string
	// Duration is the time the component, check, hop or plan took so far
	// in this Execute call: after a resume it counts from the resumed
	// run's start, not the first run's (Status.StartedAt and FinishedAt
	// span every run, and the time between them). Backoff is the wait
	// before the next attempt (ComponentRetrying).
	Duration time.Duration
	Backoff  time.Duration
	// Phase is the final phase on HopSucceeded, HopFailed and PlanFinished.
	Phase    Phase
	Progress Progress
}

// Observer receives the events of a run.
//
// Delivery: events reach each observer in order, from one goroutine per
// Execute call that is not the scheduler's, so a slow observer never slows
// the run and never blocks a component from starting. A panic in Observe is
// recovered and logged, and delivery goes on with the next event. Execute
// returns once the observers have taken PlanFinished, or after the
// executor's observer drain timeout (WithObserverDrain, 5s by default) if an
// observer blocks; events not delivered by then are dropped.
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

// dispatcher delivers events to observers on its own goroutine through an
// unbounded queue, so that emit never blocks the scheduler.
type dispatcher struct {
	observers []Observer
	logger    *slog.Logger

	mu     sync.Mutex
	queue  []Event
	closed bool
	wake   chan struct{} // capacity 1: "the queue may be non-empty"
	done   chan struct{} // closed when the goroutine has delivered everything
	// dropped is set when close gave up waiting: the goroutine delivers
	// nothing more and exits once the observer that blocked returns.
	dropped atomic.Bool
}

func newDispatcher(observers []Observer, logger *slog.Logger) *dispatcher {
	d := &dispatcher{observers: observers, logger: logger, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if len(observers) == 0 {
		close(d.done)
		return d
	}
	go d.loop()
	return d
}

func (d *dispatcher) emit(ev Event) {
	if len(d.observers) == 0 {
		return
	}
	d.mu.Lock()
	d.queue = append(d.queue, ev)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *dispatcher) loop() {
	defer close(d.done)
	for {
		d.mu.Lock()
		batch, closed := d.queue, d.closed
		d.queue = nil
		d.mu.Unlock()
		for _, ev := range batch {
			for _, o := range d.observers {
				if d.dropped.Load() {
					return
				}
				d.deliver(o, ev)
			}
		}
		if d.dropped.Load() || (closed && len(batch) == 0) {
			return
		}
		if len(batch) == 0 {
			<-d.wake
		}
	}
}

func (d *dispatcher) deliver(o Observer, ev Event) {
	defer func() {
		if r := recover(); r != nil {
			d.logger.Error("runner: observer panicked", "event", string(ev.Type), "panic", r)
		}
	}()
	o.Observe(ev)
}

// close stops accepting events and waits up to drain for the queue to be
// delivered. It reports whether everything was delivered.
func (d *dispatcher) close(drain time.Duration) bool {
	if len(d.observers) == 0 {
		return true
	}
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(drain)
	defer t.Stop()
	select {
	case <-d.done:
		return true
	case <-t.C:
		d.dropped.Store(true)
		return false
	}
}
