package runnertest

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock is a fake runner.Clock whose time moves only when Advance is
// called, so backoff and timeout tests never sleep. It is safe for
// concurrent use.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*timer
	changed chan struct{} // closed and replaced whenever a timer is added
}

type timer struct {
	at   time.Time
	fire func()
}

// NewClock returns a fake clock set to start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives the fake time once it has advanced
// by d.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.add(d, func(now time.Time) { ch <- now })
	return ch
}

// WithTimeout returns a context that is done, with Err
// context.DeadlineExceeded, once the fake time has advanced by d.
func (c *Clock) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	deadline := c.Now().Add(d)
	t := c.add(d, func(time.Time) { cancel(context.DeadlineExceeded) })
	return deadlineCtx{ctx, deadline}, func() {
		c.remove(t)
		cancel(context.Canceled)
	}
}

// deadlineCtx reports context.DeadlineExceeded as its Err when the fake
// deadline cancelled it, as a real timeout context does.
type deadlineCtx struct {
	context.Context
	deadline time.Time
}

func (d deadlineCtx) Deadline() (time.Time, bool) { return d.deadline, true }
func (d deadlineCtx) Err() error {
	err := d.Context.Err()
	if err != nil && context.Cause(d.Context) == context.DeadlineExceeded {
		return context.DeadlineExceeded
	}
	return err
}

func (c *Clock) add(d time.Duration, fire func(time.Time)) *timer {
	c.mu.Lock()
	at := c.now.Add(d)
	t := &timer{at: at, fire: func() { fire(at) }}
	if d <= 0 {
		c.mu.Unlock()
		t.fire()
		return t
	}
	c.timers = append(c.timers, t)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	return t
}

func (c *Clock) remove(t *timer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i:i], c.timers[i+1:]...)
			return
		}
	}
}

// Advance moves the time forward by d and fires, in time order, every timer
// due by then.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due, rest []*timer
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			due = append(due, t)
		} else {
			rest = append(rest, t)
		}
	}
	c.timers = rest
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.fire()
	}
}

// Pending is the number of timers not yet fired.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitForTimers blocks until at least n timers are pending or the real
// timeout passes; it reports whether they are. Tests use it to advance the
// clock only once the executor waits on it.
func (c *Clock) WaitForTimers(n int, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		ok, changed := len(c.timers) >= n, c.changed
		c.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}
