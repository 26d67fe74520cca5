//go:build linux

package components

import (
	"os"
	"syscall"
)

// pdeathErr is the error of replacing the guard's parent-death signal.
var pdeathErr error

// The parent-death signal is a setting of each thread, and the kernel
// sends every one that is set when the parent dies: Exec's SIGKILL is the
// setting of the guard's main thread, the one that exec'd (the runtime's
// other threads start without one). Go runs init functions on the main
// thread, so this is where the guard replaces it with SIGHUP.
func init() {
	if len(os.Args) > 1 && os.Args[1] == GuardArg {
		pdeathErr = setPdeathsig(syscall.SIGHUP)
	}
}

// replaceParentDeathSignal returns the error of init's replacing Exec's
// SIGKILL parent-death signal, which the guard could not outlive to stop
// its process group, with SIGHUP.
func replaceParentDeathSignal() error { return pdeathErr }

func setPdeathsig(sig syscall.Signal) error {
	const prSetPdeathsig = 1
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetPdeathsig, uintptr(sig), 0); errno != 0 {
		return errno
	}
	return nil
}
