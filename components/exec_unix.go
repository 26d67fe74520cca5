//go:build unix

package components

import (
	"errors"
	"os"
	"syscall"
)

// group is the process group a child leads. reaps says this process
// reaps the group's orphans (it is PID 1 or a subreaper).
type group struct {
	leader *os.Process
	reaps  bool
}

// terminate sends SIGTERM to every process of the group.
func (g group) terminate() { _ = syscall.Kill(-g.leader.Pid, syscall.SIGTERM) }

// kill sends SIGKILL to every process of the group.
func (g group) kill() { _ = syscall.Kill(-g.leader.Pid, syscall.SIGKILL) }

// alive reports whether a process of the group exists (an exited process
// that its parent has not reaped yet counts). Call it only once the
// leader was waited for: when this process is the reaper of the group's
// orphans (see reaper), it reaps those that exited first, so that a
// zombie never counts as alive.
func (g group) alive() bool {
	if g.reaps {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-g.leader.Pid, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
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
