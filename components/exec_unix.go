//go:build unix

package components

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// newProcessGroup makes the child lead a new process group, whose id is its
// pid, so that its descendants can be signalled with it.
func newProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// group is the process group a child leads.
type group struct{ leader *os.Process }

// terminate sends SIGTERM to every process of the group.
func (g group) terminate() { _ = syscall.Kill(-g.leader.Pid, syscall.SIGTERM) }

// kill sends SIGKILL to every process of the group.
func (g group) kill() { _ = syscall.Kill(-g.leader.Pid, syscall.SIGKILL) }

// alive reports whether a process of the group exists (an exited process
// that its parent has not reaped yet counts).
func (g group) alive() bool {
	err := syscall.Kill(-g.leader.Pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// signalOf names the signal that killed the process, "" if none.
func signalOf(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}
