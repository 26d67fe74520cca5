package components

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// ReasonAtTarget is the reason a component is Skipped when its handler's
// NeedsUpgrade reports that the live system already runs the target.
const ReasonAtTarget = "already at target"

// NeedsUpgrader is an optional phase of an inline handler. NeedsUpgrade
// reports whether the live system still needs the upgrade; false records
// the component as Skipped with reason ReasonAtTarget, and no other phase
// runs.
type NeedsUpgrader interface {
	NeedsUpgrade(ctx context.Context, t runner.Task) (bool, error)
}

// PreUpgrader is an optional phase of an inline handler, run before the
// upgrade (drain a node, take a snapshot).
type PreUpgrader interface {
	PreUpgrade(ctx context.Context, t runner.Task) error
}

// Upgrader is an optional phase of an inline handler. When a handler
// implements it, Upgrade is the upgrade step and the handler's Run is not
// called.
type Upgrader interface {
	Upgrade(ctx context.Context, t runner.Task) error
}

// PostUpgrader is an optional phase of an inline handler, run after the
// upgrade (uncordon, verify).
type PostUpgrader interface {
	PostUpgrade(ctx context.Context, t runner.Task) error
}

// Phases adapts functions to a handler with phases (openFuyao's
// PhaseRunner). A nil NeedsUpgrade always needs the upgrade; the other nil
// phases do nothing. Phases is a runner.Runner on its own: Run runs the
// phases as Inline does.
type Phases struct {
	NeedsUpgrade func(ctx context.Context, t runner.Task) (bool, error)
	PreUpgrade   func(ctx context.Context, t runner.Task) error
	Upgrade      func(ctx context.Context, t runner.Task) error
	PostUpgrade  func(ctx context.Context, t runner.Task) error
	// Rollback, when set, undoes the upgrade (rollback.go).
	Rollback func(ctx context.Context, t runner.Task) error
}

// Run runs the phases in order: NeedsUpgrade, PreUpgrade, Upgrade,
// PostUpgrade.
func (p Phases) Run(ctx context.Context, t runner.Task) error {
	return runPhases(ctx, t, phasesOf(p))
}

// Inline is a runner.Runner for components of type inline: a registry of
// handlers by name (ComponentVersion.Handler), each a runner.Runner that may
// also implement the phase interfaces NeedsUpgrader, PreUpgrader, Upgrader
// and PostUpgrader (found by type assertion).
//
// Run calls, in order and each only when the handler implements it:
// NeedsUpgrade (false: the component is Skipped with ReasonAtTarget),
// PreUpgrade, Upgrade (or the handler's Run when it does not implement
// Upgrader), PostUpgrade. The first error stops the sequence; ctx is checked
// between phases. Errors are *Error values whose Op names the phase.
//
// Inline implements runner.Validator: an unknown handler name is a plan-time
// error, and a handler that implements runner.Validator is asked too.
//
// The zero Inline has no handlers. Register and Run may be called
// concurrently; the handlers are called from many goroutines at once.
type Inline struct {
	mu       sync.RWMutex
	handlers map[string]runner.Runner
}

// NewInline returns an Inline with no handlers.
func NewInline() *Inline { return &Inline{} }

