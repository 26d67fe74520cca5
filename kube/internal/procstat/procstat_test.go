package procstat

import (
	"bufio"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestVmHWM(t *testing.T) {
	tests := []struct {
		name, status string
		want         uint64
	}{
		{"kB", "Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 1024 kB\n", 2048 << 10},
		{"none", "Name:\tx\nVmRSS:\t 1024 kB\n", 0},
		{"not a number", "VmHWM:\t lots kB\n", 0},
		{"empty", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := vmHWM(bufio.NewScanner(strings.NewReader(tt.status))); got != tt.want {
				t.Errorf("vmHWM(%q) = %d, want %d", tt.status, got, tt.want)
			}
		})
	}
}

func TestPeakRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("VmHWM is Linux's")
	}
	if got := PeakRSS(); got < 1<<20 {
		t.Errorf("PeakRSS() = %d bytes: a Go test process holds more than 1 MiB", got)
	}
}

func TestCPU(t *testing.T) {
	before := CPU()
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
		// busy: CPU time, not sleep
	}
	if used := CPU() - before; used < 10*time.Millisecond {
		t.Errorf("CPU() grew by %v over 50 ms of busy loop: want at least 10 ms", used)
	}
}
