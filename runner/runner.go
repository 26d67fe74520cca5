package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
)

// Runner upgrades one component. Run must return when ctx is done (the
// component's timeout, a fail-fast stop or the caller's cancellation) with
// an error that wraps ctx.Err(): that is how the status tells a component
// the stop interrupted (Cancelled) from one that failed by itself (Failed).
//
// Return nil on success, Skip(reason) when nothing needed doing, and
// Permanent(err) for a failure that retrying cannot fix. Any other error is
// retried as the component's Retries allow. A panic is recovered and
// recorded as the component's failure (code PANIC) with its stack; a call
// of runtime.Goexit (t.FailNow in a test) fails the attempt.
//
// The executor calls Run from many goroutines at once, one call per task.
type Runner interface {
	Run(ctx context.Context, t Task) error
}

// RunnerFunc adapts a function to Runner.
type RunnerFunc func(ctx context.Context, t Task) error

// Run calls f(ctx, t).
func (f RunnerFunc) Run(ctx context.Context, t Task) error { return f(ctx, t) }

// Validator is an optional ability of a Runner: it says at plan time whether
// it can run a component (a registered type, a known handler). NewPlan with
// ForExecutor calls it for every component of every hop.
type Validator interface {
	Validate(cv *release.ComponentVersion) error
}

// HopValidator is an optional ability of a Runner: it says at plan time
// whether it can run a hop as a whole, for what no one component shows (two
// manifest components that render one object). NewPlan with ForExecutor
// calls it once per hop, after Validator.
type HopValidator interface {
	ValidateHop(h *HopPlan) error
}

// Task is one attempt at upgrading one component on one hop.
type Task struct {
	// Hop is the hop being run (read-only).
	Hop *HopPlan
	// HopIndex is the hop's position in the plan, from 0.
	HopIndex int
	// Component is the component's name.
	Component string
	// From is the version before the hop; nil when the component is new.
	From *release.ComponentVersion
	// To is the version to upgrade to.
	To *release.ComponentVersion
	// Attempt counts attempts from 1, across retries and resumed runs; a
	// component that a gate or the Until step stopped goes on as the same
	// attempt when the next run continues it. In a Rollback it counts the
	// rollback's attempts from 1, across its retries in this Execute call.
	Attempt int
	// Logger carries hop, component and attempt attributes.
	Logger *slog.Logger
	// Step is the step (phase) the component's record says it had
	// entered when its last attempt ended: a runner with phases continues
	// there (see Enter). "" means from the start. In a Rollback it is
	// "rollback".
	Step string

	// steps records step entries (step.go); nil for a Task built by hand.
	steps stepper
}

// Sentinel errors of the package.
var (
	// ErrSkipped is matched by the errors Skip returns.
	ErrSkipped = errors.New("runner: skipped")
	// ErrAbandoned is returned by Execute for a status marked Abandoned.
	ErrAbandoned = errors.New("runner: run was abandoned")
	// ErrPlanMismatch is returned by Execute when a previous status does not
	// belong to the plan it is asked to resume.
	ErrPlanMismatch = errors.New("runner: status does not match plan")
	// ErrRunFailed is matched by the error Execute returns when a component
	// or a required check failed.
	ErrRunFailed = errors.New("runner: run failed")
	// ErrInvalidPlan is matched by plan-time validation errors.
	ErrInvalidPlan = errors.New("runner: invalid plan")
)

// Skip returns an error that records the component as Skipped with the
// given reason instead of Failed (e.g. "already at target"). Its dependents
// run as if it had succeeded.
func Skip(reason string) error { return &skipError{reason} }

type skipError struct{ reason string }

func (e *skipError) Error() string { return "runner: skipped: " + e.reason }
func (e *skipError) Is(target error) bool {
	return target == ErrSkipped
}

// Permanent marks err as not worth retrying. errors.Is and errors.As see
// through it to err.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// IsPermanent reports whether err, or an error it wraps, was marked Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// PanicError is a recovered runner panic.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("runner: panic: %v", e.Value) }

// ComponentError is a component's final failure on a hop.
type ComponentError struct {
	Hop       int
	Component string
	Version   string
	Attempt   int
	Code      record.Code
	Err       error
}

func (e *ComponentError) Error() string {
	return fmt.Sprintf("runner: hop %d: %s %s failed on attempt %d (%s): %s", e.Hop+1, e.Component, e.Version, e.Attempt, e.Code, e.cause())
}

// cause is the runner's error without what the ComponentError says
// already: a runner's error that names the component ("components: api
// 1.1.0: upgrade: boom", "api: boom") is told from after the name, so that
// the component is named once; any other error is told whole.
func (e *ComponentError) cause() string {
	if e.Err == nil {
		return "no error"
	}
	msg := e.Err.Error()
	texts := []string{msg}
	if pkg, after, ok := strings.Cut(msg, ": "); ok && isPackagePrefix(pkg) {
		texts = append(texts, after)
	}
	for _, text := range texts {
		for _, name := range []string{e.Component + " " + e.Version + ": ", e.Component + ": "} {
			if after, ok := strings.CutPrefix(text, name); ok && after != "" {
				return after
			}
		}
	}
	return msg
}

// isPackagePrefix reports whether s is a package name as messages start
// with it ("components", "simulate"): lowercase letters and digits.
func isPackagePrefix(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// runFailedError is the error of a run that failed: ErrRunFailed and the
// failures (*ComponentError, *CheckError, ...) that made it fail. Its
// message names the package once: "runner: run failed: hop 1: ...".
type runFailedError struct{ errs []error }

func (e *runFailedError) Error() string {
	parts := make([]string, len(e.errs))
	for i, err := range e.errs {
		parts[i] = strings.TrimPrefix(err.Error(), "runner: ")
	}
	return ErrRunFailed.Error() + ": " + strings.Join(parts, "\n")
}

// Unwrap returns ErrRunFailed and the failures.
func (e *runFailedError) Unwrap() []error { return append([]error{ErrRunFailed}, e.errs...) }

// Unwrap returns the runner's error.
func (e *ComponentError) Unwrap() error { return e.Err }
