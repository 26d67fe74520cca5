package controlplane

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// startTimeout bounds Main's Start.
const startTimeout = 3 * time.Minute

// Main is a TestMain's body: it starts a control plane into *cp, runs the
// tests, stops it and returns the exit code for os.Exit:
//
//	func TestMain(m *testing.M) { os.Exit(controlplane.Main(m, &cp)) }
//
// Without a binary (see Missing), Main runs the tests with *cp nil, so
// that each skips (Need) saying what to run; under CI=true it fails
// instead, running no test. A control plane that does not start within 3
// minutes fails, printing the end of each log. When a test fails, the logs
// are kept and their directory printed. Main prints how long the start
// took (shown with go test -v).
func Main(m *testing.M, cp **ControlPlane, opts ...Option) int {
	if missing := Missing(); len(missing) > 0 {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "controlplane: CI=true and "+howTo(missing))
			return 1
		}
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	c, err := Start(ctx, opts...)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(os.Stderr, c)
	*cp = c
	code := m.Run()
	if code != 0 {
		c.keep = true
		fmt.Fprintln(os.Stderr, "controlplane: tests failed; logs kept in", c.dir)
	}
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Need skips t when c is nil because a binary is missing (Main then ran
// the tests without a control plane), saying what to run; and, once t
// has failed, logs the end of each process's log (Logs) when t ends.
func (c *ControlPlane) Need(t testing.TB) {
	t.Helper()
	if c == nil {
		if m := Missing(); len(m) > 0 {
			t.Skip(howTo(m))
		}
		t.Fatal("controlplane: Need on a nil *ControlPlane: start it with controlplane.Main in TestMain")
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.Logs(30))
		}
	})
}
