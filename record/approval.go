package record

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ErrNotWaiting is matched by the error Approve returns for a step that
// is not waiting for approval.
var ErrNotWaiting = errors.New("record: step is not waiting for approval")

// Approval is an operator's approval of a gated step.
type Approval struct {
	Step string    `json:"step" yaml:"step"`
	By   string    `json:"by" yaml:"by"`
	At   time.Time `json:"at" yaml:"at"`
}

// Approve records that by approved the gated step at at. The step must
// be waiting (in s.Waiting) and not yet approved; otherwise the error
// matches ErrNotWaiting and names what waits. Save the status (a
// state.Store) for the approval to count: the next run of the status
// passes the gate (see runner.WithGates for how steps are named).
func (s *Status) Approve(step, by string, at time.Time) error {
	if by == "" {
		return fmt.Errorf("record: approve %s: say who approves (by is empty)", step)
	}
	if s.Approved(step) {
		return fmt.Errorf("%w: %s was already approved", ErrNotWaiting, step)
	}
	if !slices.Contains(s.Waiting, step) {
		waiting := "nothing waits"
		if len(s.Waiting) > 0 {
			waiting = "waiting: " + strings.Join(s.Waiting, ", ")
		}
		return fmt.Errorf("%w: %s (%s)", ErrNotWaiting, step, waiting)
	}
	s.Approvals = append(s.Approvals, Approval{Step: step, By: by, At: at})
	return nil
}

// Approved reports whether step has an approval.
func (s *Status) Approved(step string) bool {
	return slices.ContainsFunc(s.Approvals, func(a Approval) bool { return a.Step == step })
}
