//go:build unix && !linux

package components

import (
	"os/exec"
	"syscall"
)

// newProcessGroup makes the child lead a new process group, whose id is its
// pid, so that its descendants can be signalled with it. These systems
// have no parent-death signal: a coordinator killed with SIGKILL leaves
// its command running; under the guard (WithGuard) the next coordinator
// waits for it (WaitGuards), and a supervisor that kills the
// coordinator's process tree (launchd, a jail's or container's init)
// stops it.
func newProcessGroup(cmd *exec.Cmd, _ bool) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// reaper reports false: orphans are reparented to init here.
func reaper() bool { return false }
