package runner

import (
	"context"
	"strings"
	"time"

	"github.com/hopdag/hopdag/release"
)

// timeoutError is the error of an attempt that ran past its timeout. The
// runner's own error usually says only "context deadline exceeded"; this
// one says how long the attempt had, whose timeout that was and what to
// change. It matches context.DeadlineExceeded and the runner's error.
type timeoutError struct {
	d   time.Duration
	own bool // the component's spec.timeout, else the executor's default
	cv  *release.ComponentVersion
	err error // the runner's error
}

func (e *timeoutError) Error() string {
	var what string
	if e.own {
		what = "spec.timeout of " + e.cv.Key()
		if src := e.cv.Source.String(); src != "" {
			what += ", " + src
		}
		what += "); raise it in that ComponentVersion"
	} else {
		what = "the executor's default timeout, WithDefaultTimeout: " + e.cv.Key() + " sets no spec.timeout); set spec.timeout in its ComponentVersion"
	}
	text := "timed out after " + e.d.String() + " (" + what + " if " + e.cv.Name + " needs longer"
	// The runner's text names the deadline where it saw it ("apply web:
	// context deadline exceeded"): say it there. A runner that failed its
	// own way once its ctx was done keeps its words, after ours.
	msg := e.err.Error()
	deadline := context.DeadlineExceeded.Error()
	if before, after, ok := strings.Cut(msg, deadline); ok {
		return before + text + after
	}
	return text + ": " + msg
}

func (e *timeoutError) Unwrap() []error { return []error{context.DeadlineExceeded, e.err} }
