package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/runner"
)

// execRunner is the runner of exec components: the exec runner with every
// command under its guard (components.WithGuard), so that the command, and
// every process it started, dies with this hopdag however it dies, after
// a SIGTERM and the grace period. main runs the guard (components.RunGuard)
// when hopdag is started as one; in tests, the test binary's TestMain
// does. Without the guard TestAbandon (no SIGTERM: the killed run's command
// never says it stopped) and TestSecondInterruptKillsAtOnce (the command's
// child outlives hopdag) fail.
func (c *cli) execRunner(values map[string]any) (runner.Runner, error) {
	return components.NewExec(components.WithGracePeriod(c.grace()), components.WithExecValues(values),
		components.WithGuard(c.commandsLock())), nil
}

// commandsLock is the file the guards of a run's commands hold a shared
// lock on (components.WithGuard): one per --state, in the temporary
// directory, so that it works for every backend on this machine (a run on
// another machine waits for the lease of a dead one to expire, which
// outlasts the grace period). A run waits for it (components.WaitGuards)
// before it starts.
func (c *cli) commandsLock() string {
	if *c.state == "" {
		return ""
	}
	spec := *c.state
	if !strings.Contains(spec, "://") {
		if abs, err := filepath.Abs(spec); err == nil {
			spec = abs
		}
	}
	sum := sha256.Sum256([]byte(spec))
	return filepath.Join(os.TempDir(), "hopdag-commands-"+hex.EncodeToString(sum[:8])+".lock")
}
