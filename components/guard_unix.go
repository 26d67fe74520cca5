//go:build unix

package components

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// GuardSupported reports whether this system runs commands under the
// guard (WithGuard).
const GuardSupported = true

// guardMain is the guard: `PROGRAM-OF-THIS GuardArg GRACE LOCK PID PROGRAM
// ARGS...`. Exec starts it as the leader of the command's process group;
// it runs PROGRAM and exits as PROGRAM does. When the coordinator (PID)
// dies, the guard sends SIGTERM to its process group, waits up to GRACE
// for PROGRAM to exit, then sends SIGKILL to the group.
//
// It learns of the coordinator's death from its parent-death signal
// (Linux: Exec sets SIGKILL, which would kill the guard and leave the
// group running; the guard replaces it with SIGHUP) and, everywhere, by
// checking every tenth of a second that its parent is still PID. PID, not
// the parent the guard finds when it starts, because the coordinator may
// die before then: the guard then exits without running PROGRAM.
//
// It holds a shared flock on LOCK (when not "") for as long as it lives,
// for WaitGuards. SIGTERM and SIGINT sent to the group (Exec stopping the
// command) reach PROGRAM directly; the guard waits for PROGRAM rather
// than dying first, so that PROGRAM keeps its grace period.
func guardMain(args []string) int {
	grace, lockPath, parent, prog, err := parseGuard(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hopdag exec guard: %v\n", err)
		return guardUsage
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := replaceParentDeathSignal(); err != nil {
		fmt.Fprintf(os.Stderr, "hopdag exec guard: %v\n", err)
		return guardUsage
	}
	if os.Getppid() != parent {
		fmt.Fprintf(os.Stderr, "hopdag exec guard: the coordinator (pid %d) exited before the command started; not starting it\n", parent)
		return guardGone
	}
	if lockPath != "" {
		// Opened close-on-exec: PROGRAM does not inherit it.
		lock, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "hopdag exec guard: %v\n", err)
			return guardUsage
		}
		defer lock.Close()
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_SH); err != nil {
			fmt.Fprintf(os.Stderr, "hopdag exec guard: lock %s: %v\n", lockPath, err)
			return guardUsage
		}
	}
	cmd := exec.Command(prog[0], prog[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "hopdag exec guard: %v\n", err)
		return 127 // as a shell says "command not found"
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-exited:
			return exitCodeOf(cmd.ProcessState)
		case <-signals:
			// The group got it (PROGRAM decides; keep waiting for it), or
			// the parent-death signal: see whether the coordinator is gone.
		case <-tick.C:
		}
		if os.Getppid() == parent {
			continue
		}
		// The coordinator is gone: stop the command, then the whole group.
		_ = syscall.Kill(0, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(grace):
		}
		_ = syscall.Kill(0, syscall.SIGKILL)
		<-exited
		return exitCodeOf(cmd.ProcessState)
	}
}

// exitCodeOf is a shell's view of how a process ended: its exit code, or
// 128 plus the signal that killed it.
func exitCodeOf(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// WaitGuards waits until no guard holds lock (see WithGuard): the
// commands of a killed coordinator on this machine are gone. It calls say
// once if it has to wait, and fails after timeout (pass at least the
// grace period, plus a margin) with an error that says what to do.
func WaitGuards(ctx context.Context, lock string, timeout time.Duration, say func()) error {
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	deadline := time.Now().Add(timeout)
	for said := false; ; {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("lock %s: %w", lock, err)
		}
		if !said && say != nil {
			say()
			said = true
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("commands of an earlier run are still running after %s (%s is locked): stop them, then run again", timeout, lock)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
