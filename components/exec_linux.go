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
// kernel to SIGKILL it when this process dies (the parent-death signal),
// so that a coordinator killed with SIGKILL does not leave its command
// running for the next coordinator to start again. (The signal follows the
// thread that started the child; Go keeps its threads for the life of the
// process unless a goroutine locked to one exits.)
func newProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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
