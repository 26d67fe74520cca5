//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// guard is `hopdag __exec-guard GRACE LOCK PID PROGRAM ARGS...`: hopdag
// (process PID) runs every exec component's command under it (see
// guarded), as the leader of the process group the exec runner makes for
// the command. It runs PROGRAM and exits as it does. When hopdag dies (a
// SIGKILL, a crash), the guard sends SIGTERM to its process group, waits
// up to GRACE for PROGRAM to exit, then sends SIGKILL to the group. So a
// killed hopdag leaves no command, nor any child of one, running behind
// it that the resumed run would start a second time.
//
// The guard learns of hopdag's death from its parent-death signal (Linux:
// the exec runner sets SIGKILL, which would kill the guard and leave the
// group running; the guard replaces it with SIGHUP) and, everywhere, by
// checking every tenth of a second that its parent is still PID. PID, not
// the parent the guard finds when it starts, because hopdag may die
// before then: the guard then exits without running PROGRAM.
//
// The guard holds a shared flock on LOCK (commandsLock of the run's state)
// for as long as it lives; a hopdag about to run takes it exclusively
// first (waitCommands), so it waits for the guards, and thus the commands,
// of a killed predecessor to be gone.
//
// SIGTERM and SIGINT sent to the group (the exec runner stopping the
// command) reach PROGRAM directly; the guard itself waits for PROGRAM
// rather than dying first, so that PROGRAM keeps its grace period.
func guard(args []string) int {
	if len(args) < 4 {
		fmt.Fprintln(os.Stderr, "hopdag "+guardCommand+": want GRACE LOCK PID PROGRAM [ARGS...]")
		return exitUsage
	}
	grace, err := time.ParseDuration(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "hopdag %s: %v\n", guardCommand, err)
		return exitUsage
	}
	parent, err := strconv.Atoi(args[2])
	if err != nil {
		fmt.Fprintf(os.Stderr, "hopdag %s: PID: %v\n", guardCommand, err)
		return exitUsage
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := replaceParentDeathSignal(); err != nil {
		fmt.Fprintf(os.Stderr, "hopdag %s: %v\n", guardCommand, err)
		return exitUsage
	}
	if os.Getppid() != parent {
		fmt.Fprintf(os.Stderr, "hopdag %s: hopdag (pid %d) exited before the command started; not starting it\n", guardCommand, parent)
		return exitInterrupted
	}
	if args[1] != "" {
		// Opened close-on-exec: PROGRAM does not inherit it.
		lock, err := os.OpenFile(args[1], os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "hopdag %s: %v\n", guardCommand, err)
			return exitUsage
		}
		defer lock.Close()
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_SH); err != nil {
			fmt.Fprintf(os.Stderr, "hopdag %s: lock %s: %v\n", guardCommand, args[1], err)
			return exitUsage
		}
	}
	cmd := exec.Command(args[3], args[4:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "hopdag: %v\n", err)
		return 127 // as a shell says "command not found"
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-exited:
			return exitCodeOf(cmd.ProcessState)
		case <-signals:
			// The group got it (PROGRAM decides; keep waiting for it), or
			// the parent-death signal: see whether hopdag is gone.
		case <-tick.C:
		}
		if os.Getppid() == parent {
			continue
		}
		// hopdag is gone: stop the command, then the whole group.
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

// guardSupported: this system runs commands under the guard.
const guardSupported = true

// waitCommands waits until no guard holds lock, for at most timeout,
// telling the user once when it has to wait.
func waitCommands(ctx context.Context, path string, timeout time.Duration, say func()) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
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
			return fmt.Errorf("lock %s: %w", path, err)
		}
		if !said {
			say()
			said = true
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("commands of an earlier run are still running after %s (%s is locked): stop them, then run again", timeout, path)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
