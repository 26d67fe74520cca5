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
