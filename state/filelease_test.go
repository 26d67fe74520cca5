//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package state_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

// TestFileRefreshBesideCheckpoint: a lease refresh does not wait for a
// checkpoint, in this handle (its mutex held, as a Commit in flight holds
// it) or in another process (the directory's status lock held, as a slow
// fsync holds it): it succeeds meanwhile. Before, it waited behind them,
// and short leases on a loaded machine were lost ("no refresh succeeded
// before its expiry"). The context's deadline only ends a refresh that
// hangs, so that the test fails rather than waits forever.
func TestFileRefreshBesideCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold func(t *testing.T, dir string, f *state.File) (release func())
	}{
		{"a checkpoint in flight on the handle", func(t *testing.T, dir string, f *state.File) func() {
			release := state.HoldHandle(f)
			unflock := flockFile(t, filepath.Join(dir, "lock"))
			return func() { unflock(); release() }
		}},
		{"the status lock held by another process", func(t *testing.T, dir string, _ *state.File) func() {
			return flockFile(t, filepath.Join(dir, "lock"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := runnertest.NewClock(epoch)
			dir := t.TempDir()
			f := openFile(t, dir, state.WithClock(clock))
			l, err := f.Acquire(t.Context(), "a", 5*time.Second)
			require.NoError(t, err)
			require.NoError(t, f.Commit(t.Context(), l.Token, statetest.Big(3), nil))

			release := tc.hold(t, dir, f)
			clock.Advance(2 * time.Second)
			type result struct {
				l   state.Lease
				err error
			}
			done := make(chan result, 1)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() {
				l, err := f.Refresh(ctx, l)
				done <- result{l, err}
			}()
			var got result
			select {
			case got = <-done:
			case <-time.After(time.Minute):
				// Not a timing assertion: a refresh that waits for the
				// holder of the lock waits for ever.
				cancel()
				release()
				<-done
				t.Fatalf("Refresh while %s: still waiting a minute later, want it done without the status lock", tc.name)
			}
			release()
			require.NoError(t, got.err, "Refresh while %s", tc.name)
			assert.Equal(t, clock.Now().Add(5*time.Second), got.l.Expires, "Refresh().Expires")
			require.NoError(t, f.Commit(t.Context(), got.l.Token, statetest.Big(3), nil), "Commit after the refresh")
		})
	}
}

// flockFile takes an exclusive flock of path through a descriptor of its
// own, as another process would, until the returned func is called.
func flockFile(t *testing.T, path string) func() {
	t.Helper()
	h, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(h.Fd()), syscall.LOCK_EX))
	return func() {
		_ = syscall.Flock(int(h.Fd()), syscall.LOCK_UN)
		h.Close()
	}
}
