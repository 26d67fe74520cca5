package runner

import (
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/hopdag/hopdag/release"
)

// Phase is the state of a run, a hop or a component.
type Phase string

// Phases. A run and a hop are Pending, Running, Succeeded, Failed,
// Cancelled; a run may also be Abandoned. A component is Pending, Running,
// Succeeded, Failed, Skipped or Cancelled. (An abandoned run's unfinished
// hops and components are Cancelled, code ABANDONED: see Status.Abandon.)
// A gate or the Until step holds a run, a hop or a component
// WaitingForApproval or Paused (gate.go, until.go). Under the Rollback
// policy a run, a hop and a component are RollingBack while their
// rollback runs, then RolledBack or RollbackFailed (rollback.go).
const (
	Pending   Phase = "Pending"
	Running   Phase = "Running"
	Succeeded Phase = "Succeeded"
	Failed    Phase = "Failed"
	Skipped   Phase = "Skipped"
	Cancelled Phase = "Cancelled"
	// Abandoned is terminal: Execute refuses to resume an abandoned run
	// (Sunbeam's abandon). Set it with Status.Abandon.
	Abandoned Phase = "Abandoned"
)

// Phases lists every Phase the executor writes, for readers that check
// a stored status (package state) and exhaustive tests.
func Phases() []Phase {
	return []Phase{Pending, Running, Succeeded, Failed, Skipped, Cancelled, Abandoned, WaitingForApproval, Paused,
		RollingBack, RolledBack, RollbackFailed}
}

// Terminal reports whether p is a final phase for a component.
func (p Phase) Terminal() bool {
	return p == Succeeded || p == Failed || p == Skipped || p == Cancelled || p == Abandoned
}

// Code classifies why a component, a hop or a run did not succeed. The set
// is closed: these are all the codes the executor writes.
type Code string

const (
	// CodeComponentFailed: the runner returned an error on its last attempt.
	CodeComponentFailed Code = "COMPONENT_FAILED"
	// CodeComponentTimeout: the last attempt ran past the component's timeout.
	CodeComponentTimeout Code = "COMPONENT_TIMEOUT"
	// CodeDependencyFailed: not run because a dependency failed (Skipped).
	CodeDependencyFailed Code = "DEPENDENCY_FAILED"
	// CodeCheckFailed: a required pre- or post-check of the hop failed.
	CodeCheckFailed Code = "CHECK_FAILED"
	// CodePanic: the runner panicked; Stack holds the stack.
	CodePanic Code = "PANIC"
	// CodeCancelled: stopped or never started because the caller cancelled
	// or a fail-fast policy stopped the run.
	CodeCancelled Code = "CANCELLED"
	// CodeCheckpointFailed: the Checkpointer could not record a transition,
	// so the run stopped rather than act without a record.
	CodeCheckpointFailed Code = "CHECKPOINT_FAILED"
	// CodeAbandoned: an operator abandoned the run; also the code of the
	// hops and components it left unfinished (see Status.Abandon).
	CodeAbandoned Code = "ABANDONED"
)

// Codes lists every Code, for documentation and exhaustive tests.
func Codes() []Code {
	return []Code{CodeComponentFailed, CodeComponentTimeout, CodeDependencyFailed, CodeCheckFailed,
		CodePanic, CodeCancelled, CodeCheckpointFailed, CodeAbandoned, CodeWaitingForApproval, CodeUntilReached,
		CodeRollbackFailed, CodeIrreversible, CodeRollbackBlocked}
}

// Status is the durable record of a run. It has json and yaml tags and
// DeepCopy methods so an operator can keep it in a CRD's status.
type Status struct {
	Phase Phase  `json:"phase" yaml:"phase"`
	Track string `json:"track,omitempty" yaml:"track,omitempty"`
	From  string `json:"from" yaml:"from"`
	To    string `json:"to" yaml:"to"`
	// CurrentHop is the index of the hop running or last run.
	CurrentHop int         `json:"currentHop" yaml:"currentHop"`
	Hops       []HopStatus `json:"hops" yaml:"hops"`
	Progress   Progress    `json:"progress" yaml:"progress"`
	// LastFailure is the most recent component or check failure.
	LastFailure *Failure  `json:"lastFailure,omitempty" yaml:"lastFailure,omitempty"`
	Code        Code      `json:"code,omitempty" yaml:"code,omitempty"`
	Message     string    `json:"message,omitempty" yaml:"message,omitempty"`
	StartedAt   time.Time `json:"startedAt,omitzero" yaml:"startedAt,omitempty"`
	FinishedAt  time.Time `json:"finishedAt,omitzero" yaml:"finishedAt,omitempty"`
	// Runs counts Execute calls on this status (1 for a run never resumed).
	Runs int `json:"runs" yaml:"runs"`
	// Catalog is the plan's catalog source (see CatalogSource); Cached
	// tells whether the latest run's bundle came from the local cache.
	Catalog CatalogSource `json:"catalog,omitzero" yaml:"catalog,omitempty"`
	// Waiting names the steps waiting for approval, sorted (gate.go).
	Waiting []string `json:"waiting,omitempty" yaml:"waiting,omitempty"`
	// Approvals are the approvals given, in the order given.
	Approvals []Approval `json:"approvals,omitempty" yaml:"approvals,omitempty"`
	// Gates are the steps gated by the caller (WithGates) on top of the
	// catalog's gates, sorted: a resumed run keeps them (gate.go).
	Gates []string `json:"gates,omitempty" yaml:"gates,omitempty"`
	// FailurePolicy is the run's failure policy (FailurePolicy.String;
	// empty for ContinueIndependent): a resumed run keeps it unless
	// given another with WithFailurePolicy.
	FailurePolicy string `json:"failurePolicy,omitempty" yaml:"failurePolicy,omitempty"`
}

