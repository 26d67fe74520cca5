package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hopdag/hopdag/internal/simulate"
	"github.com/hopdag/hopdag/runner"
)

// exitWaiting is the exit status of a run stopped at a gate: not failed,
// not done, an operator's approval is needed (hopdag approve).
const exitWaiting = 3

// stepFlags are the flags of step-wise control: run's --until and
// --gate, approve's --state and --by.
type stepFlags struct {
	until, gate *string
	by          *string
}

// runStepFlags adds run's --until and --gate.
func (c *cli) runStepFlags() {
	c.steps.until = c.fs.String("until", "", "stop after this step, HOP[/COMPONENT[/PHASE]] (HOP is the hop's target version); the next run continues")
	c.steps.gate = c.fs.String("gate", "", "comma-separated hops (target versions) that wait for approval (hopdag approve) before they start")
}

// approveFlags adds approve's --state and --by.
func (c *cli) approveFlags() {
	c.state = c.fs.String("state", "", "state directory of the run (required)")
	user := os.Getenv("USER")
	if user == "" {
		user = "operator"
	}
	c.steps.by = c.fs.String("by", user, "who approves (recorded with the time)")
}

// until and gates are run's step flags for simulate.Upgrade.
func (c *cli) until() string { return *c.steps.until }

func (c *cli) gates() []string { return simulate.List(*c.steps.gate) }

// held reports a run that stopped at its --until step or at a gate: the
// exit status, and ok.
func (c *cli) held(st *runner.Status, err error) (int, bool) {
	switch {
	case st == nil:
		return 0, false
	case errors.Is(err, runner.ErrUntilReached):
		fmt.Fprintf(c.stdout, "\nstopped as asked: %s\n", st.Message)
		return exitOK, true
	case errors.Is(err, runner.ErrWaitingForApproval):
		fmt.Fprintf(c.stdout, "\n%s\n", st.Message)
		return exitWaiting, true
	}
	return 0, false
}

// approve records an approval: hopdag approve --state DIR [--by WHO] STEP.
func (c *cli) approve(ctx context.Context) int {
	if *c.state == "" {
		return c.usageError("--state is required")
	}
	step := c.dir
	st, err := simulate.Approve(ctx, *c.state, step, *c.steps.by, time.Now().UTC())
	if err != nil {
		return c.fail1(err)
	}
	a := st.Approvals[len(st.Approvals)-1]
	fmt.Fprintf(c.stdout, "approved %s (by %s at %s); run again to continue\n", a.Step, a.By, a.At.Format(time.RFC3339))
	return exitOK
}
