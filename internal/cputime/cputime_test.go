package cputime_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hopdag/hopdag/internal/cputime"
)

// spins counts the loops of spin, so that they are not optimized away.
var spins int

// spin burns CPU for about d of wall time.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		spins++
	}
}

func TestOf(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		min  time.Duration // at least this much CPU
		max  time.Duration // at most this much
	}{
		{"sleeping uses no CPU", func() { time.Sleep(200 * time.Millisecond) }, 0, 100 * time.Millisecond},
		{"spinning uses CPU", func() { spin(300 * time.Millisecond) }, time.Millisecond, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cputime.Of(tt.f)
			if got < tt.min || got > tt.max {
				t.Errorf("Of = %v, want within [%v, %v]", got, tt.min, tt.max)
			}
		})
	}
}

func TestSelfGrows(t *testing.T) {
	a := cputime.Self()
	spin(50 * time.Millisecond)
	if b := cputime.Self(); b < a {
		t.Errorf("Self went back from %v to %v", a, b)
	}
}

func ExampleOf() {
	used := cputime.Of(func() { time.Sleep(10 * time.Millisecond) })
	fmt.Println(used < 10*time.Millisecond) // a sleep waits, it does not compute
	// Output: true
}
