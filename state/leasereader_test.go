package state_test

import (
	"context"
	"errors"
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

// A File whose lease.json was deleted after a lease was issued: ReadLease
// takes the lease as held by an unknown holder, as Acquire does
// (LockedError.Missing), and does not write lease.json. The last token
// issued is the status's or, when the lease never wrote, the lock file's;
// with neither (a store whose lock file predates it, no status), the lock
// is free.
func TestFileReadLeaseRecordMissing(t *testing.T) {
	tests := []struct {
		name             string
		save, emptyMutex bool
		held             bool
	}{
		{name: "status written", save: true, held: true},
		{name: "no status", held: true},
		{name: "status written, lock file empty", save: true, emptyMutex: true, held: true},
		{name: "no status, lock file empty", emptyMutex: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			f := openFile(t, dir)
			l, err := f.Acquire(ctx, "a", time.Minute)
			require.NoError(t, err)
			if tt.save {
				require.NoError(t, f.Save(ctx, l.Token, statetest.Sample(1)))
			}
			require.NoError(t, os.Remove(filepath.Join(dir, state.LeaseFile)))
			if tt.emptyMutex {
				require.NoError(t, os.Truncate(filepath.Join(dir, "lock"), 0))
			}

			got, held, err := openFile(t, dir).ReadLease(ctx)
			require.NoError(t, err)
			_, statErr := os.Stat(filepath.Join(dir, state.LeaseFile))
			assert.ErrorIs(t, statErr, os.ErrNotExist, "ReadLease wrote %s", state.LeaseFile)
			_, err = f.Acquire(ctx, "b", time.Minute)
			assert.Equal(t, tt.held, errors.Is(err, state.ErrLocked), "Acquire() = %v, want refused exactly when ReadLease says held", err)
			if !tt.held {
				assert.False(t, held, "ReadLease with %s missing, no status and no token in the lock file says held", state.LeaseFile)
				assert.Equal(t, state.Lease{}, got)
				return
			}
			assert.True(t, held, "ReadLease with %s missing = not held, want held", state.LeaseFile)
			assert.Equal(t, l.Token, got.Token, "ReadLease().Token: the last token issued")
			assert.Contains(t, got.Holder, "unknown", "ReadLease().Holder")
			assert.True(t, got.Expires.IsZero(), "ReadLease().Expires = %v, want zero: no Acquire timed it yet", got.Expires)
		})
	}
}
