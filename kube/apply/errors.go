package apply

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/internal/english"
)

// Sentinel errors of the package; the typed errors below match them.
var (
	// ErrConflict is matched by a *ConflictError.
	ErrConflict = errors.New("apply: field manager conflict")
	// ErrFailed is matched by an *UnreadyError that holds an object whose
	// kstatus is Failed.
	ErrFailed = errors.New("apply: object failed")
	// ErrOwned is components.ErrOwned, matched by an *OwnerError (of this
	// package, and of a components.Dir or Recorder).
	ErrOwned = components.ErrOwned
)

// ObjectError is a request about one object that failed. It wraps the API
// server's error (k8s.io/apimachinery/pkg/api/errors tells its kind).
type ObjectError struct {
	Object components.Ref
	// Op is "map", "get", "apply", "delete" or "wait".
	Op  string
	Err error
}

// Error is "apply: get ConfigMap ns/name: ...", or, for an apply, where
// the verb is the package's name, "apply ConfigMap ns/name: ..." (not
// "apply: apply ...").
func (e *ObjectError) Error() string {
	if e.Op == "apply" {
		return fmt.Sprintf("apply %s: %v", e.Object, e.Err)
	}
	return fmt.Sprintf("apply: %s %s: %v", e.Op, e.Object, e.Err)
}

func (e *ObjectError) Unwrap() error { return e.Err }

// ConflictError is a server-side apply refused because other field
// managers own fields the apply sets. Managers and Fields are sorted.
// Apply with WithForce (or components.ApplyOptions.Force) to take the
// fields over.
type ConflictError struct {
	Object       components.Ref
	FieldManager string
	// Managers are the other field managers; Fields the conflicting
	// fields, as the API server names them (".data.key").
	Managers []string
	Fields   []string
	Err      error
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("apply: %s: field manager %s conflicts with %s on %s; leave these fields to %s, or apply with Force to take them over",
		e.Object, e.FieldManager, strings.Join(quoteAll(e.Managers), ", "), strings.Join(e.Fields, ", "), strings.Join(quoteAll(e.Managers), ", "))
}

// Unwrap returns ErrConflict and the API server's error.
func (e *ConflictError) Unwrap() []error { return []error{ErrConflict, e.Err} }

// OwnerError is an apply refused because the object exists labelled as
// another installation's or another component's: its hopdag.io/instance
// and hopdag.io/component labels are not those of the object to apply.
// Applied, it would be relabelled, and the prune of whichever of the two
// stops rendering it would delete it from under the other. Component and
// Instance are who applies it; OwnerComponent and OwnerInstance what the
// live object's labels say ("" for a label it does not have). Apply with
// WithTakeOver to take the object over (the previous owner's prune then
// leaves it in place: its labels are no longer the owner's).
//
// It is components.OwnerError (the refusal of every Applier of the
// module, decided by components.CheckOwner) as a type of this package,
// whose message names this package's WithTakeOver when TakeOver is "". It
// unwraps to the components.OwnerError, so errors.As finds either type
// and errors.Is matches ErrOwned (components.ErrOwned).
type OwnerError components.OwnerError

// Error is "apply Kind namespace/name: refused: ...", the verb being the
// package's name, as for an *ObjectError of an apply.
func (e *OwnerError) Error() string { return e.Unwrap().Error() }

