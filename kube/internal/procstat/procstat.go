// Package procstat reads this process's peak resident set and CPU time,
// for the benchmarks and tests of the kube module that report memory or
// CPU (the operator's walk-through, the fleet rollout benchmark).
package procstat

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PeakRSS is the process's peak resident set in bytes (Linux: VmHWM of
// /proc/self/status), since it started or since the last ResetPeakRSS;
// 0 where it cannot be read.
func PeakRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	return vmHWM(bufio.NewScanner(f))
}

// vmHWM is the VmHWM line of a status file, in bytes (0: none).
func vmHWM(sc *bufio.Scanner) uint64 {
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// ResetPeakRSS starts PeakRSS afresh (Linux: clear_refs 5); elsewhere it
// does nothing.
func ResetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// CPU is the CPU time this process has used so far, user and system,
// all its threads; 0 where it cannot be read.
func CPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
