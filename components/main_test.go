package components_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hopdag/hopdag/components"
)

// envCoordinator makes the test binary a coordinator process that runs
// one exec command (coordinatorMain), for tests that kill it.
const envCoordinator = "HOPDAG_TEST_COORDINATOR"

// TestMain runs a coordinator when asked; otherwise the tests, failing
// them if a goroutine outlives them: a runner must not leave pipe
// readers, process waiters or pollers behind.
func TestMain(m *testing.M) {
	if dir := os.Getenv(envCoordinator); dir != "" {
		os.Exit(coordinatorMain(dir, os.Getenv("HOPDAG_TEST_GUARD") == "1"))
	}
	goleak.VerifyTestMain(m)
}

// coordinatorMain runs dir/upgrade.sh in dir through Exec, under the
// guard (with dir/commands.lock) if guard, with a 3s grace period.
func coordinatorMain(dir string, guard bool) int {
	opts := []components.ExecOption{components.WithGracePeriod(3 * time.Second)}
	if guard {
		opts = append(opts, components.WithGuard(filepath.Join(dir, "commands.lock")))
	}
	cv := execCV("app", "v1.0.0", filepath.Join(dir, "upgrade.sh"))
	cv.Command.Dir = dir
	if err := components.NewExec(opts...).Run(context.Background(), task(nil, cv, nil)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
