package components

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// The steps of an inline handler, as Task.Enter records them
// (record.ComponentStatus.Step), in the order they run.
const (
	StepNeedsUpgrade = "needs-upgrade"
	StepPreUpgrade   = "pre-upgrade"
	StepUpgrade      = "upgrade"
	StepPostUpgrade  = "post-upgrade"
)

// inlineSteps are runner.InlineSteps (which --until checks a phase
// against); TestInlineStepsMatchRunner keeps them equal.
var inlineSteps = []string{StepNeedsUpgrade, StepPreUpgrade, StepUpgrade, StepPostUpgrade}

// Stepper is an optional ability of an inline handler: it runs the steps
// a component's declared lifecycle phases name (LifecyclePhase.Handler).
type Stepper interface {
	Step(ctx context.Context, t runner.Task, name string) error
}

// Steps adapts functions to a Stepper: a handler whose declared phases
// name its functions. Its Run runs nothing (a component with declared
// phases never calls it) and fails.
type Steps map[string]func(ctx context.Context, t runner.Task) error

// Step runs the function of that name.
func (s Steps) Step(ctx context.Context, t runner.Task, name string) error {
	fn, ok := s[name]
	if !ok {
		return runner.Permanent(&NotRegisteredError{Kind: "step", Name: name, Registered: slices.Sorted(maps.Keys(s))})
	}
	return fn(ctx, t)
}

// Run fails: Steps is run through a component's declared phases only.
func (s Steps) Run(context.Context, runner.Task) error {
	return runner.Permanent(errors.New("components: a Steps handler runs declared phases only; declare spec.phases"))
}

// Declared lifecycle phases (ComponentVersion.Phases) run through the
// Router, in order, each entered with Task.Enter (so a retry or a
// resumed run continues at the phase that failed or was interrupted,
// and a phase's gate holds it): a Handler phase calls the Step of the
// component's inline handler (a Stepper), a Command phase runs through
// the exec runner as an exec component whose command it is, and a
// Manifests phase through the RunPhase of the runner registered for type
// manifest (a PhaseRunner: the Manifest runner applies the phase's
// objects, and prunes after the last manifest phase).

// runDeclared runs t's declared phases from the one its record names.
func (r *Router) runDeclared(ctx context.Context, t runner.Task) error {
	cv := t.To
	from := 0
	for i, p := range cv.Phases {
		if p.Name == t.Step {
			from = i
		}
	}
	for _, p := range cv.Phases[from:] {
		if err := t.Enter(ctx, p.Name); err != nil {
			return wrap(cv, p.Name, err)
		}
		if err := r.runPhase(ctx, t, p); err != nil {
			if isSkip(err) {
				return err
			}
			return wrap(cv, p.Name, err)
		}
	}
	return nil
}

func (r *Router) runPhase(ctx context.Context, t runner.Task, p release.LifecyclePhase) error {
	switch {
	case p.Handler != "":
		st, err := r.stepper(t.To)
		if err != nil {
			return runner.Permanent(err)
		}
		return st.Step(ctx, t, p.Handler)
	case p.Command != nil:
		rn, err := r.lookup(release.TypeExec)
		if err != nil {
			return runner.Permanent(err)
		}
		cv := *t.To
		cv.Type, cv.Command, cv.Manifests = release.TypeExec, p.Command, nil
		t.To = &cv
		return rn.Run(ctx, t)
	}
	pr, err := r.phaseRunner()
	if err != nil {
		return runner.Permanent(err)
	}
	return pr.RunPhase(ctx, t, p.Name)
}

// PhaseRunner is an optional ability of the runner registered for type
// manifest: it runs one declared manifest phase of t.To (the Manifest
// runner's RunPhase).
type PhaseRunner interface {
	RunPhase(ctx context.Context, t runner.Task, phase string) error
}

// phaseRunner is the runner of type manifest as a PhaseRunner.
func (r *Router) phaseRunner() (PhaseRunner, error) {
	rn, err := r.lookup(release.TypeManifest)
	if err != nil {
		return nil, err
	}
	pr, ok := rn.(PhaseRunner)
	if !ok {
		return nil, fmt.Errorf("the %s runner is a %T, not a components.PhaseRunner: it cannot run manifest phases", release.TypeManifest, rn)
	}
	return pr, nil
}

// stepper is the inline handler of cv as a Stepper.
func (r *Router) stepper(cv *release.ComponentVersion) (Stepper, error) {
	rn, err := r.lookup(release.TypeInline)
	if err != nil {
		return nil, err
	}
	in, ok := rn.(*Inline)
	if !ok {
		return nil, fmt.Errorf("the %s runner is a %T, not a *components.Inline: it cannot run declared handler phases", release.TypeInline, rn)
	}
	h, err := in.lookup(cv.Handler)
	if err != nil {
		return nil, err
	}
	st, ok := h.(Stepper)
	if !ok {
		return nil, fmt.Errorf("inline handler %s (%T) has declared handler phases but no Step method (implement components.Stepper, or use components.Steps)", cv.Handler, h)
	}
	return st, nil
}

// validateDeclared reports what of cv's declared phases r cannot run.
func (r *Router) validateDeclared(cv *release.ComponentVersion) error {
	var (
		errs     []error
		rendered bool
	)
	for _, p := range cv.Phases {
		switch {
		case p.Handler != "":
			st, err := r.stepper(cv)
			if err != nil {
				errs = append(errs, fmt.Errorf("phase %s: %w", p.Name, err))
				continue
			}
			if s, ok := st.(Steps); ok {
				if _, ok := s[p.Handler]; !ok {
					errs = append(errs, fmt.Errorf("phase %s: handler %s has no step %s", p.Name, cv.Handler, p.Handler))
				}
			}
		case p.Command != nil:
			if _, err := r.lookup(release.TypeExec); err != nil {
				errs = append(errs, fmt.Errorf("phase %s: %w", p.Name, err))
			}
		default:
			pr, err := r.phaseRunner()
			if err != nil {
				errs = append(errs, fmt.Errorf("phase %s: %w", p.Name, err))
				continue
			}
			// The runner renders every manifest phase at once, naming
			// the phase of each problem: ask it once.
			if v, ok := pr.(runner.Validator); ok && !rendered {
				rendered = true
				if err := v.Validate(cv); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}
