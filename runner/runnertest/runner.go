// Package runnertest provides test doubles for package runner: a
// thread-safe recording Runner with scripted delays, failures, panics and
// hangs; a fake Clock; and checks of a recording against a graph
// (dependency order, parallelism and group bounds, run-once).
//
// It is for tests; production code never imports it.
package runnertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hopdag/hopdag/runner"
)

// Script says how the fake runs one component. The zero Script succeeds at
// once.
type Script struct {
	// Delay is how long each attempt takes (real time, cut short by ctx).
	Delay time.Duration
	// FailFirst fails the first N attempts (counted over the Runner's life,
	// so across resumed runs), then succeeds.
	FailFirst int
	// FailAlways fails every attempt.
	FailAlways bool
	// Permanent wraps the failures in runner.Permanent.
	Permanent bool
	// Panic panics instead of failing (on the attempts that fail, or on
	// every attempt if no failure is scripted).
	Panic bool
	// Hang blocks each attempt until ctx is done, then returns ctx.Err().
	Hang bool
	// Skip returns runner.Skip(Skip) when not empty.
	Skip string
}

// ErrScripted is the error scripted failures return.
var ErrScripted = errors.New("runnertest: scripted failure")

// Record is one attempt as the fake saw it. Start and End are positions in
// one global sequence of events, so order is exact even when clocks tie.
type Record struct {
	Hop       int
	Component string
	Attempt   int
	Start     int
	End       int
	Err       error
	// StartTime and EndTime are wall-clock times, for makespan measurements.
	StartTime, EndTime time.Time
}

// Runner is a thread-safe fake runner.Runner that records every attempt.
type Runner struct {
	mu       sync.Mutex
	scripts  map[string]Script
	attempts map[string]int
	records  []Record
	seq      int
	running  int
	peak     int
	// OnStart, when set, is called at the start of every attempt (outside
	// the lock), e.g. to cancel a context at a chosen moment.
	OnStart func(t runner.Task)
}

// New returns a fake runner whose components succeed at once unless scripted.
func New() *Runner {
	return &Runner{scripts: map[string]Script{}, attempts: map[string]int{}}
}

// Script sets the behaviour of a component (on every hop).
func (r *Runner) Script(component string, s Script) *Runner {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scripts[component] = s
	return r
}

// Run implements runner.Runner.
func (r *Runner) Run(ctx context.Context, t runner.Task) error {
	r.mu.Lock()
	s := r.scripts[t.Component]
	r.attempts[t.Component]++
	n := r.attempts[t.Component]
	r.seq++
	idx := len(r.records)
	r.records = append(r.records, Record{Hop: t.HopIndex, Component: t.Component, Attempt: t.Attempt, Start: r.seq, StartTime: time.Now()})
	r.running++
	r.peak = max(r.peak, r.running)
	onStart := r.OnStart
	r.mu.Unlock()

	var err error
	defer func() {
		// A scripted panic is recorded as a failure, then goes on up to
		// the executor.
		v := recover()
		if v != nil {
			err = fmt.Errorf("%v", v)
		}
		r.mu.Lock()
		r.seq++
		r.running--
		r.records[idx].End, r.records[idx].EndTime, r.records[idx].Err = r.seq, time.Now(), err
		r.mu.Unlock()
		if v != nil {
			panic(v)
		}
	}()
	if onStart != nil {
		onStart(t)
	}
	err = r.behave(ctx, s, n, t)
	return err
}

func (r *Runner) behave(ctx context.Context, s Script, n int, t runner.Task) error {
	if s.Hang {
		<-ctx.Done()
		return fmt.Errorf("%s hung until: %w", t.Component, ctx.Err())
	}
	if s.Delay > 0 {
		tm := time.NewTimer(s.Delay)
		defer tm.Stop()
		select {
		case <-tm.C:
		case <-ctx.Done():
			return fmt.Errorf("%s interrupted: %w", t.Component, ctx.Err())
		}
	}
	if s.Skip != "" {
		return runner.Skip(s.Skip)
	}
	fail := s.FailAlways || n <= s.FailFirst
	if s.Panic && (fail || (!s.FailAlways && s.FailFirst == 0)) {
		panic(fmt.Sprintf("runnertest: scripted panic in %s", t.Component))
	}
	if !fail {
		return nil
	}
	err := fmt.Errorf("%s attempt %d: %w", t.Component, t.Attempt, ErrScripted)
	if s.Permanent {
		return runner.Permanent(err)
	}
	return err
}

// Records returns a copy of the attempts recorded so far, in start order.
func (r *Runner) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.records)
}

// Attempts is how many attempts component has had.
func (r *Runner) Attempts(component string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts[component]
}

// Peak is the largest number of attempts that ran at once.
func (r *Runner) Peak() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peak
}
