package components

import (
	"context"
	"errors"
	"fmt"

	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// Rollback: the runners of this package implement runner.Rollbacker and
// runner.RollbackValidator, so that the Rollback failure policy can undo
// a component's upgrade, from t.To back to t.From:
//
//   - Router hands the rollback to the runner of the component's type;
//   - Inline calls the handler's Rollback (Phases.Rollback, or a handler
//     that implements runner.Rollbacker): the inline Rollback phase;
//   - Exec runs the component's declared rollback command
//     (ComponentVersion.Rollback), rendered and run as its command is;
//   - Manifest applies the objects of the previous version (t.From) and
//     deletes what the target rendered and the previous version does not
//     (everything, for a component the hop added).
//
// Each refuses, at plan time, a component it cannot roll back: an inline
// handler with no Rollback, an exec component with no rollback command.

// Rollback rolls t back through the runner of t.To's type.
func (r *Router) Rollback(ctx context.Context, t runner.Task) error {
	cv := t.To
	if cv == nil {
		return noTarget(t)
	}
	rn, err := r.lookup(cv.Type)
	if err != nil {
		return runner.Permanent(wrap(cv, "rollback", err))
	}
	rb, ok := rn.(runner.Rollbacker)
	if !ok {
		return runner.Permanent(wrap(cv, "rollback", fmt.Errorf("the %s runner (%T) cannot roll back", cv.Type, rn)))
	}
	if err := rb.Rollback(ctx, t); err != nil {
		return wrap(cv, "rollback", err)
	}
	return nil
}

// ValidateRollback reports whether the runner of cv's type can roll cv
// back.
func (r *Router) ValidateRollback(cv *release.ComponentVersion) error {
	if cv == nil {
		return nilComponent()
	}
	rn, err := r.lookup(cv.Type)
	if err != nil {
		return wrap(cv, "validate-rollback", err)
	}
	rb, ok := rn.(runner.Rollbacker)
	if !ok {
		return wrap(cv, "validate-rollback", fmt.Errorf("the %s runner (%T) cannot roll back", cv.Type, rn))
	}
	if v, ok := rb.(runner.RollbackValidator); ok {
		if err := v.ValidateRollback(cv); err != nil {
			return wrap(cv, "validate-rollback", err)
		}
	}
	return nil
}

// rollbackOf returns the handler's Rollback phase, or nil.
func rollbackOf(h runner.Runner) func(context.Context, runner.Task) error {
	switch p := h.(type) {
	case Phases:
		return p.Rollback
	case *Phases:
		return p.Rollback
	}
	if rb, ok := h.(runner.Rollbacker); ok {
		return rb.Rollback
	}
	return nil
}

// Rollback runs the Rollback phase of the handler t.To.Handler names.
func (in *Inline) Rollback(ctx context.Context, t runner.Task) error {
	if t.To == nil {
		return noTarget(t)
	}
	h, err := in.lookup(t.To.Handler)
	if err != nil {
		return runner.Permanent(wrap(t.To, "rollback", err))
	}
	fn := rollbackOf(h)
	if fn == nil {
		return runner.Permanent(wrap(t.To, "rollback", fmt.Errorf("inline handler %s (%T) has no Rollback phase", t.To.Handler, h)))
	}
	if err := fn(ctx, t); err != nil {
		return wrap(t.To, "rollback", err)
	}
	return nil
}

// ValidateRollback reports whether cv's handler has a Rollback phase.
func (in *Inline) ValidateRollback(cv *release.ComponentVersion) error {
	h, err := in.lookup(cv.Handler)
	if err != nil {
		return err
	}
	if rollbackOf(h) == nil {
		return fmt.Errorf("inline handler %s (%T) has no Rollback phase: implement runner.Rollbacker or set Phases.Rollback, mark the component irreversible (spec.irreversible: why), or choose another failure policy (the rule's onFailure)", cv.Handler, h)
	}
	return nil
}

// Rollback runs the component's rollback command.
func (x *Exec) Rollback(ctx context.Context, t runner.Task) error {
	cv := t.To
	if cv == nil {
		return noTarget(t)
	}
	if cv.Rollback == nil {
		return runner.Permanent(&Error{Component: cv.Name, Version: cv.Version.Original(), Op: "rollback", Err: errNoRollbackCommand})
	}
	undo := *cv
	undo.Command = cv.Rollback
	t.To = &undo
	return x.Run(ctx, t)
}

var errNoRollbackCommand = errors.New("no rollback command: declare spec.rollback.args")

// ValidateRollback reports whether cv declares a rollback command that
// renders.
func (x *Exec) ValidateRollback(cv *release.ComponentVersion) error {
	if cv.Rollback == nil {
		return errNoRollbackCommand
	}
	undo := *cv
	undo.Command = cv.Rollback
	_, err := x.render(&undo, newData(&undo, "", "", x.values))
	return err
}

// Rollback undoes a hop for a manifest component by running the hop
// backwards: the previous version's objects are applied (owned and waited
// for as an upgrade would), and the component's inventory then prunes what
// the target added, so what is deleted comes from the inventory, never from
// re-rendering the target. A component the hop installed (no From) is
// rolled back to nothing: everything its inventory holds is pruned.
func (m *Manifest) Rollback(ctx context.Context, t runner.Task) error {
	if t.To == nil {
		return nil
	}
	back := t
	back.From, back.To = t.To, t.From
	if back.To == nil {
		// Back to nothing: no template is rendered (the target's are
		// not what is undone, and there is no previous version), and
		// the prune deletes all that the inventory holds.
		none := *t.To
		none.Manifests, none.HealthChecks, none.Phases = nil, nil, nil
		back.To = &none
		return m.apply(ctx, back, nil, nonNil(nil))
	}
	return m.Run(ctx, back)
}