// Progress counts components across all hops. Done counts Succeeded and
// Skipped ones.
type Progress struct {
	Done  int `json:"done" yaml:"done"`
	Total int `json:"total" yaml:"total"`
}

// HopStatus is the record of one hop.
type HopStatus struct {
	// Track is the track the hop moves, in a route across tracks.
	Track      string            `json:"track,omitempty" yaml:"track,omitempty"`
	From       string            `json:"from" yaml:"from"`
	To         string            `json:"to" yaml:"to"`
	Phase      Phase             `json:"phase" yaml:"phase"`
	Code       Code              `json:"code,omitempty" yaml:"code,omitempty"`
	Message    string            `json:"message,omitempty" yaml:"message,omitempty"`
	StartedAt  time.Time         `json:"startedAt,omitzero" yaml:"startedAt,omitempty"`
	FinishedAt time.Time         `json:"finishedAt,omitzero" yaml:"finishedAt,omitempty"`
	Duration   release.Duration  `json:"duration,omitzero" yaml:"duration,omitempty"`
	Checks     []CheckStatus     `json:"checks,omitempty" yaml:"checks,omitempty"`
	Components []ComponentStatus `json:"components" yaml:"components"`
	// Warnings lists failed checks that were not required.
	Warnings []string `json:"warnings,omitempty" yaml:"warnings,omitempty"`
}

// CheckStatus is the record of one pre- or post-check of a hop.
type CheckStatus struct {
	Name     string `json:"name" yaml:"name"`
	Stage    string `json:"stage" yaml:"stage"` // "pre" or "post"
	Required bool   `json:"required,omitempty" yaml:"required,omitempty"`
	Phase    Phase  `json:"phase" yaml:"phase"`
	Error    string `json:"error,omitempty" yaml:"error,omitempty"`
}

// ComponentStatus is the record of one component on one hop.
type ComponentStatus struct {
	Name        string `json:"name" yaml:"name"`
	FromVersion string `json:"fromVersion,omitempty" yaml:"fromVersion,omitempty"`
	ToVersion   string `json:"toVersion" yaml:"toVersion"`
	Phase       Phase  `json:"phase" yaml:"phase"`
	Attempts    int    `json:"attempts" yaml:"attempts"`
	// Order is the component's place in the plan's batch order on its
	// hop (HopPlan.Batches, one after the other), from 1, so that a
	// reader without the plan lists components as the run does. Execute
	// records it; it is 0 before (NewStatus) and in a status written by
	// an older hopdag.
	Order int `json:"order,omitempty" yaml:"order,omitempty"`
	// Step is the step (a runner's phase: "post-upgrade", a declared
	// lifecycle phase) the component entered last; see Task.Enter.
	Step       string           `json:"step,omitempty" yaml:"step,omitempty"`
	StartedAt  time.Time        `json:"startedAt,omitzero" yaml:"startedAt,omitempty"`
	FinishedAt time.Time        `json:"finishedAt,omitzero" yaml:"finishedAt,omitempty"`
	Duration   release.Duration `json:"duration,omitzero" yaml:"duration,omitempty"`
	Code       Code             `json:"code,omitempty" yaml:"code,omitempty"`
	// Reason says why a component was Skipped or Cancelled.
	Reason string `json:"reason,omitempty" yaml:"reason,omitempty"`
	// Error is the last attempt's error message: at most MaxRecorded
	// bytes, its middle cut out when longer (the head says what failed,
	// the tail how it ended), so that one runaway message cannot push a
	// record past a store's value limit.
	Error string `json:"error,omitempty" yaml:"error,omitempty"`
	// Stack is the goroutine stack of a recovered panic, cut as Error is.
	Stack string `json:"stack,omitempty" yaml:"stack,omitempty"`
}

// started reports whether the component's work began: an attempt, or a
// step entered (one held at a gate or the Until step counts no attempt).
func (c *ComponentStatus) started() bool { return c.Attempts > 0 || c.Step != "" }

