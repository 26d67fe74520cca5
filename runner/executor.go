package runner

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
)

// Mode chooses how a hop's components are scheduled.
type Mode int

const (
	// Eager starts a component the moment all its dependencies have
	// succeeded: a ready queue, no barrier. The default.
	Eager Mode = iota
	// Batch runs the graph level by level with a barrier between levels
	// (openFuyao's semantics): nothing of level N+1 starts before every
	// component of level N has finished.
	Batch
)

func (m Mode) String() string {
	if m == Batch {
		return "batch"
	}
	return "eager"
}

// FailurePolicy says what a component failure does to the rest of the run.
// Whatever the policy, a hop with a failed component fails, and later hops
// do not start.
type FailurePolicy struct {
	maxFailures int // 0: never stop early
	rollback    int // rollbackNone, rollbackHop, rollbackRun (rollback.go)
}

var (
	// ContinueIndependent (the default): a failed component's dependents are
	// Skipped with a reason naming the failed dependency; independent
	// branches run to the end.
	ContinueIndependent = FailurePolicy{}
	// FailFast: at the first failure, running components are cancelled
	// through their ctx and nothing new starts.
	FailFast = FailurePolicy{maxFailures: 1}
)

// MaxFailures behaves as ContinueIndependent until n components have
// failed in the run, then as FailFast. MaxFailures(1) is FailFast; n < 1
// means ContinueIndependent.
func MaxFailures(n int) FailurePolicy { return FailurePolicy{maxFailures: max(n, 0)} }

func (p FailurePolicy) String() string {
	switch p.rollback {
	case rollbackHop:
		return "rollback"
	case rollbackRun:
		return "rollback-run"
	}
	switch p.maxFailures {
	case 0:
		return "continue-independent"
	case 1:
		return "fail-fast"
	}
	return fmt.Sprintf("max-failures(%d)", p.maxFailures)
}

// record is p as a Status records it: String, empty for the default.
func (p FailurePolicy) record() string {
	if p == ContinueIndependent {
		return ""
	}
	return p.String()
}

// CheckFunc runs one pre- or post-check of a hop.
type CheckFunc func(ctx context.Context, c CheckTask) error

// CheckTask is one run of a hop check.
type CheckTask struct {
	Hop      *HopPlan
	HopIndex int
	Name     string
	Stage    string // "pre" or "post"
	Required bool
	Logger   *slog.Logger
}

// Executor runs plans. Build one with New; it is safe to call Execute from
// several goroutines on different plans.
type Executor struct {
	runner       Runner
	mode         Mode
	maxParallel  int
	groupLimits  map[string]int
	timeout      time.Duration
	retries      release.Retries
	jitter       float64
	seed         uint64
	policy       FailurePolicy
	policySet    bool // WithFailurePolicy was given: it overrides a resumed status's
	checks       map[string]CheckFunc
	checkpointer Checkpointer
	observers    []Observer
	drain        time.Duration
	clock        Clock
	logger       *slog.Logger
	until        string   // WithUntil (until.go)
	gates        []string // WithGates (gate.go)
}

// Option configures an Executor.
type Option func(*Executor)

// New returns an executor that runs every component through r (use a
// components.Router to dispatch by type). A nil r is refused by Validate
// (and so by Execute) with an error that says so. Defaults: Eager, unlimited
// parallelism, no timeout, one attempt, ContinueIndependent, the real
// clock, a discarding logger.
func New(r Runner, opts ...Option) *Executor {
	e := &Executor{
		runner:  r,
		checks:  map[string]CheckFunc{},
		retries: release.Retries{Attempts: 1},
		jitter:  0.2,
		seed:    uint64(time.Now().UnixNano()),
		drain:   5 * time.Second,
		clock:   RealClock{},
		logger:  slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(e)
	}
	return e
}

// With returns a new executor configured as e and then by opts, which
// add to e's settings (observers, checks, gates, group limits) or
// replace them (everything else); e is not changed. state.Run adds its
// checkpointer to the caller's executor this way.
func (e *Executor) With(opts ...Option) *Executor {
	c := *e
	// The options write into these: the copy gets its own.
	c.groupLimits = maps.Clone(e.groupLimits)
	c.checks = maps.Clone(e.checks)
	c.observers = slices.Clip(e.observers)
	c.gates = slices.Clip(e.gates)
	for _, o := range opts {
		o(&c)
	}
	return &c
}

// WithMode sets Eager (default) or Batch scheduling.
func WithMode(m Mode) Option { return func(e *Executor) { e.mode = m } }

// WithMaxParallel caps how many components run (or roll back) at once on
// a hop; n < 1 means unlimited.
func WithMaxParallel(n int) Option { return func(e *Executor) { e.maxParallel = max(n, 0) } }

// WithGroupLimit caps how many components of a group (ComponentVersion.Group)
// run (or roll back) at once, e.g. WithGroupLimit("workers", 2); n < 1 means unlimited,
// as for WithMaxParallel. A component waiting out a retry's backoff holds
// no slot of either limit.
func WithGroupLimit(group string, n int) Option {
	return func(e *Executor) {
		if e.groupLimits == nil {
			e.groupLimits = map[string]int{}
		}
		e.groupLimits[group] = max(n, 0)
	}
}

