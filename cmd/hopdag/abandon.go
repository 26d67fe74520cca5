package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopdag/hopdag/record"
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

// abandon marks the run Abandoned, so that no run resumes it. It reads
// the status, asks (unless --yes), and only then takes the state's lock to
// write, however long the answer took: while a process holds the lock (a
// run in progress, or the unexpired lease of a killed one) it refuses,
// with or without --force, naming the holder and the lease's expiry
// (unlike run, which waits for a dead holder's lease: lockwait.go), before
// asking when the backend tells who holds the lock (state.LeaseReader),
// and after it otherwise or when a run took the lock meanwhile. Holding
// the lock, it reads the status again and abandons it only if it is still
// the one asked about. A status that says Running with the lock free
// belongs to a run that died or whose lease expired: that needs --force,
// because a paused process could still wake up (it would then be fenced
// off, but its operator should know).
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
		audit.cliText = c.cliMessage
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
	if lr, ok := b.lock.(state.LeaseReader); ok {
		// A lease that cannot be read is left to Acquire to judge.
		if v, err := readLease(ctx, lr); err == nil && v.held {
			return c.fail1(c.lockHeld(&state.LockedError{Holder: v.l.Holder, Token: v.l.Token, Expires: v.l.Expires}))
		}
	}
	st, err := b.load(ctx)
	if err != nil {
		return c.fail1(err)
	}
	if code, done := c.abandonable(st, b.where); done {
		return code
	}
	if !*af.yes {
		if code, ok := c.ask(ctx, fmt.Sprintf("Abandon %s -> %s (%s, %d/%d components done) in %s? It will never resume. [y/N] ",
			st.From, st.To, st.Phase, st.Progress.Done, st.Progress.Total, b.where)); !ok {
			return code
		}
	}
	lock := auditedLock{b.lock, audit}
	lease, err := lock.Acquire(ctx, holder("abandon"), leaseTTL)
	if le, ok := errors.AsType[*state.LockedError](err); ok {
		return c.fail1(c.lockHeld(le))
	}
	if err != nil {
		return c.fail1(fmt.Errorf("%s: %w", *c.state, err))
	}
	defer lock.Release(context.WithoutCancel(ctx), lease)
	now, err := b.load(ctx)
	if err != nil {
		return c.fail1(err)
	}
	if !sameStatus(st, now) {
		asked := "you confirmed"
		if *af.yes {
			asked = "it was read"
		}
		return c.fail1(fmt.Errorf("the status in %s changed since %s (a run wrote it meanwhile)%s: nothing was abandoned; run hopdag abandon --state %s again to see what it holds now",
			b.where, asked, statusNow(now), *c.state))
	}
	was := st.Phase
	if err := st.Abandon(*af.reason, time.Now()); err != nil {
		return c.fail1(err)
	}
	if err := b.store.Save(ctx, lease.Token, st); err != nil {
		return c.fail1(fmt.Errorf("%s: nothing was abandoned: %w", b.where, err))
	}
	audit.write(auditRecord{Kind: "abandon", Phase: string(was), Reason: *af.reason})
	fmt.Fprintf(c.stdout, "abandoned %s -> %s (was %s): %s\n", st.From, st.To, was, *af.reason)
	return exitOK
}

// abandonable says whether st, read from where, can be abandoned: when it
// cannot, done is set and code is the exit status, what to say said.
func (c *cli) abandonable(st *record.Status, where string) (code int, done bool) {
	switch {
	case st == nil:
		return c.fail1(fmt.Errorf("no status in %s: there is no run to abandon", where)), true
	case st.Phase == record.Abandoned:
		fmt.Fprintf(c.stdout, "%s -> %s was already abandoned: %s\n", st.From, st.To, st.Message)
		return exitOK, true
	case st.Phase == record.Succeeded:
		return c.fail1(fmt.Errorf("%s -> %s succeeded: there is nothing to abandon", st.From, st.To)), true
	case inFlight(st.Phase) && st.Phase != record.Pending && !*c.af.force:
		return c.fail1(fmt.Errorf("%s -> %s says %s but no process holds its lock: its run died or its lease expired; pass --force to abandon it anyway, or resume it with hopdag run", st.From, st.To, st.Phase)), true
	}
	return 0, false
}

// lockHeld is abandon's refusal of a lock le says is held.
func (c *cli) lockHeld(le *state.LockedError) error {
	return fmt.Errorf("%s: a process holds the lock: %s (%s); nothing was abandoned: stop that run first (interrupt it), then run hopdag abandon --state %s again; "+
		"a hopdag that was killed leaves its lease behind: the lock is free once the lease has expired plus a tenth of its TTL",
		*c.state, le.Holder, le.Error(), *c.state)
}

// sameStatus reports whether two reads of a status found the same record.
func sameStatus(a, b *record.Status) bool {
	if a == nil || b == nil {
		return a == b
	}
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}

// statusNow is ": it now says ..." of st, or "" for none.
func statusNow(st *record.Status) string {
	if st == nil {
		return ": it now holds none"
	}
	return fmt.Sprintf(": it now says %s -> %s %s, %d/%d components done, run %d", st.From, st.To, st.Phase, st.Progress.Done, st.Progress.Total, st.Runs)
}
