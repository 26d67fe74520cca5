package components

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Sentinel errors of the package. The errors the runners return match them
// with errors.Is; errors.As gives the typed errors below.
var (
	// ErrUnknownType is matched by a *NotRegisteredError for a component
	// type that no runner is registered for.
	ErrUnknownType = errors.New("components: unknown component type")
	// ErrUnknownHandler is matched by a *NotRegisteredError for an inline
	// handler name that nothing is registered under, and by an inline
	// component that names no handler.
	ErrUnknownHandler = errors.New("components: unknown inline handler")
	// ErrTemplate is matched when a manifest or command template does not
	// parse or does not execute; a missing param or value is such an error.
	ErrTemplate = errors.New("components: bad template")
	// ErrInvalidManifest is matched by a *DocumentError: a rendered document
	// that is not a Kubernetes object, or an object rendered twice.
	ErrInvalidManifest = errors.New("components: invalid manifest")
	// ErrNoManifests is matched when a manifest component has no manifests.
	ErrNoManifests = errors.New("components: component has no manifests")
	// ErrNoReadyChecker is matched when a component has health checks but
	// the Applier does not implement ReadyChecker.
	ErrNoReadyChecker = errors.New("components: applier cannot check readiness")
	// ErrNotReady is matched by a *NotReadyError: a health check that did
	// not report ready before its timeout.
	ErrNotReady = errors.New("components: not ready")
	// ErrNoCommand is matched when an exec component has no command.
	ErrNoCommand = errors.New("components: component has no command")
	// ErrSharedObject is matched by a *SharedObjectError: an object that
	// two components render or own.
	ErrSharedObject = errors.New("components: object rendered by two components")
	// ErrOwned is matched by an *OwnerError: an object to apply that
	// exists labelled as another component's or another instance's.
	ErrOwned = errors.New("components: object owned by another component or instance")
	// ErrPending is what a ReadyChecker's error matches to say "not ready
	// yet, and why": polling goes on, and a timeout's *NotReadyError
	// carries the last such error as its Reason.
	ErrPending = errors.New("components: not ready yet")
)

// prefix starts every message of the package.
const prefix = "components: "

// Error is the error every runner of this package returns: it names the
// component, its version and the step that failed, and wraps the cause.
// errors.Is sees through it to the cause, so a timeout matches
// context.DeadlineExceeded and a cancellation context.Canceled.
type Error struct {
	// Component and Version name the component version being run.
	Component string
	Version   string
	// Op is the step that failed: "run", "validate", "render", "apply",
	// "ready", "prune", "exec", or an inline phase ("needs-upgrade",
	// "pre-upgrade", "upgrade", "post-upgrade").
	Op  string
	Err error
}

func (e *Error) Error() string {
	parts := make([]string, 0, 3)
	if name := strings.TrimSpace(e.Component + " " + e.Version); name != "" {
		parts = append(parts, name)
	}
	msg := ""
	if e.Err != nil {
		msg = trim(e.Err.Error())
	}
	// An error that starts with the step already ("apply ConfigMap
	// ns/name: ...", from an Applier) is not told it again.
	if e.Op != "" && !strings.HasPrefix(msg, e.Op+" ") {
		parts = append(parts, e.Op)
	}
	if msg != "" {
		parts = append(parts, msg)
	}
	return prefix + strings.Join(parts, ": ")
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// NotRegisteredError is a component type, or an inline handler name, that
// nothing is registered for. It matches ErrUnknownType or ErrUnknownHandler.
type NotRegisteredError struct {
	// Kind is "type" or "handler".
	Kind string
	// Name is the type or handler asked for ("" when the component names
	// no handler).
	Name string
	// Registered lists the names that are registered, sorted.
	Registered []string
}

func (e *NotRegisteredError) Error() string {
	reg := "none registered"
	if len(e.Registered) > 0 {
		reg = "registered: " + strings.Join(e.Registered, ", ")
	}
	switch {
	case e.Kind == "handler" && e.Name == "":
		return fmt.Sprintf("%sinline component names no handler (%s)", prefix, reg)
	case e.Kind == "handler":
		return fmt.Sprintf("%sno inline handler registered as %q (%s)", prefix, e.Name, reg)
	default:
		return fmt.Sprintf("%sno runner registered for component type %q (%s)", prefix, e.Name, reg)
	}
}

// Unwrap returns ErrUnknownHandler or ErrUnknownType.
func (e *NotRegisteredError) Unwrap() error {
	if e.Kind == "handler" {
		return ErrUnknownHandler
	}
	return ErrUnknownType
}

// DocumentError is a rendered manifest document that is not a Kubernetes
// object: YAML that does not parse, a document that is not a mapping, a
// missing or non-string apiVersion, kind or metadata.name, or an object
// rendered twice. It matches ErrInvalidManifest.
type DocumentError struct {
	// Manifest is the manifest's name (its file for a loaded catalog).
	Manifest string
	// Doc is the document's position in the rendered manifest, from 1;
	// documents are separated by "---" lines.
	Doc int
	// Line is the line in the rendered text (0 when unknown).
	Line int
	Err  error
}

func (e *DocumentError) Error() string {
	where := e.Manifest
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", e.Manifest, e.Line)
	}
	return fmt.Sprintf("%s%s: document %d: %s", prefix, where, e.Doc, trim(e.Err.Error()))
}

