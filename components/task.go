package components

import (
	"errors"
	"log/slog"

	"github.com/hopdag/hopdag/runner"
)

// What the runners read from a runner.Task, in one place.

// logger is the task's logger, or one that discards.
func logger(t runner.Task) *slog.Logger {
	if t.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return t.Logger
}

// fromVersion is the version before the hop, "" for a new component.
func fromVersion(t runner.Task) string {
	if t.From == nil {
		return ""
	}
	return t.From.Version.Original()
}

// hopName is "v26.06-rc.2 -> v26.06-rc.3", "" without a hop.
func hopName(t runner.Task) string {
	if t.Hop == nil {
		return ""
	}
	return t.Hop.Name()
}

// isSkip reports whether err is a runner.Skip: it is passed on unwrapped.
func isSkip(err error) bool { return errors.Is(err, runner.ErrSkipped) }

// noTarget is the error of a task without a To version.
func noTarget(t runner.Task) error {
	return runner.Permanent(&Error{Component: t.Component, Op: "run", Err: errors.New("task has no target version (To is nil)")})
}

// nilComponent is the error of Validate(nil).
func nilComponent() error {
	return &Error{Op: "validate", Err: errors.New("nil component version")}
}
