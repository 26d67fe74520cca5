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
// (runner.Revert, then Execute): run's flow, under the state's lock,
// whose session asks first and reverts the status it loaded instead of
// resuming it (runState, revertSession).
func (c *cli) rollback(ctx context.Context) int {
	if *c.state == "" {
		return c.usageError("--state is required: the rollback undoes the upgrade saved there")
	}
	if strings.TrimSpace(*c.rb.reason) == "" {
		return c.usageError(`--reason is required: say why, for the status and the audit log (--reason "v1.1 breaks the billing job")`)
	}
	return c.run(ctx)
}

// revertSession is what rollback does with the status prev it loaded
// from where, the lock held: it checks that prev is the upgrade of plan
// and can be rolled back, asks (unless --yes), and reverts it
// (runner.Revert). It returns false, and the exit code, when the rollback
// must not run: nothing to roll back, another upgrade, already rolled
// back (exit 0), refused, or not confirmed; what to say is said.
// Otherwise resume is the line that says what the run does.
func (c *cli) revertSession(prev *record.Status, plan *runner.Plan, where string) (resume string, code int, ok bool) {
	fresh := runner.NewStatus(plan)
	switch {
	case prev == nil:
		return "", c.fail1(fmt.Errorf("no status in %s: there is no upgrade to roll back", where)), false
	case prev.Track != fresh.Track || prev.From != fresh.From || prev.To != fresh.To:
		return "", c.fail1(fmt.Errorf("%s holds the upgrade %s -> %s (%s), not %s -> %s: give its --from %s and --to %s to roll it back",
			where, prev.From, prev.To, prev.Phase, fresh.From, fresh.To, prev.From, prev.To)), false
	}
	reason, now := *c.rb.reason, time.Now()
	// Revert on a copy first: what it refuses is said before asking.
	switch err := runner.Revert(prev.DeepCopy(), reason, now); {
	case errors.Is(err, runner.ErrRolledBack):
		fmt.Fprintf(c.stderr, "%s -> %s in %s is rolled back to %s already: nothing to do\n", prev.From, prev.To, where, prev.From)
		return "", exitOK, false
	case err != nil:
		return "", c.fail1(fmt.Errorf("%s: cannot roll back %s -> %s: %w", where, prev.From, prev.To, err)), false
	}
	if !*c.rb.yes {
		fmt.Fprintf(c.stderr, "Roll back %s -> %s (%s, %d/%d components done) in %s to %s, through each hop's DAG, last hop first? [y/N] ",
			prev.From, prev.To, prev.Phase, prev.Progress.Done, prev.Progress.Total, where, prev.From)
		answer, _ := bufio.NewReader(c.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(c.stderr)
			return "", c.fail1(errors.New("not confirmed: nothing changed (pass --yes to skip the question)")), false
		}
	}
	resume = fmt.Sprintf("rolling back from %s (%s, %d/%d done, run %d): %s\n", where, prev.Phase, prev.Progress.Done, prev.Progress.Total, prev.Runs, reason)
	was := prev.Phase
	if err := runner.Revert(prev, reason, now); err != nil {
		return "", c.fail1(fmt.Errorf("%s: cannot roll back %s -> %s: %w", where, prev.From, prev.To, err)), false
	}
	c.rf.audit.write(auditRecord{Kind: "rollback", Phase: string(was), Reason: reason})
	return resume, 0, true
}

// rolledBack reports the end of a rollback: exit 0 once the status is
// RolledBack to where the upgrade started, as asked; 1 when the rollback
// failed, saying how to retry it. ok is false for any other end (an
// interrupt, a lost lease), which outcome reports as a run's.
func (c *cli) rolledBack(st *record.Status, err error) (int, bool) {
	switch {
	case c.name != "rollback" || st == nil:
		return 0, false
	case st.Phase == record.RolledBack && errors.Is(err, runner.ErrRolledBack):
		fmt.Fprintf(c.stderr, "rolled back %s -> %s to %s\n", st.From, st.To, st.From)
		return exitOK, true
	case st.Phase == record.RollbackFailed && errors.Is(err, runner.ErrRollbackFailed):
		c.errorf("%v; fix what failed, then run this hopdag rollback again to retry the rollback (what rolled back stays so), or abandon it with hopdag abandon --state %s\n", message(err), *c.state)
		return exitInvalid, true
	}
	return 0, false
}