// Unwrap returns the cause.
func (e *DocumentError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalidManifest.
func (e *DocumentError) Is(target error) bool { return target == ErrInvalidManifest }

// NotReadyError is a health check that did not report ready before its
// timeout. It matches ErrNotReady and context.DeadlineExceeded.
type NotReadyError struct {
	Check   string
	Timeout time.Duration
	// Polls is how many times the check was asked.
	Polls int
	// Reason is the last error matching ErrPending the check returned (the
	// objects still not ready, and why), nil when it gave none.
	Reason error
}

func (e *NotReadyError) Error() string {
	s := fmt.Sprintf("%shealth check %s not ready after %s (%d polls)", prefix, e.Check, e.Timeout, e.Polls)
	if e.Reason != nil {
		s += ": " + trim(e.Reason.Error())
	}
	return s
}

// Unwrap returns ErrNotReady, context.DeadlineExceeded and the Reason.
func (e *NotReadyError) Unwrap() []error {
	if e.Reason != nil {
		return []error{ErrNotReady, context.DeadlineExceeded, e.Reason}
	}
	return []error{ErrNotReady, context.DeadlineExceeded}
}

// ExitError is a command that did not succeed: it exited with a non-zero
// code, was killed by a signal, or was stopped because its context ended.
type ExitError struct {
	// Program is the command's argv[0].
	Program string
	// Code is the exit code, -1 when the process was killed by a signal.
	Code int
	// Signal names the signal that killed the process ("" if none).
	Signal string
	// Stderr holds the last lines of the command's standard error.
	Stderr []string
	// Err is ctx.Err() when the command was stopped because its context
	// ended (timeout or cancellation), else the *exec.ExitError.
	Err error
}

func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString(prefix + e.Program)
	var ee *exec.ExitError
	switch {
	case e.Err != nil && !errors.As(e.Err, &ee):
		b.WriteString(": stopped: " + e.Err.Error())
		if e.Signal != "" {
			b.WriteString(" (killed by signal " + e.Signal + ")")
		}
	case e.Signal != "":
		b.WriteString(": killed by signal " + e.Signal)
	default:
		fmt.Fprintf(&b, ": exit code %d", e.Code)
	}
	if len(e.Stderr) > 0 {
		b.WriteString("; last lines of stderr:")
		for _, l := range e.Stderr {
			b.WriteString("\n\t" + l)
		}
	}
	return b.String()
}

// Unwrap returns Err.
func (e *ExitError) Unwrap() error { return e.Err }

// problems is a list of errors reported together; it prints one per line.
type problems []error

func (p problems) Error() string {
	if len(p) == 1 {
		return p[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d problems:", prefix, len(p))
	for _, e := range p {
		b.WriteString("\n\t" + trim(e.Error()))
	}
	return b.String()
}

func (p problems) Unwrap() []error { return p }

// join returns nil, the only error, or the list.
func join(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return problems(errs)
}

// annotated puts context before an error's message, and unwraps to it.
type annotated struct {
	msg string
	err error
}

// annotate returns err with msg before its message.
func annotate(err error, format string, args ...any) error {
	return &annotated{fmt.Sprintf(format, args...), err}
}

func (a *annotated) Error() string { return a.msg + ": " + trim(a.err.Error()) }
func (a *annotated) Unwrap() error { return a.err }

// trim drops the package prefix from a nested message, so that it appears
// once, at the start of the outermost one.
func trim(msg string) string { return strings.TrimPrefix(msg, prefix) }
