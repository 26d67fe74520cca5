package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// abandonFlags are the flags of hopdag abandon.
type abandonFlags struct {
	yes     *bool
	force   *bool
	reason  *string
	logFile *string
}

func (c *cli) abandonFlags() {
	c.state = c.fs.String("state", "", "where the run's status lives: a directory, etcd://host:port/prefix or kube://namespace/name (required)")
	c.af = &abandonFlags{
		yes:     c.fs.Bool("yes", false, "do not ask for confirmation"),
		force:   c.fs.Bool("force", false, "abandon a run whose status says Running although no process holds its lock (it crashed, or its lease expired)"),
		reason:  c.fs.String("reason", "abandoned from the command line", "why, recorded in the status"),
		logFile: c.fs.String("log-file", "", "append the abandon to this audit log (see hopdag run --log-file)"),
	}
	c.kubeFlags()
}

// abandon marks the run Abandoned, so that no run resumes it. It takes the
// state's lock to write: while a process holds it (a run in progress, or
// the unexpired lease of a killed one) it refuses at once, with or without
// --force, naming the holder and the lease's expiry (unlike run, which
// waits for a dead holder's lease: lockwait.go). A status that says Running with the
// lock free belongs to a run that died or whose lease expired: that needs
// --force, because a paused process could still wake up (it would then be
// fenced off, but its operator should know).
func (c *cli) abandon(ctx context.Context) (code int) {
	af := c.af
	if *c.state == "" {
		return c.usageError("--state is required")
	}
	var audit *auditLog
	if *af.logFile != "" {
		var err error
		if audit, err = openAudit(*af.logFile); err != nil {
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
	lock := auditedLock{b.lock, audit}
	lease, err := lock.Acquire(ctx, holder("abandon"), leaseTTL)
	if le, ok := errors.AsType[*state.LockedError](err); ok {
		return c.fail1(fmt.Errorf("%s: a process holds the lock: %s (%s); stop that run first (interrupt it), abandon refuses while the lock is held; "+
			"a hopdag that was killed leaves its lease behind: the lock is free once the lease has expired plus a tenth of its TTL, abandon then", *c.state, le.Holder, le.Error()))
	}
	if err != nil {
		return c.fail1(fmt.Errorf("%s: %w", *c.state, err))
	}
	defer lock.Release(context.WithoutCancel(ctx), lease)
	st, err := b.load(ctx)
	if err != nil {
		return c.fail1(err)
	}
	switch {
	case st == nil:
		return c.fail1(fmt.Errorf("no status in %s: there is no run to abandon", b.where))
	case st.Phase == runner.Abandoned:
		fmt.Fprintf(c.stdout, "%s -> %s was already abandoned: %s\n", st.From, st.To, st.Message)
		return exitOK
	case st.Phase == runner.Succeeded:
		return c.fail1(fmt.Errorf("%s -> %s succeeded: there is nothing to abandon", st.From, st.To))
	case inFlight(st.Phase) && st.Phase != runner.Pending && !*af.force:
		return c.fail1(fmt.Errorf("%s -> %s says %s but no process holds its lock: its run died or its lease expired; pass --force to abandon it anyway, or resume it with hopdag run", st.From, st.To, st.Phase))
	}
	if !*af.yes {
		fmt.Fprintf(c.stderr, "Abandon %s -> %s (%s, %d/%d components done) in %s? It will never resume. [y/N] ",
			st.From, st.To, st.Phase, st.Progress.Done, st.Progress.Total, b.where)
		answer, _ := bufio.NewReader(c.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(c.stderr)
			return c.fail1(errors.New("not confirmed: nothing changed (pass --yes to skip the question)"))
		}
	}
	was := st.Phase
	if err := st.Abandon(*af.reason, time.Now()); err != nil {
		return c.fail1(err)
	}
	if err := b.store.Save(ctx, lease.Token, st); err != nil {
		return c.fail1(fmt.Errorf("%s: %w", b.where, err))
	}
	audit.write(auditRecord{Kind: "abandon", Phase: string(was), Reason: *af.reason})
	fmt.Fprintf(c.stdout, "abandoned %s -> %s (was %s): %s\n", st.From, st.To, was, *af.reason)
	return exitOK
}
