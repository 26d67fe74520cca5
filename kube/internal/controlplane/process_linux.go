//go:build linux

package controlplane

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel SIGKILL the process when the test binary
// ends without Stop (a test that panics skips TestMain's end). Strictly,
// when the OS thread that started it ends: the Go runtime ends a thread
// only when a goroutine locked to it returns, which start never does.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