// Unwrap returns the error as a *components.OwnerError whose TakeOver is
// "apply.WithTakeOver" unless set.
func (e *OwnerError) Unwrap() error {
	c := components.OwnerError(*e)
	if c.TakeOver == "" {
		c.TakeOver = "apply.WithTakeOver"
	}
	return &c
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// TerminatingError is an apply of an object that is being deleted (it
// has a deletionTimestamp) whose context ended before the object was
// gone. The apply waits for the deletion to finish rather than apply to
// the object, which the deletion would then take away; what holds the
// object is its finalizers (foregroundDeletion: the garbage collector
// deletes the object's dependents first, a Deployment's Pods through their
// grace period) or, with none, its grace period.
type TerminatingError struct {
	Object components.Ref
	// Since is the object's deletionTimestamp, Finalizers its finalizers,
	// as last read.
	Since      time.Time
	Finalizers []string
	// Waited is how long the apply waited.
	Waited time.Duration
	// Err is the context's error (its cause, when it has one).
	Err error
}

func (e *TerminatingError) Error() string {
	held := "no finalizers"
	if len(e.Finalizers) > 0 {
		held = "finalizers: [" + strings.Join(e.Finalizers, " ") + "]"
	}
	return fmt.Sprintf("apply: %s is being deleted (since %s, %s); it must be gone before it can be applied again, waited %s: %v",
		e.Object, e.Since.Format(time.RFC3339), held, e.Waited.Round(time.Millisecond), e.Err)
}

// Unwrap returns the context's error.
func (e *TerminatingError) Unwrap() error { return e.Err }

// Unready is one object that is not ready: its kstatus status and message,
// and its own conditions ("Available=False (MinimumReplicasUnavailable:
// ...)").
type Unready struct {
	Object     components.Ref
	Status     string
	Message    string
	Conditions []string
}

func (u Unready) String() string {
	s := u.Object.String() + ": " + u.Status
	if u.Message != "" {
		s += ": " + u.Message
	}
	if len(u.Conditions) > 0 {
		s += " [" + strings.Join(u.Conditions, "; ") + "]"
	}
	return s
}

// UnreadyError lists every object of a health check that is not ready,
// sorted. It matches components.ErrPending (Manifest polls on, and a
// timeout shows it), or, when an object Failed, ErrFailed (Manifest stops).
type UnreadyError struct {
	Check   string
	Objects []Unready
	Failed  bool
}

func (e *UnreadyError) Error() string {
	lines := make([]string, len(e.Objects))
	for i, u := range e.Objects {
		lines[i] = u.String()
	}
	what := "not ready"
	if e.Failed {
		what = "failed"
	}
	return fmt.Sprintf("apply: %s %s: %s", english.Count(len(e.Objects), "object"), what, strings.Join(lines, "; "))
}

// Waiting is the one-line summary Manifest reports while it polls (see
// components.ReadyChecker): the first object not ready and its kstatus
// message, "N of M word" when kstatus says "Word: N/M" ("waiting for
// DaemonSet kube-system/calico-node: 3 of 5 updated"), and "and N more"
// when others are not ready either.
func (e *UnreadyError) Waiting() string {
	if len(e.Objects) == 0 {
		return ""
	}
	u := e.Objects[0]
	// The kind without its group, as kubectl names it: the summary is short.
	s := "waiting for " + u.Object.Kind + " " + u.Object.Name
	if u.Object.Namespace != "" {
		s = "waiting for " + u.Object.Kind + " " + u.Object.Namespace + "/" + u.Object.Name
	}
	if msg := countMessage(u.Message); msg != "" {
		s += ": " + msg
	} else {
		s += ": " + u.Status
	}
	if more := len(e.Objects) - 1; more > 0 {
		s += fmt.Sprintf(" and %d more %s", more, english.Plural(more, "object"))
	}
	return s
}

// kstatusCount matches kstatus's counting messages: "Updated: 3/5",
// "Ready: 1/2", "updated: 2/3".
var kstatusCount = regexp.MustCompile(`^([A-Za-z][A-Za-z ]*): (\d+)/(\d+)$`)

// countMessage says kstatus's message "Word: N/M" as "N of M word", and
// any other as it is.
func countMessage(msg string) string {
	m := kstatusCount.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	return m[2] + " of " + m[3] + " " + strings.ToLower(m[1])
}

// Is matches components.ErrPending, or ErrFailed when an object failed.
func (e *UnreadyError) Is(target error) bool {
	if e.Failed {
		return target == ErrFailed
	}
	return target == components.ErrPending
}

func sortedUnique(ss []string) []string {
	slices.Sort(ss)
	return slices.Compact(ss)
}
