//go:build !unix

package components

import (
	"os"
	"os/exec"
)

// Without process groups, only the child itself is stopped.

func newProcessGroup(*exec.Cmd, bool) {}

type group struct {
	leader *os.Process
	reaps  bool
}

func reaper() bool { return false }

func (g group) terminate() { _ = g.leader.Kill() }

func (g group) kill() { _ = g.leader.Kill() }

func (g group) alive() bool { return false }

func signalOf(*os.ProcessState) string { return "" }
