package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

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

// recordedPolicy parses a Status's FailurePolicy (see record).
func recordedPolicy(s string) (FailurePolicy, error) {
	switch s {
	case "", ContinueIndependent.String():
		return ContinueIndependent, nil
	case FailFast.String():
		return FailFast, nil
	case Rollback.String():
		return Rollback, nil
	case RollbackRun.String():
		return RollbackRun, nil
	}
	var n int
	if _, err := fmt.Sscanf(s, "max-failures(%d)", &n); err == nil && n > 1 && MaxFailures(n).String() == s {
		return MaxFailures(n), nil
	}
	return FailurePolicy{}, fmt.Errorf("%w: the status records failure policy %q, which this hopdag does not know (it knows continue-independent, fail-fast, max-failures(N), rollback and rollback-run): resume it with the hopdag that wrote it",
		ErrPlanMismatch, s)
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

// NewStatus returns the Pending status of a plan, as Execute starts it.
func NewStatus(p *Plan) *Status {
	// Hops is never nil: the status of a plan with no hops serialises
	// "hops": [].
	s := &Status{Phase: Pending, Track: p.Route.Track, From: p.Route.From.Original(), To: p.Route.To.Original(), Catalog: p.Catalog, Hops: []HopStatus{}}
	if p.Route.FromState != nil { // a route across tracks
		s.Track, s.From, s.To = "", p.Route.FromState.String(), p.Route.ToState.String()
	}
	for _, h := range p.Hops {
		hs := HopStatus{Track: h.Track, From: h.From.Original(), To: h.To.Original(), Phase: Pending, Components: make([]ComponentStatus, h.Graph.Len())}
		for i := range hs.Components {
			n := h.Graph.Node(i)
			cs := &hs.Components[i]
			cs.Name, cs.Phase = n.Name, Pending
			if n.From != nil {
				cs.FromVersion = n.From.Version.Original()
			}
			if n.To != nil {
				cs.ToVersion = n.To.Version.Original()
			}
		}
		s.Hops = append(s.Hops, hs)
	}
	s.Progress.Total = p.Total()
	return s
}

// checkResume returns why prev cannot be resumed with p, or nil.
func checkResume(p *Plan, prev *Status) error {
	if prev.Phase == RolledBack {
		return fmt.Errorf("%w: %s -> %s was rolled back (%s); start a new run with an empty status", ErrRolledBack, prev.From, prev.To, prev.Message)
	}
	if prev.Phase == Abandoned {
		return fmt.Errorf("%w: %s -> %s was abandoned (%s); start a new run with an empty status", ErrAbandoned, prev.From, prev.To, prev.Message)
	}
	if err := checkSource(prev.Catalog, p.Catalog); err != nil {
		return err
	}
	fresh := NewStatus(p)
	var diffs []string
	if prev.Track != fresh.Track || prev.From != fresh.From || prev.To != fresh.To {
		diffs = append(diffs, fmt.Sprintf("status is for %s -> %s, plan is %s -> %s", prev.From, prev.To, fresh.From, fresh.To))
	} else if len(prev.Hops) != len(fresh.Hops) {
		diffs = append(diffs, fmt.Sprintf("status has %d hops, plan has %d", len(prev.Hops), len(fresh.Hops)))
	} else {
		for i := range fresh.Hops {
			ph, fh := prev.Hops[i], fresh.Hops[i]
			if ph.Track != fh.Track || ph.From != fh.From || ph.To != fh.To {
				diffs = append(diffs, fmt.Sprintf("hop %d is %s -> %s in the status, %s -> %s in the plan", i+1, ph.From, ph.To, fh.From, fh.To))
				continue
			}
			names := func(cs []ComponentStatus) []string {
				out := make([]string, len(cs))
				for j, c := range cs {
					out[j] = c.Name + "@" + c.ToVersion
				}
				return out
			}
			if a, b := names(ph.Components), names(fh.Components); !slices.Equal(a, b) {
				diffs = append(diffs, fmt.Sprintf("hop %d components differ: status has %s, plan has %s", i+1, strings.Join(a, " "), strings.Join(b, " ")))
				continue
			}
			// The same components to the same versions, from others: the
			// plan's Task.From would not be what the status says it
			// upgrades from (and a rollback would go back elsewhere).
			start := fh.From
			if fh.Track != "" {
				start = fh.Track + " " + fh.From
			}
			for j, pc := range ph.Components {
				if fc := fh.Components[j]; pc.FromVersion != fc.FromVersion {
					diffs = append(diffs, fmt.Sprintf("hop %d: %s is upgraded from %s in the status, from %s in the plan (the catalog changed what %s ships)",
						i+1, fc.Name, orNone(pc.FromVersion), orNone(fc.FromVersion), start))
				}
			}
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w: %s; resume with the plan this status was written for, or start over with no previous status (for a state store: a new one)", ErrPlanMismatch, strings.Join(diffs, "; "))
	}
	return nil
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
func (e *Executor) Execute(ctx context.Context, p *Plan, prev *Status) (*Status, error) {
	if prev != nil && !e.policySet {
		// A resumed run keeps the policy it started with: a rollback
		// stopped halfway goes on as far as that policy says.
		pol, err := recordedPolicy(prev.FailurePolicy)
		if err != nil {
			return prev.DeepCopy(), err
		}
		resumed := *e
		resumed.policy = pol
		e = &resumed
	}
	if err := e.Validate(p); err != nil {
		return nil, err
	}
	var s *Status
	if prev != nil {
		if err := checkResume(p, prev); err != nil {
			return prev.DeepCopy(), err
		}
		s = prev.DeepCopy()
		s.Catalog = p.Catalog // the same digest, maybe another ref (see CatalogSource)
		if s.Phase == Succeeded {
			return s, nil
		}
	} else {
		s = NewStatus(p)
	}
	until, err := e.resolveUntil(p)
	if err != nil {
		return nil, err
	}
	if s.Gates, err = e.resolveGates(p, s); err != nil {
		return nil, err
	}
	s.FailurePolicy = e.policy.record()
	r := &run{e: e, plan: p, s: s, events: newDispatcher(e.observers, e.logger), until: until}
	return r.execute(ctx)
}

// run is the state of one Execute call. Its fields are touched only by the
// goroutine that called Execute (the coordinator); runner goroutines talk
// to it through channels.
type run struct {
	e      *Executor
	plan   *Plan
	s      *Status
	events *dispatcher
	rnd    *rand.Rand
	// failures counts component failures in this call, for the policy.
	failures int
	// errs collects the failures to return.
	errs []error
	// checkpointErr is the first Checkpointer error; it stops the run.
	checkpointErr error
	// changes are the component records changed since the last
	// checkpoint.
	changes changes
	// started is when this Execute call began (Status.StartedAt is the
	// first run's): PlanFinished's Duration counts from it.
	started time.Time
	// until is WithUntil's step; untilHit says the run stopped there.
	until    *untilStep
	untilHit bool
	// rolled is the outcome of a rollback (RolledBack, RollbackFailed;
	// RollingBack: stopped before its end), "" when none ran;
	// rollbackErrs say what a failed or stopped one left.
	rolled       Phase
	rollbackErrs []string
}

func (r *run) execute(ctx context.Context) (*Status, error) {
	now := r.e.clock.Now()
	r.started = now
	r.rnd = rand.New(rand.NewPCG(r.e.seed, uint64(r.s.Runs)))
	r.s.Runs++
	r.s.Phase, r.s.Code, r.s.Message, r.s.FinishedAt = Running, "", "", time.Time{}
	if r.s.StartedAt.IsZero() {
		r.s.StartedAt = now
	}
	r.s.Progress = progressOf(r.s)
	r.s.Waiting = nil // what still waits says so again
	r.recordOrder()
	if r.s.Runs > 1 && !resumesRollback(r.s) {
		// A resumed run that succeeds must not keep the failure of the
		// run it resumed; it is set again if something fails. A resumed
		// rollback keeps it: it is why the run is rolled back, and its
		// final message and error say so (rollback.go).
		r.s.LastFailure = nil
	}
	if r.e.checkpointer != nil {
		r.changes.init(r.s)
		r.changes.markAll()
	}
	r.checkpoint(ctx)
	r.emit(Event{Type: PlanStarted, Hop: -1})

	for i, h := range r.plan.Hops {
		if p := r.s.Hops[i].Phase; p == RollingBack || p == RolledBack || p == RollbackFailed {
			r.rollback(ctx, i) // a rollback to resume (rollback.go)
			break
		}
		if r.s.Hops[i].Phase != Succeeded {
			if r.checkpointErr != nil || ctx.Err() != nil {
				break
			}
			r.s.CurrentHop = i
			if !r.runHop(ctx, i, h) {
				break
			}
		}
		if r.untilAfter(i) {
			break
		}
	}
	return r.finish(ctx)
}

// recordOrder records each component's place in its hop's batch order
// (ComponentStatus.Order), also in a status written before it was.
func (r *run) recordOrder() {
	for i, h := range r.plan.Hops {
		for k, name := range slices.Concat(h.Batches()...) {
			if j, ok := h.Graph.Index(name); ok {
				r.s.Hops[i].Components[j].Order = k + 1
			}
		}
	}
}

// finish sets the final phase, checkpoints it (the final checkpoint,
// attempted even after a checkpoint failed) and emits PlanFinished.
func (r *run) finish(ctx context.Context) (*Status, error) {
	s := r.s
	s.FinishedAt = r.e.clock.Now()
	allDone := true
	for _, h := range s.Hops {
		allDone = allDone && h.Phase == Succeeded
	}
	switch {
	case r.checkpointErr != nil:
		s.Phase, s.Code, s.Message = Failed, CodeCheckpointFailed, r.checkpointErr.Error()
	case allDone:
		s.Phase, s.Code, s.Message = Succeeded, "", ""
	case r.rolled != "":
		s.Phase, s.Code, s.Message, _ = r.rolledBackPhase(ctx)
	case len(r.errs) > 0:
		s.Phase = Failed
		if s.LastFailure != nil {
			s.Code, s.Message = s.LastFailure.Code, s.LastFailure.Error
		}
	case ctx.Err() != nil:
		s.Phase, s.Code, s.Message = Cancelled, CodeCancelled, context.Cause(ctx).Error()
	case r.held():
		s.Phase, s.Code, s.Message, _ = r.heldRun()
	default:
		s.Phase = Failed
	}
	if !allDone && ctx.Err() != nil {
		r.cancelUnstarted("not started: the run was cancelled")
	}
	s.Progress = progressOf(s)
	hadFailed := r.checkpointErr != nil
	if !r.finalCheckpoint(ctx) && s.Phase == Succeeded {
		// The success could not be recorded: the store may still say
		// Running, and the status must not claim more than it does.
		s.Phase, s.Code, s.Message = Failed, CodeCheckpointFailed, r.checkpointErr.Error()
	}
	err := r.err(ctx, allDone, hadFailed)
	r.emit(Event{Type: PlanFinished, Hop: -1, Phase: s.Phase, Code: s.Code, Err: err, Duration: s.FinishedAt.Sub(r.started)})
	r.events.close(r.e.drain) // it logs what an observer did not take
	return s, err
}

// err is Execute's error: see Execute for its parts and their order.
// hadFailed says a checkpoint failed before the final one.
func (r *run) err(ctx context.Context, allDone, hadFailed bool) error {
	var parts []error
	if len(r.errs) > 0 {
		slices.SortStableFunc(r.errs, compareFailures)
		parts = append(parts, &runFailedError{slices.Clone(r.errs)})
	}
	if r.checkpointErr != nil {
		what := "checkpoint failed, run stopped"
		if !hadFailed {
			what = "final checkpoint failed"
		}
		parts = append(parts, fmt.Errorf("runner: %s: %w", what, r.checkpointErr))
	}
	if !allDone && ctx.Err() != nil {
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
			parts = append(parts, fmt.Errorf("runner: run cancelled (%w): %w", ctx.Err(), cause))
		} else {
			parts = append(parts, fmt.Errorf("runner: run cancelled: %w", ctx.Err()))
		}
	}
	if r.rolled == RollbackFailed || r.rolled == RollingBack {
		// A rollback that did not finish: it failed, or was interrupted.
		// (A rollback always follows a failure, in r.errs: part 1.)
		parts = append(parts, &RollbackError{Hops: r.rollbackErrs})
	}
	if held := r.heldErr(); len(parts) == 0 && !allDone && held != nil {
		parts = append(parts, held)
	}
	if len(parts) == 0 && !allDone {
		parts = append(parts, fmt.Errorf("%w: hop %d did not succeed", ErrRunFailed, r.s.CurrentHop+1))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return errors.Join(parts...)
}

// compareFailures orders the failures of a run: by hop, then a hop's
// pre-checks, components and post-checks, each by name.
func compareFailures(a, b error) int {
	key := func(err error) (int, int, string) {
		switch e := err.(type) {
		case *ComponentError:
			return e.Hop, 1, e.Component
		case *CheckError:
			if e.Stage == "pre" {
				return e.Hop, 0, e.Check
			}
			return e.Hop, 2, e.Check
		}
		return -1, 0, err.Error()
	}
	ah, as, an := key(a)
	bh, bs, bn := key(b)
	return cmp.Or(cmp.Compare(ah, bh), cmp.Compare(as, bs), cmp.Compare(an, bn))
}

func (r *run) emit(ev Event) {
	if len(r.e.observers) == 0 {
		return
	}
	ev.Time = r.e.clock.Now()
	ev.Progress = r.s.Progress
	if ev.Hop >= 0 && ev.HopName == "" {
		ev.HopName = r.plan.Hops[ev.Hop].Name()
	}
	r.events.emit(ev)
}

// cancelUnstarted marks the hops a cancelled run never reached, and their
// components, Cancelled: they did not finish, and the status says so.
// (After a failure alone they stay Pending: the run ended before them by
// design.)
func (r *run) cancelUnstarted(reason string) {
	s := r.s
	for i := range s.Hops {
		h := &s.Hops[i]
		if h.Phase != Pending {
			continue
		}
		h.Phase, h.Code, h.Message = Cancelled, CodeCancelled, reason
		for j := range h.Components {
			if c := &h.Components[j]; c.Phase == Pending {
				c.Phase, c.Code, c.Reason = Cancelled, CodeCancelled, reason
				r.mark(i, j)
			}
		}
	}
}

func progressOf(s *Status) Progress {
	var p Progress
	for _, h := range s.Hops {
		for _, c := range h.Components {
			p.Total++
			if c.Phase == Succeeded || (c.Phase == Skipped && c.Code == "") {
				p.Done++
			}
		}
	}
	return p
}

func errorf(format string, args ...any) error {
	return fmt.Errorf("runner: "+format, args...)
}
