package state

import (
	"context"
	"log/slog"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// Option configures a Memory or File store, a Keeper, a Checkpointer, a
// Run or an Approve. Each takes the options that concern it and ignores
// the others.
type Option func(*options)

type options struct {
	clock  runner.Clock
	logger *slog.Logger
	// Run's and Approve's (run.go).
	holder  string
	ttl     time.Duration
	wrap    func(runner.Checkpointer) runner.Checkpointer
	session func(context.Context, *Session) (*record.Status, error)
}

func newOptions(opts []Option) options {
	o := options{clock: runner.RealClock{}, logger: slog.New(slog.DiscardHandler)}
	for _, f := range opts {
		f(&o)
	}
	if o.clock == nil {
		o.clock = runner.RealClock{}
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// WithClock sets the clock leases are timed on (Memory, File, Keep; a
// Run's keeper and its checkpointer's retries); the default (and nil) is
// the wall clock. Tests pass a runnertest.Clock to expire leases without
// sleeping. Processes that share a File directory must all use the wall
// clock.
func WithClock(c runner.Clock) Option { return func(o *options) { o.clock = c } }

// WithLogger sets the logger of a Keeper (failed refreshes, loss) and of
// a Run (its keeper's, and a release that failed); the default (and nil)
// discards.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }
