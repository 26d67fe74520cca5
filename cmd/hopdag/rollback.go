package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// rollbackFlags are hopdag rollback's own flags; the others are run's.
type rollbackFlags struct {
	reason *string
	yes    *bool
}

func (c *cli) rollbackFlags() {
	c.rb = &rollbackFlags{
		reason: c.fs.String("reason", "", "why, recorded in the status (code ROLLBACK_REQUESTED) and the audit log (required)"),
		yes:    c.fs.Bool("yes", false, "do not ask for confirmation"),
	}
}

// rollback rolls the upgrade saved in --state back to where it started
// (runner.Revert, then Execute): run's flow, in which runState reads the
// status and asks (confirmRollback) before it takes the state's lock, as
// abandon does, and the run's session reverts the status it loads,
// provided it is the one confirmed (revertSession), instead of resuming
// it.
func (c *cli) rollback(ctx context.Context) int {
	if *c.state == "" {
		return c.usageError("--state is required: the rollback undoes the upgrade saved there")
	}
	if strings.TrimSpace(*c.rb.reason) == "" {
		return c.usageError(`--reason is required: say why, for the status and the audit log (--reason "v1.1 breaks the billing job")`)
	}
	if *c.rf.logFormat == "json" && !*c.rb.yes {
		return c.usageError("--log-format json writes only JSON records, so it cannot ask for confirmation: add --yes")
	}
	return c.run(ctx)
}

// confirmRollback checks, before the lock is taken, that st, the status
// read from where, is the upgrade of plan and can be rolled back, and
// asks (unless --yes). It returns false, and the exit code, when the
// rollback must not run: nothing to roll back, another upgrade, already
// rolled back (exit 0), refused, not confirmed, or interrupted; what to
// say is said.
func (c *cli) confirmRollback(ctx context.Context, st *record.Status, plan *runner.Plan, where string) (int, bool) {
	fresh := runner.NewStatus(plan)
	switch {
	case st == nil:
		return c.fail1(fmt.Errorf("no status in %s: there is no upgrade to roll back", where)), false
	case st.Track != fresh.Track || st.From != fresh.From || st.To != fresh.To:
		return c.fail1(fmt.Errorf("%s holds the upgrade %s -> %s (%s), not %s -> %s: give its --from %s and --to %s to roll it back",
			where, st.From, st.To, st.Phase, fresh.From, fresh.To, st.From, st.To)), false
	}
	// Revert on a copy: what it refuses is said before asking.
	switch err := runner.Revert(st.DeepCopy(), *c.rb.reason, time.Now()); {
	case errors.Is(err, runner.ErrRolledBack):
		fmt.Fprintf(c.stderr, "%s -> %s in %s is rolled back to %s already: nothing to do\n", st.From, st.To, where, st.From)
		return exitOK, false
	case err != nil:
		return c.fail1(fmt.Errorf("%s: cannot roll back %s -> %s: %w", where, st.From, st.To, err)), false
	}
	if *c.rb.yes {
		return 0, true
	}
	question := fmt.Sprintf("Roll back %s -> %s (%s, %d/%d components done) in %s to %s, through each hop's DAG, last hop first? [y/N] ",
		st.From, st.To, st.Phase, st.Progress.Done, st.Progress.Total, where, st.From)
	return c.ask(ctx, question)
}

// ask asks question (confirm) and reports whether the answer is yes;
// when it is not, it says so and code is the exit: interrupted, or not
// confirmed.
func (c *cli) ask(ctx context.Context, question string) (code int, ok bool) {
	switch c.confirm(ctx, question) {
	case answerInterrupted:
		c.errorf("interrupted by %s while asking: nothing changed\n", signame(interruptedBy(ctx)))
		return exitInterrupted, false
	case answerNo:
		return c.fail1(errors.New("not confirmed: nothing changed (pass --yes to skip the question)")), false
	}
	return 0, true
}

// answer is what a question on the terminal got.
type answer int

const (
	answerNo answer = iota
	answerYes
	answerInterrupted
)

// confirm writes question on stderr and reads the answer from stdin: y
// or yes (any case) is yes, anything else (an empty line, the end of the
// input) no. An interrupt while it waits is answerInterrupted: the read
// is left behind, so the command ends without waiting for a line.
func (c *cli) confirm(ctx context.Context, question string) answer {
	fmt.Fprint(c.stderr, question)
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(c.stdin).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if a := strings.ToLower(strings.TrimSpace(s)); a == "y" || a == "yes" {
			return answerYes
		}
		fmt.Fprintln(c.stderr)
		return answerNo
	case <-ctx.Done():
		fmt.Fprintln(c.stderr)
		return answerInterrupted
	}
}

// revertSession is what rollback does, the lock held, with the status
// prev it loaded from where: it reverts it (runner.Revert) if it is still
// asked, the one the user confirmed; with --yes, nobody confirmed
// anything, and prev is checked as confirmRollback checked what it read
// (a run that ended while the lock was waited for has written its end,
// which is what is rolled back). It returns false, and the exit code,
// when the rollback must not run (what to say is said); otherwise resume
// is the line that says what the run does, and was the phase prev had.
func (c *cli) revertSession(ctx context.Context, prev, asked *record.Status, plan *runner.Plan, where string) (resume string, was record.Phase, code int, ok bool) {
	if *c.rb.yes {
		if code, ok := c.confirmRollback(ctx, prev, plan, where); !ok {
			return "", "", code, false
		}
	} else if !sameStatus(prev, asked) {
		return "", "", c.fail1(fmt.Errorf("the status in %s changed since you confirmed (a run wrote it meanwhile)%s: nothing was rolled back; run hopdag rollback again to see what it holds now",
			where, statusNow(prev))), false
	}
	was = prev.Phase
	reason := *c.rb.reason
	resume = fmt.Sprintf("rolling back from %s (%s, %d/%d done, run %d): %s\n", where, prev.Phase, prev.Progress.Done, prev.Progress.Total, prev.Runs, reason)
	if err := runner.Revert(prev, reason, time.Now()); err != nil {
		return "", "", c.fail1(fmt.Errorf("%s: cannot roll back %s -> %s: %w", where, prev.From, prev.To, err)), false
	}
	return resume, was, 0, true
}

// rolledBack reports the end of a rollback: exit 0 once the status is
// RolledBack to where the upgrade started, as asked; 1 when the rollback
// failed, saying what to do (resumeHint: retry it with the same command,
// or, when it stopped at irreversible components, what then). ok is
// false for any other end (an interrupt, a lost lease), which outcome
// reports as a run's.
func (c *cli) rolledBack(st *record.Status, err error) (int, bool) {
	switch {
	case c.name != "rollback" || st == nil:
		return 0, false
	case st.Phase == record.RolledBack && errors.Is(err, runner.ErrRolledBack):
		fmt.Fprintf(c.stderr, "rolled back %s -> %s to %s\n", st.From, st.To, st.From)
		return exitOK, true
	case st.Phase == record.RollbackFailed && errors.Is(err, runner.ErrRollbackFailed):
		c.errorf("%v: %s", message(err), c.resumeHint(st))
		return exitInvalid, true
	}
	return 0, false
}
