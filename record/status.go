package record

import (
	"errors"
	"slices"
	"time"

	"github.com/hopdag/hopdag/release"
)

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
	// Runs counts runs of this status (runner.Executor.Execute calls; 1
	// for a run never resumed).
	Runs int `json:"runs" yaml:"runs"`
	// Catalog is the plan's catalog source (see CatalogSource); Cached
	// tells whether the latest run's bundle came from the local cache.
	Catalog CatalogSource `json:"catalog,omitzero" yaml:"catalog,omitempty"`
	// Waiting names the steps waiting for approval, sorted.
	Waiting []string `json:"waiting,omitempty" yaml:"waiting,omitempty"`
	// Approvals are the approvals given, in the order given.
	Approvals []Approval `json:"approvals,omitempty" yaml:"approvals,omitempty"`
	// Gates are the steps gated by the caller (runner.WithGates) on top
	// of the catalog's gates, sorted: a resumed run keeps them.
	Gates []string `json:"gates,omitempty" yaml:"gates,omitempty"`
	// FailurePolicy is the run's failure policy (runner.FailurePolicy's
	// String; empty for runner.ContinueIndependent): a resumed run keeps
	// it unless given another with runner.WithFailurePolicy.
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
	// hop (runner.HopPlan.Batches, one after the other), from 1, so that
	// a reader without the plan lists components as the run does. The
	// executor records it; it is 0 before (runner.NewStatus) and in a
	// status written by an older hopdag.
	Order int `json:"order,omitempty" yaml:"order,omitempty"`
	// Step is the step (a runner's phase: "post-upgrade", a declared
	// lifecycle phase) the component entered last; see runner.Task.Enter.
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

// MaxRecorded is the most bytes of an error message (or a panic's stack)
// that a Status records for one component or check.
const MaxRecorded = 16 << 10

// Started reports whether the component's work began: an attempt, or a
// step entered (one held at a gate or the until step counts no attempt).
func (c *ComponentStatus) Started() bool { return c.Attempts > 0 || c.Step != "" }

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

// Abandon marks the run Abandoned with a reason: terminal,
// runner.Executor.Execute refuses to resume it. It returns an error when
// the run already succeeded.
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
		return errors.New("record: cannot abandon a run that succeeded")
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
			started = started || c.Started()
			switch c.Phase {
			case Pending, Running, WaitingForApproval, Paused:
				c.Reason = "not started: " + why
				if c.Phase == Running || c.Started() {
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
