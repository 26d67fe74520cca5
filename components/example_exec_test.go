//go:build unix

package components_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// Exec runs a component's command: an argv whose arguments are templates,
// never a shell string. A failure reports the exit code and the last lines
// of stderr.
func ExampleExec() {
	x := components.NewExec(
		components.WithExecValues(map[string]any{"mirror": "mirror.local"}),
		components.WithOutput(os.Stdout, os.Stdout),
	)
	cv := &release.ComponentVersion{Name: "containerd", Version: release.MustParseVersion("v2.1.3"), Type: release.TypeExec,
		Command: &release.Command{Args: []string{"echo", "upgrade", "{{ .Component.Name }}", "--to", "{{ .Component.Version }}", "--registry", "{{ .Values.mirror }}"}}}
	fmt.Println(x.Validate(cv))
	fmt.Println(x.Run(context.Background(), runner.Task{Component: cv.Name, To: cv}))

	failing := &release.ComponentVersion{Name: "containerd", Version: release.MustParseVersion("v2.1.3"), Type: release.TypeExec,
		Command: &release.Command{Args: []string{"/bin/sh", "-c", "echo config.toml: version 3 not supported >&2; exit 3"}}}
	err := components.NewExec().Run(context.Background(), runner.Task{Component: failing.Name, To: failing})
	fmt.Println(err)
	if ee, ok := errors.AsType[*components.ExitError](err); ok {
		fmt.Println("exit code:", ee.Code)
	}
	// Output:
	// <nil>
	// upgrade containerd --to v2.1.3 --registry mirror.local
	// <nil>
	// components: containerd v2.1.3: exec: /bin/sh: exit code 3; last lines of stderr:
	// 	config.toml: version 3 not supported
	// exit code: 3
}

// WithGuard makes every process of a command hold a lock file, so that a
// coordinator resuming the run after its predecessor was killed stops and
// waits for whatever of the old commands still runs before it starts
// anything (WaitGuards, with the same lock file): an attempt never
// overlaps an earlier one.
func ExampleWithGuard() {
	lock := os.TempDir() + "/hopdag-example-commands.lock"
	if err := components.WaitGuards(context.Background(), lock, 15*time.Second, func() {
		fmt.Println("waiting for the commands of an earlier run to exit")
	}); err != nil {
		fmt.Println(err)
		return
	}
	x := components.NewExec(components.WithGuard(lock), components.WithOutput(os.Stdout, os.Stdout))
	cv := &release.ComponentVersion{Name: "kubelet", Version: release.MustParseVersion("v1.34.1"), Type: release.TypeExec,
		Command: &release.Command{Args: []string{"/bin/sh", "-c", "sleep 0.01 & wait; echo drained node-1"}}}
	fmt.Println(x.Run(context.Background(), runner.Task{Component: cv.Name, To: cv}))
	// Output:
	// drained node-1
	// <nil>
}
