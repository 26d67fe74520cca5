package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/simulate"
)

// Progress goes to stderr, data to stdout. On a terminal (stderr one, and
// TERM not dumb) the progress keeps a bar on its last line, rewritten
// with \r; elsewhere (a pipe, a CI log, TERM=dumb) it writes whole lines
// only, and a heartbeat line when nothing was said for heartbeatAfter while
// components run, so that a log does not look hung.

// heartbeatAfter is how long a run may stay silent before the heartbeat
// says what is still running.
const heartbeatAfter = 30 * time.Second

// getenv is the environment of the command (env.getenv, else os.Getenv).
func (e env) getenvOr(key string) string {
	if e.getenv != nil {
		return e.getenv(key)
	}
	return os.Getenv(key)
}

// clock is the command's clock (env.now, else time.Now).
func (e env) clock() time.Time {
	if e.now != nil {
		return e.now()
	}
	return time.Now()
}

// stderrTerminal reports whether the progress may rewrite its line: stderr
// is a terminal, TERM is not dumb, and the log is not JSON.
func (c *cli) stderrTerminal() bool {
	if c.json || c.getenvOr("TERM") == "dumb" {
		// --log-format json: every line is a record, none a bar.
		return false
	}
	if c.terminal != nil {
		return c.terminal()
	}
	return simulate.IsTerminal(c.env.stderr)
}

// heartbeat is a runner.Observer that remembers which components run
// since when, and when anything was last said; beat writes "still running:
// NAME, DURATION" for them once the run has been silent for heartbeatAfter.
type heartbeat struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	last    time.Time            // when an event or a beat was last written
	running map[string]time.Time // component (and version) -> started
}

func newHeartbeat(w io.Writer, now func() time.Time) *heartbeat {
	return &heartbeat{w: w, now: now, last: now(), running: map[string]time.Time{}}
}

// Observe implements runner.Observer.
func (h *heartbeat) Observe(ev runner.Event) {
	if ev.Type == runner.ComponentWaiting {
		// The progress printer writes no line for it: the run is still
		// silent.
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	h.last = now
	switch ev.Type {
	case runner.ComponentStarted:
		h.running[ev.Component] = now
	case runner.ComponentSucceeded, runner.ComponentFailed, runner.ComponentCancelled, runner.ComponentSkipped:
		delete(h.running, ev.Component)
	case runner.PlanFinished:
		clear(h.running)
	}
}

// beat writes the heartbeat line if the run has been silent for
// heartbeatAfter with components running; the longest running first.
func (h *heartbeat) beat() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if len(h.running) == 0 || now.Sub(h.last) < heartbeatAfter {
		return
	}
	names := make([]string, 0, len(h.running))
	for name := range h.running {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := h.running[a].Compare(h.running[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s, %s", name, now.Sub(h.running[name]).Round(time.Second))
	}
	fmt.Fprintf(h.w, "still running: %s\n", strings.Join(parts, "; "))
	h.last = now
}

// every calls beat each tick until done is closed.
func (h *heartbeat) every(tick <-chan time.Time, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-tick:
			h.beat()
		}
	}
}

// progressObservers are run's observers of progress on stderr: the
// progress lines (with the bar on a terminal), and off a terminal the
// heartbeat, which ticks until stop is called.
func (c *cli) progressObservers() (obs []runner.Option, stop func()) {
	term := c.stderrTerminal()
	c.lines()
	p := simulate.NewProgress(c.sharedErr.w, term).WithText(c.cliMessage)
	obs = []runner.Option{runner.WithObserver(p)}
	if term {
		// The other lines on stderr go above its bar.
		c.bar.Store(p)
		return obs, func() {}
	}
	h := newHeartbeat(c.lines(), c.clock)
	done := make(chan struct{})
	ticker := time.NewTicker(time.Second)
	go h.every(ticker.C, done)
	return append(obs, runner.WithBlockingObserver(h)), func() {
		ticker.Stop()
		close(done)
	}
}
