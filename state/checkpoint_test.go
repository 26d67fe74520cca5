package state_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/codec"
	"github.com/hopdag/hopdag/state/statetest"
)

// flakyStore fails its first fails writes with err.
type flakyStore struct {
	*state.Memory
	mu    sync.Mutex
	fails int
	err   error
	calls int
}

func (f *flakyStore) Commit(ctx context.Context, token uint64, s *record.Status, changed []record.Ref) error {
	f.mu.Lock()
	f.calls++
	fail := f.calls <= f.fails
	f.mu.Unlock()
	if fail {
		return f.err
	}
	return f.Memory.Commit(ctx, token, s, changed)
}

func (f *flakyStore) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// state.Checkpointer retries a transient error within the lease's TTL,
// and not a fenced write.
func TestCheckpointerRetries(t *testing.T) {
	errNet := errors.New("connection reset")
	for _, tc := range []struct {
		name      string
		fails     int
		err       error
		wantErr   error
		wantCalls int
	}{
		{"transient, then answers", 3, errNet, nil, 4},
		{"transient past the TTL", 1000, errNet, errNet, 0},
		{"fenced", 1000, &state.FencedError{Token: 1}, state.ErrFenced, 1},
		{"corrupt", 1000, &state.CorruptError{Path: "x", Err: errors.New("bad")}, state.ErrCorrupt, 1},
		// Another store's refusal of a status no Load could read back
		// (etcdstore, kube/store wrap the codec's error).
		{"invalid status", 1000, fmt.Errorf("etcdstore: save: %w", codec.ErrInvalid), codec.ErrInvalid, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := runnertest.NewClock(epoch)
			m := state.NewMemory(state.WithClock(clock))
			l, err := m.Acquire(t.Context(), "a", time.Minute)
			require.NoError(t, err)
			fs := &flakyStore{Memory: m, fails: tc.fails, err: tc.err}
			cp := state.Checkpointer(fs, l, state.WithClock(clock)).(runner.ChangeCheckpointer)
			done := make(chan error, 1)
			go func() {
				done <- cp.CheckpointChanges(t.Context(), statetest.Sample(1), []record.Ref{{Hop: 0, Component: 0}})
			}()
			// Drive the backoff waits on the fake clock until it returns.
			var got error
		loop:
			for {
				select {
				case got = <-done:
					break loop
				case <-time.After(time.Millisecond):
					if clock.Pending() > 0 {
						clock.Advance(time.Second)
					}
				}
			}
			if tc.wantErr == nil {
				require.NoError(t, got)
				assert.Equal(t, statetest.Sample(1), must(m.Load(t.Context())))
			} else {
				require.ErrorIs(t, got, tc.wantErr)
			}
			if tc.wantCalls > 0 {
				assert.Equal(t, tc.wantCalls, fs.count(), "writes attempted")
			} else {
				assert.Greater(t, fs.count(), 10, "writes attempted within the TTL")
				assert.False(t, clock.Now().Before(epoch.Add(time.Minute-2*time.Second)), "gave up at %v, before the TTL", clock.Now().Sub(epoch))
				assert.False(t, clock.Now().After(epoch.Add(time.Minute+2*time.Second)), "gave up at %v, after the TTL", clock.Now().Sub(epoch))
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestWrappedCheckpointerLinear wraps state.Checkpointer in a plain
// runner.CheckpointFunc, as one does to count or log checkpoints (see
// statetest.WrappedCheckpointer): the status bytes written per component
// stay flat from 200 to 800 components, as unwrapped (about 630). Before,
// the wrapper hid what changed and every round saved the whole status:
// 11 KB per component at 200, 41 KB at 800 (on etcd, 1,000 components
// grew the database from 2 to 211 MiB).
func TestWrappedCheckpointerLinear(t *testing.T) {
	written := func(b statetest.Backend) int64 { return state.Written(b) }
	t.Run("Memory", func(t *testing.T) {
		statetest.WrappedCheckpointer(t, func(*testing.T) statetest.Backend { return state.NewMemory() }, written)
	})
	t.Run("File", func(t *testing.T) {
		statetest.WrappedCheckpointer(t, func(t *testing.T) statetest.Backend { return openFile(t, t.TempDir()) }, written)
	})
}