// Failure names the most recent failure of a run.
type Failure struct {
	Hop       int       `json:"hop" yaml:"hop"`
	Component string    `json:"component,omitempty" yaml:"component,omitempty"`
	Check     string    `json:"check,omitempty" yaml:"check,omitempty"`
	Version   string    `json:"version,omitempty" yaml:"version,omitempty"`
	Attempt   int       `json:"attempt,omitempty" yaml:"attempt,omitempty"`
	Code      Code      `json:"code" yaml:"code"`
	Error     string    `json:"error" yaml:"error"`
	Time      time.Time `json:"time" yaml:"time"`
}

// Abandon marks the run Abandoned with a reason: terminal, Execute refuses
// to resume it. It returns an error when the run already succeeded.
//
// What the run left unfinished ends too, with code ABANDONED, as a
// cancelled run ends what it did not finish (Abandoned is a run's phase
// only):
//
//   - a hop or a component Running, WaitingForApproval or Paused is
//     Cancelled, "interrupted: abandoned (REASON)", when it had started
//     (a component with an attempt, a hop that was Running or has such a
//     component), else "not started: abandoned (REASON)";
//   - a Pending one is Cancelled, "not started: abandoned (REASON)";
//   - a RollingBack one is RollbackFailed, "rollback interrupted:
//     abandoned (REASON)": its rollback did not get there.
//
// What finished keeps its record, and times stay as recorded (when an
// interrupted step stopped is not known). Nothing waits for approval any
// more: Waiting is emptied. With an empty reason the texts end at
// "abandoned".
func (s *Status) Abandon(reason string, now time.Time) error {
	if s.Phase == Succeeded {
		return errorf("cannot abandon a run that succeeded")
	}
	s.Phase, s.Code, s.Message, s.FinishedAt = Abandoned, CodeAbandoned, reason, now
	why := "abandoned"
	if reason != "" {
		why += " (" + reason + ")"
	}
	for i := range s.Hops {
		h := &s.Hops[i]
		started := h.Phase == Running
		for j := range h.Components {
			c := &h.Components[j]
			started = started || c.started()
			switch c.Phase {
			case Pending, Running, WaitingForApproval, Paused:
				c.Reason = "not started: " + why
				if c.Phase == Running || c.started() {
					c.Reason = "interrupted: " + why
				}
				c.Phase, c.Code = Cancelled, CodeAbandoned
			case RollingBack:
				c.Phase, c.Code, c.Reason = RollbackFailed, CodeAbandoned, "rollback interrupted: "+why
			}
		}
		switch h.Phase {
		case Pending, Running, WaitingForApproval, Paused:
			h.Phase, h.Code, h.Message = Cancelled, CodeAbandoned, "not started: "+why
			if started {
				h.Message = "interrupted: " + why
			}
		case RollingBack:
			h.Phase, h.Code, h.Message = RollbackFailed, CodeAbandoned, "rollback interrupted: "+why
		}
	}
	s.Waiting = nil
	return nil
}

// Component returns the status of a component on hop h.
func (s *Status) Component(h int, name string) (*ComponentStatus, bool) {
	if h < 0 || h >= len(s.Hops) {
		return nil, false
	}
	for i := range s.Hops[h].Components {
		if s.Hops[h].Components[i].Name == name {
			return &s.Hops[h].Components[i], true
		}
	}
	return nil, false
}

// DeepCopyInto copies s into out.
func (s *Status) DeepCopyInto(out *Status) {
	*out = *s
	if s.Hops != nil {
		out.Hops = make([]HopStatus, len(s.Hops))
		for i := range s.Hops {
			s.Hops[i].DeepCopyInto(&out.Hops[i])
		}
	}
	if s.LastFailure != nil {
		f := *s.LastFailure
		out.LastFailure = &f
	}
	out.Waiting = slices.Clone(s.Waiting)
	out.Approvals = slices.Clone(s.Approvals)
	out.Gates = slices.Clone(s.Gates)
}

// DeepCopy returns a copy of s that shares no memory with it.
func (s *Status) DeepCopy() *Status {
	if s == nil {
		return nil
	}
	out := new(Status)
	s.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies h into out.
func (h *HopStatus) DeepCopyInto(out *HopStatus) {
	*out = *h
	out.Checks = slices.Clone(h.Checks)
	out.Components = slices.Clone(h.Components)
	out.Warnings = slices.Clone(h.Warnings)
}

// MaxRecorded is the most bytes of an error message (or a panic's stack)
// that a Status records for one component or check.
const MaxRecorded = 16 << 10

// recorded is msg as a Status records it: msg itself when it fits in
// MaxRecorded bytes, else its first three quarters and last quarter of
// that, around a note of how much was cut (at rune boundaries).
func recorded(msg string) string {
	if len(msg) <= MaxRecorded {
		return msg
	}
	const note = "\n[... %d bytes cut ...]\n"
	room := MaxRecorded - len(note) - 12
	head, tail := room*3/4, room/4
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	t := len(msg) - tail
	for t < len(msg) && !utf8.RuneStart(msg[t]) {
		t++
	}
	return msg[:head] + fmt.Sprintf(note, t-head) + msg[t:]
}
