//go:build unix

package components

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"
)

// GuardSupported reports whether this system runs commands under the
// guard (WithGuard).
const GuardSupported = true

// killWait is how long WaitGuards waits for the lock after SIGKILL: the
// kernel frees it as the last holder's descriptors close.
const killWait = 5 * time.Second

// openGuard opens lock and takes a shared lock on it, for a command to
// inherit (WithGuard). The caller closes it once the command started:
// the lock then lives in the command's processes alone.
func openGuard(lock string) (*os.File, error) {
	f, err := os.OpenFile(lock, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("guard lock: %w", err)
	}
	// Blocks only while a WaitGuards tries its exclusive lock, a moment.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("guard lock %s: %w", lock, err)
	}
	return f, nil
}

// WaitGuards stops the commands that a dead coordinator on this machine
// left running under the guard's lock (see WithGuard), and returns once
// none holds it: the next attempt overlaps nothing of theirs. Call it
// holding the run's lock (the state's lease), before anything runs: a
// coordinator that still holds the lease is alive, and its commands are
// its own to stop.
//
// When the lock is free it returns at once. Otherwise it calls say (when
// not nil) once, sends SIGTERM to every process that holds the lock and
// to its process group, gives them timeout (pass the commands' grace
// period) to exit, then sends SIGKILL to whatever holds it then and to
// those groups, and waits up to five seconds more. Once the lock is
// free it also kills what is left in those groups (a process that
// closed the lock's descriptor), as Exec does when a command exits. It
// fails, naming the processes, when they still hold the lock, or when
// ctx ends. Processes are found through /proc (Linux); elsewhere
// WaitGuards only waits, up to timeout and five seconds.
//
// With timeout 0 it kills at once: a coordinator that exits without
// waiting for its commands (a second interrupt) calls it to take them
// with it.
func WaitGuards(ctx context.Context, lock string, timeout time.Duration, say func()) error {
	f, err := os.OpenFile(lock, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("components: guard lock: %w", err)
	}
	defer f.Close()
	free, err := tryExclusive(f, lock)
	if err != nil || free {
		return err
	}
	if say != nil {
		say()
	}
	groups := map[int]bool{}
	signalHolders(f, groups, syscall.SIGTERM)
	killAt := time.Now().Add(timeout)
	var giveUp time.Time
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-poll.C:
		}
		free, err := tryExclusive(f, lock)
		if err != nil {
			return err
		}
		if free {
			signalGroups(groups, syscall.SIGKILL)
			return nil
		}
		now := time.Now()
		switch {
		case giveUp.IsZero() && !now.Before(killAt):
			signalHolders(f, groups, syscall.SIGKILL)
			giveUp = now.Add(killWait)
		case !giveUp.IsZero() && now.After(giveUp):
			return stillHeld(f, lock, timeout)
		}
	}
}

// tryExclusive reports whether f's lock is free, taking and releasing it.
func tryExclusive(f *os.File, lock string) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return true, syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return false, fmt.Errorf("components: guard lock %s: %w", lock, err)
}

// signalHolders sends sig to every process that holds f's file open and
// to its process group, adding the groups to groups. This process and its
// own group are never signalled.
func signalHolders(f *os.File, groups map[int]bool, sig syscall.Signal) {
	pids, _ := holders(f)
	self := syscall.Getpgrp()
	for _, pid := range pids {
		if g, err := syscall.Getpgid(pid); err == nil && g > 1 && g != self {
			groups[g] = true
		}
		_ = syscall.Kill(pid, sig)
	}
	signalGroups(groups, sig)
}

// signalGroups sends sig to each process group of groups.
func signalGroups(groups map[int]bool, sig syscall.Signal) {
	for g := range groups {
		_ = syscall.Kill(-g, sig)
	}
}

// stillHeld is WaitGuards' error when the lock outlived SIGKILL: what,
// which processes (when they can be found), and what to do.
func stillHeld(f *os.File, lock string, timeout time.Duration) error {
	pids, found := holders(f)
	if !found {
		return fmt.Errorf("components: commands of an earlier run are still running %s after it was found dead (%s is locked): stop them, then run again", timeout+killWait, lock)
	}
	if len(pids) == 0 {
		return fmt.Errorf("components: commands of an earlier run still hold %s after SIGTERM, %s and SIGKILL, and no process this user can see holds it (another user's?): stop them (fuser -k %s as root), then run again", lock, timeout, lock)
	}
	slices.Sort(pids)
	return fmt.Errorf("components: commands of an earlier run still hold %s after SIGTERM, %s and SIGKILL (processes %v, in uninterruptible sleep?): stop them (kill -9), then run again", lock, timeout, pids)
}
