package state_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

// backend is a Memory or File store as both a state.LeaseReader and the
// Lock it reads.
type backend interface {
	state.Lock
	state.Store
	state.LeaseReader
}

// A lease holds the lock, for ReadLease as for Acquire, until its expiry
// plus the clock-skew allowance: a reader cannot call a holder dead while
// the holder's successor would still be refused.
func TestReadLeaseSkew(t *testing.T) {
	const ttl = 10 * time.Second // skew: 1s
	for _, tt := range []struct {
		name  string
		after time.Duration // from the lease's expiry
		held  bool
	}{
		{"before its expiry", -time.Second, true},
		{"at its expiry", 0, true},
		{"within the skew allowance", state.Skew(ttl) / 2, true},
		{"at the end of the skew allowance", state.Skew(ttl), false},
		{"long after", time.Hour, false},
	} {
		for _, b := range []struct {
			name string
			open func(t *testing.T, clock *runnertest.Clock) backend
		}{
			{"Memory", func(t *testing.T, clock *runnertest.Clock) backend { return state.NewMemory(state.WithClock(clock)) }},
			{"File", func(t *testing.T, clock *runnertest.Clock) backend {
				return openFile(t, t.TempDir(), state.WithClock(clock))
			}},
		} {
			t.Run(b.name+"/"+tt.name, func(t *testing.T) {
				clock := runnertest.NewClock(epoch)
				s := b.open(t, clock)
				l, err := s.Acquire(t.Context(), "a", ttl)
				require.NoError(t, err)
				clock.Advance(ttl + tt.after)
				got, held, err := s.ReadLease(t.Context())
				require.NoError(t, err)
				assert.Equal(t, tt.held, held, "ReadLease() held %s after the expiry", tt.after)
				assert.Equal(t, l, got, "ReadLease() = the lease acquired")
				_, err = s.Acquire(t.Context(), "b", ttl)
				assert.Equal(t, tt.held, err != nil, "Acquire() = %v, want refused exactly when ReadLease says held", err)
			})
		}
	}
}

// A File whose lease.json was deleted while the status had been written
// under a token: ReadLease takes the lease as held by an unknown holder,
// as Acquire does (LockedError.Missing), and does not write lease.json.
// Without a status, the lock is free.
func TestFileReadLeaseRecordMissing(t *testing.T) {
	for _, written := range []bool{true, false} {
		t.Run(map[bool]string{true: "status written", false: "no status"}[written], func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			f := openFile(t, dir)
			l, err := f.Acquire(ctx, "a", time.Minute)
			require.NoError(t, err)
			if written {
				require.NoError(t, f.Save(ctx, l.Token, statetest.Sample(1)))
			}
			require.NoError(t, os.Remove(filepath.Join(dir, state.LeaseFile)))

			got, held, err := openFile(t, dir).ReadLease(ctx)
			require.NoError(t, err)
			_, statErr := os.Stat(filepath.Join(dir, state.LeaseFile))
			assert.ErrorIs(t, statErr, os.ErrNotExist, "ReadLease wrote %s", state.LeaseFile)
			if !written {
				assert.False(t, held, "ReadLease of a store without status or lease record says held")
				assert.Equal(t, state.Lease{}, got)
				return
			}
			assert.True(t, held, "ReadLease with %s missing after a Save = not held, want held", state.LeaseFile)
			assert.Equal(t, l.Token, got.Token, "ReadLease().Token: the status's last token")
			assert.Contains(t, got.Holder, "unknown", "ReadLease().Holder")
			assert.True(t, got.Expires.IsZero(), "ReadLease().Expires = %v, want zero: no Acquire timed it yet", got.Expires)
			_, err = f.Acquire(ctx, "b", time.Minute)
			assert.ErrorIs(t, err, state.ErrLocked, "Acquire agrees")
		})
	}
}
