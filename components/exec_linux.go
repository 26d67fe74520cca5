//go:build linux

package components

import (
	"os"
	"os/exec"
	"syscall"
	"unsafe"
)

// newProcessGroup makes the child lead a new process group, whose id is its
// pid, so that its descendants can be signalled with it, and asks the
// kernel to signal it when this process dies (the parent-death signal),
// so that a coordinator killed with SIGKILL does not leave its command
// running for the next coordinator to start again: SIGTERM under the
// guard (the command may clean up; WaitGuards stops what is left before
// the next attempt), SIGKILL otherwise (nothing would stop a command that
// ignores SIGTERM). The signal follows the thread that started the child:
// see start.
func newProcessGroup(cmd *exec.Cmd, guarded bool) {
	sig := syscall.SIGKILL
	if guarded {
		sig = syscall.SIGTERM
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
}

// reaper reports whether orphaned descendants of this process's children
// are reparented to it: it is PID 1 (of its PID namespace: a container's
// init) or a child subreaper (PR_SET_CHILD_SUBREAPER). Then they are this
// process's to reap.
func reaper() bool {
	if os.Getpid() == 1 {
		return true
	}
	const prGetChildSubreaper = 37
	var v int32
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetChildSubreaper, uintptr(unsafe.Pointer(&v)), 0)
	return errno == 0 && v != 0
}
