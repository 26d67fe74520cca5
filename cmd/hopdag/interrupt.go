package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// Interrupts. The first SIGINT or SIGTERM cancels the command's context:
// a run starts nothing new, its running components see ctx done (exec
// commands get SIGTERM, then SIGKILL after --grace), the status is saved,
// and hopdag exits with exitInterrupted. A second signal, or a stop that
// takes longer than the grace period plus killMargin, ends the process at
// once, also with exitInterrupted: what was running is recorded as Running
// and runs again on resume.

// killMargin is the time beyond the commands' grace period that hopdag
// gives itself to record the status after an interrupt.
const killMargin = 5 * time.Second

// defaultGrace is the grace period of commands without --grace.
const defaultGrace = 10 * time.Second

// interrupted is the cause of the context of a command stopped by a signal.
type interrupted struct{ sig os.Signal }

func (e *interrupted) Error() string { return "interrupted by " + signame(e.sig) }

// interruptedBy returns the signal that stopped ctx, or nil.
func interruptedBy(ctx context.Context) os.Signal {
	var e *interrupted
	if errors.As(context.Cause(ctx), &e) {
		return e.sig
	}
	return nil
}

func signame(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// guard runs cmd under a context that the first interrupt cancels.
func (c *cli) guard(ctx context.Context, cmd command) int {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	var wg sync.WaitGroup
	if c.signals != nil {
		wg.Go(func() { c.watchSignals(cancel, done) })
	}
	code := cmd.run(c, ctx)
	close(done)
	wg.Wait()
	return code
}

func (c *cli) grace() time.Duration {
	if c.rf != nil && *c.rf.grace > 0 {
		return *c.rf.grace
	}
	return defaultGrace
}

// executes reports whether the command runs a plan: run, rollback.
func (c *cli) executes() bool { return c.name == "run" || c.name == "rollback" }

// stopping says what the first interrupt does, at the moment it arrives:
// only a run whose plan the executor has (c.executing) has components to
// stop and a status to save; before that a run stops before it starts
// (waiting for the lock, say), and the other commands (status --watch)
// just stop. A second interrupt still ends any of them at once.
func (c *cli) stopping(limit time.Duration) string {
	switch {
	case c.executes() && c.executing.Load():
		return fmt.Sprintf("stopping; running components are told to stop and the status is saved; interrupt again within %s to kill at once", limit)
	case c.executes():
		return "stopping before the run starts: nothing runs yet, and the status is as it was"
	}
	return "stopping"
}

// watchSignals waits for an interrupt, cancels the command, and kills the
// process on a second one or when the stop outlasts the grace period. It
// returns when done is closed (the command returned).
func (c *cli) watchSignals(cancel context.CancelCauseFunc, done <-chan struct{}) {
	var sig os.Signal
	select {
	case sig = <-c.signals:
	case <-done:
		return
	}
	limit := c.grace() + killMargin
	c.auditSignal(sig, "stopping")
	c.say("hopdag %s: %s: %s\n", c.name, signame(sig), c.stopping(limit))
	cancel(&interrupted{sig})
	t := time.NewTimer(limit)
	defer t.Stop()
	var why string
	select {
	case <-done:
		return
	case sig = <-c.signals:
		why = "second " + signame(sig)
	case <-t.C:
		why = fmt.Sprintf("not stopped after %s", limit)
	}
	c.auditSignal(sig, "killed: "+why)
	then := ""
	if c.executing.Load() {
		then = "; components recorded as Running run again on resume"
	}
	c.say("hopdag %s: %s: exiting now%s\n", c.name, why, then)
	if c.rf != nil {
		// The exit the command's own return would have logged.
		c.rf.audit.exit(exitInterrupted)
	}
	if c.exit != nil {
		c.stopCommands()
		c.exit(exitInterrupted)
	}
}
