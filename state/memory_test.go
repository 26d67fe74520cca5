package state_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

// epoch is where the fake clocks of the tests start.
var epoch = time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)

// expireOn returns an Env.Expire that advances clock past the lease's
// end and its clock-skew allowance.
func expireOn(clock *runnertest.Clock) func(state.Lease) {
	return func(l state.Lease) {
		if d := l.Expires.Add(state.Skew(l.TTL)).Sub(clock.Now()); d > 0 {
			clock.Advance(d)
		}
	}
}

func TestMemoryConformance(t *testing.T) {
	statetest.Run(t, func(t *testing.T) statetest.Env {
		clock := runnertest.NewClock(epoch)
		m := state.NewMemory(state.WithClock(clock))
		return statetest.Env{
			Open:    func() statetest.Backend { return m },
			Expire:  expireOn(clock),
			Clock:   clock,
			Raw:     state.MemoryRaw(m),
			Journal: state.JournalFile,
		}
	})
}

func TestMemoryZeroValue(t *testing.T) {
	var m state.Memory
	l, err := m.Acquire(t.Context(), "a", time.Hour)
	require.NoError(t, err)
	require.NoError(t, m.Save(t.Context(), l.Token, statetest.Sample(2)))
	got, err := m.Load(t.Context())
	require.NoError(t, err)
	assert.Equal(t, statetest.Sample(2), got)
	require.NoError(t, m.Release(t.Context(), l))
}
