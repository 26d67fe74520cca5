//go:build !linux

package controlplane

import "os/exec"

// dieWithParent does nothing outside Linux: a test binary that ends
// without Stop leaves its processes running.
func dieWithParent(*exec.Cmd) {}
