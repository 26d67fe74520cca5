package procstat_test

import (
	"fmt"

	"github.com/hopdag/hopdag/kube/internal/procstat"
)

// A benchmark reports the peak resident set of what it measured.
func ExamplePeakRSS() {
	procstat.ResetPeakRSS()
	buf := make([]byte, 8<<20)
	buf[len(buf)-1] = 1
	fmt.Println(procstat.PeakRSS() > 0)
	// Output: true
}

// A benchmark reports the CPU time of what it measured.
func ExampleCPU() {
	before := procstat.CPU()
	sum := 0
	for i := range 50_000_000 {
		sum += i
	}
	fmt.Println(sum > 0, procstat.CPU() > before)
	// Output: true true
}
