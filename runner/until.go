package runner

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/release"
)

// Run to a step (StarlingX's targetDeployStep): WithUntil names a step
// (HOP[/COMPONENT[/PHASE]], see StepName), and Execute runs the plan up
// to and including it, then stops cleanly: the run's phase is Paused
// (code UNTIL_REACHED) and Execute's error matches ErrUntilReached. The
// next Execute of that status continues from there.
//
//   - HOP: the hops up to and including HOP run; later hops stay
//     Pending.
//   - HOP/COMPONENT: on HOP, only COMPONENT and what it depends on run;
//     the hop's other components stay Pending and the hop is Paused.
//   - HOP/COMPONENT/PHASE: as HOP/COMPONENT, and COMPONENT stops before
//     the step after PHASE (it is Paused, its record names that step).

// ErrUntilReached is matched by the error Execute returns when it
// stopped at the step WithUntil named, and by what Task.Enter returns
// for the step after it.
var ErrUntilReached = errors.New("runner: stopped at the until step")

// WithUntil makes Execute stop after step (HOP[/COMPONENT[/PHASE]]); ""
// runs to the end. A step the plan does not have is refused by Execute
// (ErrInvalidPlan).
func WithUntil(step string) Option { return func(e *Executor) { e.until = step } }

// untilStep is WithUntil's step resolved against a plan; the nil
// *untilStep runs to the end.
type untilStep struct {
	name      string
	hop       int
	component string
	phase     string
	allowed   []bool // on hop: COMPONENT and its ancestors
}

// InlineSteps are the steps of an inline component without declared
// phases, in order, as package components enters them (Task.Enter).
var InlineSteps = []string{"needs-upgrade", "pre-upgrade", "upgrade", "post-upgrade"}

// checkPhase reports whether phase is a step that cv enters: one of its
// declared lifecycle phases, else an inline component's InlineSteps.
// Exec and manifest components without declared phases have no steps to
// stop at; a component of another type (its runner registered by the
// program) may enter any step, so any phase goes.
func checkPhase(cv *release.ComponentVersion, phase string) error {
	if cv == nil {
		return fmt.Errorf("no phase %s: the component is removed on this hop", phase)
	}
	var phases []string
	switch {
	case len(cv.Phases) > 0:
		for _, p := range cv.Phases {
			phases = append(phases, p.Name)
		}
	case cv.Type == release.TypeInline:
		phases = InlineSteps
	case cv.Type == release.TypeExec || cv.Type == release.TypeManifest:
		return fmt.Errorf("%s has no phase %s: %s component without spec.phases has no phases to stop at; stop after the component (HOP/%s)", cv.Name, phase, withArticle(cv.Type), cv.Name)
	default:
		return nil
	}
	if slices.Contains(phases, phase) {
		return nil
	}
	return fmt.Errorf("%s has no phase %s; its phases are %s", cv.Name, phase, strings.Join(phases, ", "))
}

// limits reports whether the step leaves components of hop out.
func (u *untilStep) limits(hop int) bool {
	return u != nil && u.hop == hop && u.allowed != nil
}

// allows reports whether component i of hop runs under the step.
func (u *untilStep) allows(hop, i int) bool {
	return !u.limits(hop) || u.allowed[i]
}