// WithDefaultTimeout bounds each attempt of a component that sets no
// timeout; 0 means none.
func WithDefaultTimeout(d time.Duration) Option { return func(e *Executor) { e.timeout = d } }

// WithDefaultRetries is the retry setting of components that set none
// (for their upgrade's attempts and their rollback's alike).
func WithDefaultRetries(r release.Retries) Option { return func(e *Executor) { e.retries = r } }

// WithJitter sets the fraction (0..1, default 0.2) by which a backoff is
// randomly shortened, and the seed of that randomness.
func WithJitter(fraction float64, seed uint64) Option {
	return func(e *Executor) { e.jitter, e.seed = min(max(fraction, 0), 1), seed }
}

// WithFailurePolicy sets ContinueIndependent (default), FailFast,
// MaxFailures(n), Rollback or RollbackRun. The policy is recorded in the
// status (Status.FailurePolicy): Execute with a previous status and
// without this option uses the recorded policy, so that a rollback
// stopped by a crash goes on as far as the run's policy says; with it,
// the given policy applies to the rest of the run and is recorded.
func WithFailurePolicy(p FailurePolicy) Option {
	return func(e *Executor) { e.policy, e.policySet = p, true }
}

// WithCheck registers the function that runs hop checks of that name. A
// nil fn is refused by Validate (and so by Execute).
func WithCheck(name string, fn CheckFunc) Option { return func(e *Executor) { e.checks[name] = fn } }

// WithCheckpointer records the status on every transition.
func WithCheckpointer(c Checkpointer) Option { return func(e *Executor) { e.checkpointer = c } }

// WithObserver adds an observer of events (see Observer for delivery rules).
func WithObserver(o Observer) Option {
	return func(e *Executor) { e.observers = append(e.observers, o) }
}

// WithObserverDrain sets how long Execute waits, at its end, for observers to
// take the remaining events (default 5s).
func WithObserverDrain(d time.Duration) Option { return func(e *Executor) { e.drain = d } }

// WithClock sets the clock (tests use runnertest.Clock).
// nil means the real clock.
func WithClock(c Clock) Option {
	return func(e *Executor) {
		if c == nil {
			c = RealClock{}
		}
		e.clock = c
	}
}

// WithLogger sets the logger given to runners and checks (with hop,
// component and attempt attributes) and used for the executor's own notes.
// nil means a logger that discards.
func WithLogger(l *slog.Logger) Option {
	return func(e *Executor) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		e.logger = l
	}
}

// Execute runs the plan's hops in order, and each hop's components in
// parallel as the mode, limits and failure policy allow.
//
// prev, when not nil, is the status of an earlier Execute of the same plan
// (from a Checkpointer, after a crash or a failure): components that
// Succeeded or were Skipped by their runner are not run again, a component
// that was Running is run again with its attempts counting on, and hops
// that Succeeded are skipped. Hop checks of a hop that did not succeed run
// again. An Abandoned status is refused (ErrAbandoned), a status of another
// plan too (ErrPlanMismatch). prev is not modified.
//
// Execute returns the final status and nil when every hop succeeded.
// Otherwise its error joins, in this order (errors.Join; each part is
// matched by errors.Is and errors.As whatever happened first):
//
//  1. when a component or a required check failed: an error matching
//     ErrRunFailed that joins every failure (*ComponentError,
//     *CheckError) ordered by hop, then the hop's pre-checks, components
//     and post-checks, each by name;
//  2. when a checkpoint failed: the Checkpointer's error;
//  3. when ctx is done and the run did not succeed: an error matching
//     ctx.Err() and context.Cause(ctx) (a Keeper's *state.LostError);
//  4. when a rollback did not finish (it failed, a component is
//     irreversible, or it was interrupted): a *RollbackError, matching
//     ErrRollbackFailed (see Rollback).
//
// When ctx is cancelled, nothing new starts, running runners see ctx
// done, Execute returns promptly, and what did not finish is Cancelled in
// the status. Plan problems (see Validate) return a nil status.
func (e *Executor) Execute(ctx context.Context, p *Plan, prev *record.Status) (*record.Status, error) {
	pr, err := e.prepare(p, prev)
	if err != nil {
		return refused(prev, err), err
	}
	if pr.done {
		return pr.s, nil
	}
	return newRun(pr).execute(ctx)
}

func errorf(format string, args ...any) error {
	return fmt.Errorf("runner: "+format, args...)
}

// rollsBack reports whether a failure of hop h rolls it back.
func (e *Executor) rollsBack(h *HopPlan) bool {
	return e.policy.rollback != rollbackNone || h.Rule.OnFailure == release.OnFailureRollback
}

// retriesFor merges the component's Retries over the executor's default.
// Attempts below 1 mean 1.
func (e *Executor) retriesFor(cv *release.ComponentVersion) retryPolicy {
	r := e.retries
	if cv != nil && cv.Retries != nil {
		if cv.Retries.Attempts > 0 {
			r.Attempts = cv.Retries.Attempts
		}
		if cv.Retries.Backoff.Duration > 0 {
			r.Backoff = cv.Retries.Backoff
		}
		if cv.Retries.MaxBackoff.Duration > 0 {
			r.MaxBackoff = cv.Retries.MaxBackoff
		}
	}
	return retryPolicy{attempts: max(r.Attempts, 1), backoff: r.Backoff.Duration, max: r.MaxBackoff.Duration}
}
