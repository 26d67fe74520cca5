// Package cputime measures the CPU time this process has used, for tests
// that bound the cost of an algorithm: unlike the wall clock, it does not
// grow when other processes load the machine (CI runs on 2 shared cores).
package cputime

import (
	"syscall"
	"time"
)

// Self returns the user and system CPU time the process has used so far
// (every thread, the garbage collector's too), or 0 where getrusage is
// not available.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Of runs f and returns the CPU time the process used meanwhile. Run
// nothing else in the process at the same time (no parallel tests) when
// the figure bounds f alone.
func Of(f func()) time.Duration {
	start := Self()
	f()
	return Self() - start
}
