//go:build unix && !linux

package components

import (
	"os/exec"
	"syscall"
)

// newProcessGroup makes the child lead a new process group, whose id is its
// pid, so that its descendants can be signalled with it. These systems
// have no parent-death signal: a coordinator killed with SIGKILL leaves
// its command running unless the command runs under the guard
// (WithGuard, which polls its parent), or the coordinator runs under a
// supervisor that kills its process tree (launchd, a jail's or
// container's init).
func newProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// reaper reports false: orphans are reparented to init here.
func reaper() bool { return false }
