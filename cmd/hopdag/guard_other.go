//go:build !unix

package main

import (
	"context"
	"fmt"
	"os"
	"time"
)

// guard is not available here: commands run without it (see guard_unix.go).
func guard([]string) int {
	fmt.Fprintln(os.Stderr, "hopdag "+guardCommand+": not supported on this system")
	return exitUsage
}

const guardSupported = false

// waitCommands does nothing: without the guard there is nothing to wait for.
func waitCommands(context.Context, string, time.Duration, func()) error { return nil }
