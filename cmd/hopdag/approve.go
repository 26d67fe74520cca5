package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/simulate"
	"github.com/hopdag/hopdag/state"
)

// exitWaiting is the exit status of a run stopped at a gate: not failed,
// not done, an operator's approval is needed (hopdag approve).
const exitWaiting = 3

// stepFlags are the flags of step-wise control: run's --until and
// --gate, approve's --by and --log-file.
type stepFlags struct {
	until, gate *string
	by, logFile *string
}

// runStepFlags adds run's --until and --gate.
func (c *cli) runStepFlags() {
	c.steps.until = c.fs.String("until", "", "stop after this step, HOP[/COMPONENT[/PHASE]] (HOP is the hop's target version); the next run continues")
	c.steps.gate = c.fs.String("gate", "", "comma-separated hops (target versions) that wait for approval (hopdag approve) before they start; recorded with --state, so a resumed run keeps them")
}

// approveFlags adds approve's --state and --by.
func (c *cli) approveFlags() {
	c.state = c.fs.String("state", "", "where the run's status lives: a directory, etcd://host:port/prefix or kube://namespace/name (required)")
	// Resolved when the command runs (approver), not here: the help
	// says the same whoever reads it.
	c.steps.by = c.fs.String("by", "", "who approves, recorded with the time (default: $USER, else operator)")
	c.steps.logFile = c.fs.String("log-file", "", "append the approval to this audit log (see hopdag run --log-file)")
	c.kubeFlags()
}

// approver is who an approval is recorded as: --by, else $USER (user),
// else "operator".
func approver(by, user string) string {
	switch {
	case by != "":
		return by
	case user != "":
		return user
	}
	return "operator"
}

// checkUntil says what is wrong with the form of an --until, or "": each
// of its parts (HOP, COMPONENT, PHASE) must be there, not empty.
func checkUntil(until string) string {
	if until == "" {
		return ""
	}
	parts := strings.Split(until, "/")
	if len(parts) > 3 {
		return fmt.Sprintf("--until %s: want HOP, HOP/COMPONENT or HOP/COMPONENT/PHASE", until)
	}
	for i, p := range parts {
		if p != "" {
			continue
		}
		if i == 0 {
			return fmt.Sprintf("--until %s: the hop before %q is empty; want HOP, HOP/COMPONENT or HOP/COMPONENT/PHASE (HOP is the hop's target version)", until, until[len(parts[0]):])
		}
		before := strings.Join(parts[:i], "/") + "/"
		return fmt.Sprintf("--until %s: the %s after %q is empty; want HOP, HOP/COMPONENT or HOP/COMPONENT/PHASE", until, []string{"", "component", "phase"}[i], before)
	}
	return ""
}

// until and gates are run's step flags for simulate.Upgrade.
func (c *cli) until() string { return optional(c.steps.until) }

func (c *cli) gates() []string { return simulate.List(optional(c.steps.gate)) }

// optional is the value of a string flag the command may not have: ""
// when it has none.
func optional(f *string) string {
	if f == nil {
		return ""
	}
	return *f
}

// held reports a run that stopped at its --until step or at a gate: the
// exit status, and ok.
func (c *cli) held(st *record.Status, err error) (int, bool) {
	switch {
	case st == nil:
		return 0, false
	case errors.Is(err, runner.ErrUntilReached):
		fmt.Fprintf(c.stderr, "hopdag run: %s\n", st.Message)
		return exitOK, true
	case errors.Is(err, runner.ErrWaitingForApproval):
		fmt.Fprintf(c.stderr, "hopdag run: %s\n", c.waitText(st))
		return exitWaiting, true
	}
	return 0, false
}

// waitText says what waits for approval in st, each step with the reason
// its gate gives, and the command that approves it, with this command's
// --state; steps approved since (hopdag approve, before the next run)
// are said to be approved instead, with who approved them.
func (c *cli) waitText(st *record.Status) string {
	if len(st.Waiting) == 0 {
		return st.Message
	}
	reasons := gateReasons(st)
	var waiting, approved []string
	for _, step := range st.Waiting {
		i := slices.IndexFunc(st.Approvals, func(a record.Approval) bool { return a.Step == step })
		if i < 0 {
			waiting = append(waiting, step)
			continue
		}
		approved = append(approved, step+" approved by "+st.Approvals[i].By)
	}
	if len(waiting) == 0 {
		return strings.Join(approved, ", ") + "; run again to continue"
	}
	text := c.approveText(waiting, reasons)
	if len(approved) > 0 {
		text += " (" + strings.Join(approved, ", ") + ")"
	}
	return text
}