// Register adds a handler under name and returns in, so that calls chain.
// It panics when name is empty, h is nil or name is already registered.
func (in *Inline) Register(name string, h runner.Runner) *Inline {
	if name == "" {
		panic("components: Inline.Register with an empty handler name")
	}
	if h == nil {
		panic(fmt.Sprintf("components: Inline.Register(%q) with a nil handler", name))
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, dup := in.handlers[name]; dup {
		panic(fmt.Sprintf("components: inline handler %q registered twice", name))
	}
	if in.handlers == nil {
		in.handlers = map[string]runner.Runner{}
	}
	in.handlers[name] = h
	return in
}

// Handlers returns the registered handler names, sorted.
func (in *Inline) Handlers() []string {
	in.mu.RLock()
	defer in.mu.RUnlock()
	names := make([]string, 0, len(in.handlers))
	for n := range in.handlers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (in *Inline) lookup(name string) (runner.Runner, error) {
	in.mu.RLock()
	h, ok := in.handlers[name]
	in.mu.RUnlock()
	if !ok || name == "" {
		return nil, &NotRegisteredError{Kind: "handler", Name: name, Registered: in.Handlers()}
	}
	return h, nil
}

// Run runs the phases of the handler t.To.Handler names. An unknown handler
// is a runner.Permanent error.
func (in *Inline) Run(ctx context.Context, t runner.Task) error {
	if t.To == nil {
		return noTarget(t)
	}
	h, err := in.lookup(t.To.Handler)
	if err != nil {
		return runner.Permanent(wrap(t.To, "run", err))
	}
	return runPhases(ctx, t, phasesOf(h))
}

// Validate reports whether cv names a registered handler that accepts it.
func (in *Inline) Validate(cv *release.ComponentVersion) error {
	if cv == nil {
		return nilComponent()
	}
	h, err := in.lookup(cv.Handler)
	if err != nil {
		return wrap(cv, "validate", err)
	}
	if v, ok := h.(runner.Validator); ok {
		if err := v.Validate(cv); err != nil {
			return wrap(cv, "validate", err)
		}
	}
	return nil
}

// phases is a handler's phases as functions; nil ones are left out.
type phases struct {
	needs func(context.Context, runner.Task) (bool, error)
	pre   func(context.Context, runner.Task) error
	up    func(context.Context, runner.Task) error
	post  func(context.Context, runner.Task) error
}

func phasesOf(h runner.Runner) phases {
	switch p := h.(type) {
	case Phases:
		return phases{p.NeedsUpgrade, p.PreUpgrade, p.Upgrade, p.PostUpgrade}
	case *Phases:
		return phases{p.NeedsUpgrade, p.PreUpgrade, p.Upgrade, p.PostUpgrade}
	}
	ps := phases{up: h.Run}
	if n, ok := h.(NeedsUpgrader); ok {
		ps.needs = n.NeedsUpgrade
	}
	if p, ok := h.(PreUpgrader); ok {
		ps.pre = p.PreUpgrade
	}
	if u, ok := h.(Upgrader); ok {
		ps.up = u.Upgrade
	}
	if p, ok := h.(PostUpgrader); ok {
		ps.post = p.PostUpgrade
	}
	return ps
}

func runPhases(ctx context.Context, t runner.Task, ps phases) error {
	if t.To == nil {
		return noTarget(t)
	}
	fail := func(op string, err error) error {
		if isSkip(err) {
			return err
		}
		return wrap(t.To, op, err)
	}
	if err := ctx.Err(); err != nil {
		return fail("run", err)
	}
	// A retry or a resumed run continues at the step its record names
	// (the phase that failed or was interrupted): the phases before it
	// are done, and NeedsUpgrade would see the system at its target.
	from := max(slices.Index(inlineSteps, t.Step), 0)
	if ps.needs != nil && from == 0 {
		if err := t.Enter(ctx, StepNeedsUpgrade); err != nil {
			return fail(StepNeedsUpgrade, err)
		}
		need, err := ps.needs(ctx, t)
		if err != nil {
			return fail(StepNeedsUpgrade, err)
		}
		if !need {
			logger(t).Info("component already at target", "version", t.To.Version.Original())
			return runner.Skip(ReasonAtTarget)
		}
	}
	steps := []func(context.Context, runner.Task) error{ps.pre, ps.up, ps.post}
	for k, fn := range steps {
		op := inlineSteps[k+1]
		if fn == nil || k+1 < from {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fail(op, err)
		}
		if err := t.Enter(ctx, op); err != nil {
			return fail(op, err)
		}
		if err := fn(ctx, t); err != nil {
			return fail(op, err)
		}
	}
	return nil
}
