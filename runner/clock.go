package runner

import (
	"context"
	"time"
)

// Clock is the executor's source of time: timestamps in the status, backoff
// waits and per-attempt timeouts. Tests inject a fake (runnertest.Clock) so
// that retries and timeouts run without sleeping.
type Clock interface {
	Now() time.Time
	// After is time.After on this clock.
	After(d time.Duration) <-chan time.Time
	// WithTimeout is context.WithTimeout on this clock: when d has passed,
	// the context is done and its Err is context.DeadlineExceeded.
	WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc)
}

// RealClock is the wall clock; it is the default.
type RealClock struct{}

// Now is time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// After is time.After.
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// WithTimeout is context.WithTimeout.
func (RealClock) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