// gateReasons is the reason of each gate st waits at, by step: the
// runner writes "waiting for approval of STEP: REASON" in the message of
// a gated hop and in the reason of a gated component or phase. The
// reason the runner gives a --gate (runner.WithGates) is left out: the
// gated line of the table names those.
func gateReasons(st *record.Status) map[string]string {
	reasons := map[string]string{}
	note := func(msg string) {
		if rest, ok := strings.CutPrefix(msg, "waiting for approval of "); ok {
			if step, reason, ok := strings.Cut(rest, ": "); ok && reason != "" && reason != runGateReason {
				reasons[step] = reason
			}
		}
	}
	for _, h := range st.Hops {
		note(h.Message)
		for _, cs := range h.Components {
			note(cs.Reason)
		}
	}
	return reasons
}

// runGateReason is the reason runner gives a gate added with
// runner.WithGates (hopdag run --gate).
const runGateReason = "gated when the run started"

// approveText says that steps wait for approval, each with its reason
// when reasons has one, and the commands that approve them with this
// command's --state.
func (c *cli) approveText(steps []string, reasons map[string]string) string {
	named := make([]string, len(steps))
	for i, step := range steps {
		named[i] = step
		if r := reasons[step]; r != "" {
			named[i] += " (" + r + ")"
		}
	}
	if c.state == nil || *c.state == "" {
		return fmt.Sprintf("waiting for approval of %s; without --state nothing was saved to approve: run with --state", strings.Join(named, ", "))
	}
	var cmds []string
	for _, step := range steps {
		cmds = append(cmds, "hopdag approve --state "+*c.state+" "+step)
	}
	return fmt.Sprintf("waiting for approval of %s; approve with: %s, then run again", strings.Join(named, ", "), strings.Join(cmds, "; "))
}

// approve records an approval: hopdag approve --state S [--by WHO] STEP.
// It takes the state's lock, so it refuses while a run holds it (a run
// stopped at a gate has released it).
func (c *cli) approve(ctx context.Context) (code int) {
	if *c.state == "" {
		return c.usageError("--state is required")
	}
	// STEP may come before or after the flags.
	args := c.pos
	if len(args) != 1 {
		return c.usageError("want exactly one step to approve, HOP[/COMPONENT[/PHASE]] (hopdag status names the step waiting)")
	}
	step := args[0]
	var audit *auditLog
	if *c.steps.logFile != "" {
		var err error
		if audit, err = openAudit(*c.steps.logFile); err != nil {
			return c.fail1(err)
		}
		audit.command(c.args)
		defer func() {
			audit.exit(code)
			audit.close()
		}()
	}
	b, err := c.openState(ctx, *c.state)
	if err != nil {
		return c.fail1(err)
	}
	defer b.close()
	lock := &stateLock{auditedLock: auditedLock{b.lock, audit}, c: c, b: b}
	st, err := state.Approve(ctx, located{b: b}, lock, step, approver(*c.steps.by, c.getenvOr("USER")), time.Now().UTC(),
		state.WithHolder(holder("approve")), state.WithTTL(leaseTTL))
	switch {
	case lock.err != nil:
		return c.fail1(fmt.Errorf("%s: %w", *c.state, lock.err))
	case errors.Is(err, state.ErrNoStatus):
		return c.fail1(fmt.Errorf("no status in %s: there is no run to approve; run the upgrade first", b.where))
	case err != nil:
		return c.fail1(err)
	}
	a := st.Approvals[len(st.Approvals)-1]
	audit.write(auditRecord{Kind: "approve", Step: a.Step, By: a.By, Phase: string(st.Phase)})
	fmt.Fprintf(c.stdout, "approved %s (by %s at %s); run again to continue\n", a.Step, a.By, a.At.Format(time.RFC3339))
	return exitOK
}
