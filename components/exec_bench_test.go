//go:build linux

package components_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hopdag/hopdag/components"
)

// BenchmarkExecOverhead runs /bin/true through the exec runner under the
// guard, as hopdag run runs commands, and through plain os/exec, one of
// each per iteration in the same run, and reports:
//   - x-bare: the runner's time over plain os/exec's (target: at most 1.5);
//   - guard-rss-MiB: the peak resident set (VmHWM) of the process between
//     this one and a command, read by a command from /proc/$PPID: the
//     guard's when a guard process runs each command, 0 when the command
//     is this process's own child (target: at most 16). Getrusage's
//     RUSAGE_CHILDREN cannot tell: a child started with vfork, as Go
//     starts them, counts this process's resident set as its own.
func BenchmarkExecOverhead(b *testing.B) {
	x := components.NewExec(components.WithGuard(filepath.Join(b.TempDir(), "commands.lock")))
	t := task(nil, execCV("noop", "v1.0.0", "/bin/true"), nil)
	ctx := context.Background()
	var inRunner, bare time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if err := x.Run(ctx, t); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		inRunner += mid.Sub(start)
		bare += time.Since(mid)
	}
	b.ReportMetric(float64(inRunner)/float64(bare), "x-bare")
	b.ReportMetric(guardRSS(b), "guard-rss-MiB")
}

// guardRSS runs a command under the guard that prints its parent's pid and peak
// resident set, and returns that in MiB, or 0 when the parent is this
// process.
func guardRSS(b *testing.B) float64 {
	var out bytes.Buffer // written by Run's reader, read after Run returned
	cv := execCV("rss", "v1.0.0", "/bin/sh", "-c", `echo $PPID $(grep VmHWM /proc/$PPID/status)`)
	if err := components.NewExec(components.WithGuard(filepath.Join(b.TempDir(), "rss.lock")), components.WithOutput(&out, nil)).
		Run(context.Background(), task(nil, cv, nil)); err != nil {
		b.Fatal(err)
	}
	var (
		ppid, kib int
		unit      string
	)
	if _, err := fmt.Sscanf(out.String(), "%d VmHWM: %d %s", &ppid, &kib, &unit); err != nil || unit != "kB" {
		b.Fatalf("the command printed %q, want PPID VmHWM: N kB (%v)", out.String(), err)
	}
	if ppid == os.Getpid() {
		return 0
	}
	return float64(kib) / 1024
}
