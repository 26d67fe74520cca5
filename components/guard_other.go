//go:build !unix

package components

import (
	"context"
	"fmt"
	"os"
	"time"
)

// GuardSupported reports whether this system runs commands under the
// guard (WithGuard): not this one.
const GuardSupported = false

func guardMain([]string) int {
	fmt.Fprintln(os.Stderr, "hopdag exec guard: not supported on this system")
	return guardUsage
}

// WaitGuards does nothing here: without the guard there is nothing to
// wait for.
func WaitGuards(context.Context, string, time.Duration, func()) error { return nil }
