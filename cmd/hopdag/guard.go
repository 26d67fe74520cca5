package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// guardCommand is the hidden command that runs one exec component's
// command (guard_unix.go). It is not listed in the usage.
const guardCommand = "__exec-guard"

// guarded runs exec components through the exec runner with their command
// put under the guard: `SELF __exec-guard GRACE LOCK PID ARGS...`, so that
// the command, and every process it started, dies with this hopdag (PID).
// Errors name SELF as the program.
//
// Why a guard as well as the exec runner's own lifecycle: the exec runner
// asks the kernel for a parent-death signal (Linux), which reaches only
// the process it started, at once and with SIGKILL. A command's children
// (step.sh's sleep, a shell pipeline, a daemon it spawned) outlive it, and
// the command gets no grace period to clean up. The guard is that process
// instead: it turns its own parent-death signal into a SIGTERM of the
// whole process group, then SIGKILL after the grace period, and holds the
// commands lock (commandsLock) until the group is gone, so that the
// resumed run never starts a command while its predecessor's copy still
// runs. Without it TestAbandon (no SIGTERM: the killed run's command never
// says it stopped) and TestSecondInterruptKillsAtOnce (the command's child
// outlives hopdag) fail.
type guarded struct {
	exec  *components.Exec
	self  string
	grace time.Duration
	// lock is the run's commandsLock, "" without --state.
	lock string
}

func (g guarded) Run(ctx context.Context, t runner.Task) error {
	// A program looked up in PATH that is not there fails for good, as the
	// exec runner says without the guard (which would exit 127).
	if cv := t.To; cv != nil && cv.Command != nil && len(cv.Command.Args) > 0 {
		if prog := cv.Command.Args[0]; !strings.ContainsAny(prog, "/{") {
			if _, err := exec.LookPath(prog); err != nil {
				return runner.Permanent(&components.Error{Component: cv.Name, Version: cv.Version.Original(), Op: "exec", Err: err})
			}
		}
	}
	t.To = g.wrap(t.To)
	return g.exec.Run(ctx, t)
}

func (g guarded) Validate(cv *release.ComponentVersion) error { return g.exec.Validate(g.wrap(cv)) }

// Rollback runs the component's rollback command (spec.rollback) under
// the guard too, so runner.Rollback policies work from the command line.
func (g guarded) Rollback(ctx context.Context, t runner.Task) error {
	t.To = g.wrap(t.To)
	return g.exec.Rollback(ctx, t)
}

// ValidateRollback is the exec runner's: the rollback command is declared
// and renders.
func (g guarded) ValidateRollback(cv *release.ComponentVersion) error {
	return g.exec.ValidateRollback(g.wrap(cv))
}

// wrap returns cv with its command and its rollback command run by the
// guard.
func (g guarded) wrap(cv *release.ComponentVersion) *release.ComponentVersion {
	if cv == nil {
		return cv
	}
	guard := func(c *release.Command) bool { return c != nil && len(c.Args) > 0 }
	if !guard(cv.Command) && !guard(cv.Rollback) {
		return cv
	}
	out := cv.DeepCopy()
	for _, c := range []*release.Command{out.Command, out.Rollback} {
		if guard(c) {
			c.Args = append([]string{g.self, guardCommand, g.grace.String(), g.lock, strconv.Itoa(os.Getpid())}, c.Args...)
		}
	}
	return out
}

// execRunner is the runner of exec components: the exec runner, under the
// guard where the system has one.
func (c *cli) execRunner(values map[string]any) (runner.Runner, error) {
	x := components.NewExec(components.WithGracePeriod(c.grace()), components.WithExecValues(values))
	if !guardSupported {
		return x, nil
	}
	// In tests this is the test binary, whose TestMain runs the guard.
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return guarded{exec: x, self: self, grace: c.grace(), lock: c.commandsLock()}, nil
}

// commandsLock is the file the guards of a run's commands hold a shared
// lock on: one per --state, in the temporary directory, so that it works
// for every backend on this machine (a run on another machine waits for
// the lease of a dead one to expire, which outlasts the grace period).
func (c *cli) commandsLock() string {
	if *c.state == "" {
		return ""
	}
	spec := *c.state
	if !strings.Contains(spec, "://") {
		if abs, err := filepath.Abs(spec); err == nil {
			spec = abs
		}
	}
	sum := sha256.Sum256([]byte(spec))
	return filepath.Join(os.TempDir(), "hopdag-commands-"+hex.EncodeToString(sum[:8])+".lock")
}
