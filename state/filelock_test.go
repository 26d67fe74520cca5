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

	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

// announcedLock is a File whose Refresh results are announced on
// refreshed, so a test knows when the keeper's refresh has returned.
type announcedLock struct {
	*state.File
	refreshed chan error
}

func (l announcedLock) Refresh(ctx context.Context, lease state.Lease) (state.Lease, error) {
	got, err := l.File.Refresh(ctx, lease)
	l.refreshed <- err
	return got, err
}

// TestFileLeaseRecordDeletedRun: lease.json deleted a second into a run
// (a Keeper and the Checkpointer on a File, TTL 5s, slow components one
// at a time) fenced the live holder at once: the next Commit failed with
// "the lock is free", and so did the Keeper's Refresh, while an Acquire
// was refused. Now the holder of the status's last token keeps its lease:
// its commits go on, its Refresh writes the record again (its holder, its
// TTL), and the run finishes past the lease's first expiry and releases.
func TestFileLeaseRecordDeletedRun(t *testing.T) {
	ctx := context.Background()
	const ttl = 5 * time.Second
	clock := runnertest.NewClock(epoch)
	dir := t.TempDir()
	f := openFile(t, dir, state.WithClock(clock))
	lock := announcedLock{f, make(chan error, 10)}
	lease, err := f.Acquire(ctx, "a", ttl)
	require.NoError(t, err)
	runCtx, keeper := state.Keep(ctx, lock, lease, state.WithClock(clock))
	defer keeper.Stop()

	started := make(chan string, 2)
	proceed := make(chan struct{}, 2)
	slow := runner.RunnerFunc(func(ctx context.Context, task runner.Task) error {
		started <- task.Component
		select {
		case <-proceed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	exec := runner.New(slow, runner.WithMaxParallel(1), runner.WithCheckpointer(state.Checkpointer(f, lease, state.WithClock(clock))))
	type result struct {
		st  *runner.Status
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := exec.Execute(runCtx, examplePlan(), nil)
		done <- result{st, err}
	}()
	waitStart := func(want string) {
		t.Helper()
		select {
		case got := <-started:
			require.Equal(t, want, got, "component started")
		case r := <-done:
			require.FailNow(t, "the run ended before "+want+" started", "Execute() = %v", r.err)
		}
	}
	refreshed := func(what string) {
		t.Helper()
		select {
		case err := <-lock.refreshed:
			require.NoError(t, err, "%s: Refresh after %s was deleted", what, state.LeaseFile)
		case <-runCtx.Done():
			require.FailNow(t, what+": the keeper cancelled the run", "cause: %v", context.Cause(runCtx))
		}
	}

	waitStart("etcd")
	clock.Advance(time.Second)
	require.NoError(t, os.Remove(filepath.Join(dir, state.LeaseFile)))
	proceed <- struct{}{} // etcd finishes: the round's commit
	waitStart("control-plane")

	clock.Advance(time.Second) // t=2s: the keeper's first refresh (TTL/3)
	refreshed("t=2s")
	_, err = openFile(t, dir, state.WithClock(clock)).Acquire(ctx, "b", ttl)
	var le *state.LockedError
	require.ErrorAs(t, err, &le, "Acquire by another holder after the refresh")
	assert.Equal(t, "a", le.Holder, "LockedError.Holder: the refresh wrote its holder back")
	assert.Equal(t, lease.Token, le.Token, "LockedError.Token")
	assert.Equal(t, epoch.Add(2*time.Second+ttl), le.Expires, "LockedError.Expires: a TTL from the refresh")
	assert.Empty(t, le.Missing, "LockedError.Missing after the refresh wrote the record")

	// Past the first lease's expiry (5s): the keeper's refreshes keep it.
	require.True(t, clock.WaitForTimers(3, wait), "the keeper set no timers after its refresh")
	clock.Advance(3500 * time.Millisecond) // t=5.5s
	refreshed("t=5.5s")
	proceed <- struct{}{}
	r := <-done
	require.NoError(t, r.err, "Execute()")
	assert.Equal(t, runner.Succeeded, r.st.Phase)
	keeper.Stop()
	assert.NotErrorIs(t, context.Cause(runCtx), state.ErrLost, "the keeper lost the lease")
	require.NoError(t, f.Release(ctx, keeper.Lease()), "Release after the run")
	next, err := f.Acquire(ctx, "b", ttl)
	require.NoError(t, err, "Acquire after the release")
	assert.Greater(t, next.Token, lease.Token, "the token after the release")
}

// TestFileLeaseRecordMissingCalls: with lease.json deleted, a Commit, a
// Refresh or a Release under the token the status was last written under
// succeeds (the lease is taken as held, so its holder keeps it), a Refresh
// writes the record again and a Release frees the lock; any other token
// is fenced, and its error does not call the lock free (an Acquire is
// refused). No token is issued twice.
func TestFileLeaseRecordMissingCalls(t *testing.T) {
	const ttl = time.Minute
	type op struct {
		name string
		call func(ctx context.Context, f *state.File, l state.Lease) error
	}
	ops := []op{
		{"Commit", func(ctx context.Context, f *state.File, l state.Lease) error {
			return f.Commit(ctx, l.Token, statetest.Big(2), nil)
		}},
		{"Refresh", func(ctx context.Context, f *state.File, l state.Lease) error {
			got, err := f.Refresh(ctx, l)
			if err == nil && (got.Token != l.Token || got.Holder != l.Holder || got.TTL != l.TTL || !got.Expires.After(l.Expires)) {
				return errors.New("Refresh() = " + got.Holder + ", want the lease extended")
			}
			return err
		}},
		{"Release", func(ctx context.Context, f *state.File, l state.Lease) error {
			return f.Release(ctx, l)
		}},
	}
	// The store's history: a (token 1) wrote and released, b (2) wrote;
	// for "unwritten", b released and c (3) holds the lock without having
	// written.
	tests := []struct {
		name    string
		present string // whose lease the call presents
		// wantOK: the call succeeds; else it is fenced with Written
		// (a token below the status's) or Current (the status's token).
		wantOK           bool
		written, current uint64
	}{
		{name: "the last token written", present: "b", wantOK: true},
		{name: "an older token", present: "a", written: 2},
		{name: "a token that never wrote", present: "c", current: 2},
	}
	for _, tt := range tests {
		for _, o := range ops {
			t.Run(tt.name+"/"+o.name, func(t *testing.T) {
				ctx := context.Background()
				clock := runnertest.NewClock(epoch)
				dir := t.TempDir()
				f := openFile(t, dir, state.WithClock(clock))
				leases := map[string]state.Lease{}
				for _, h := range []string{"a", "b"} {
					l, err := f.Acquire(ctx, h, ttl)
					require.NoError(t, err)
					require.NoError(t, f.Commit(ctx, l.Token, statetest.Big(2), nil))
					leases[h] = l
					if h == "a" {
						require.NoError(t, f.Release(ctx, l))
					}
				}
				last := leases["b"].Token
				if tt.present == "c" {
					require.NoError(t, f.Release(ctx, leases["b"]))
					l, err := f.Acquire(ctx, "c", ttl)
					require.NoError(t, err)
					leases["c"], last = l, l.Token
				}
				require.NoError(t, os.Remove(filepath.Join(dir, state.LeaseFile)))
				clock.Advance(ttl / 2)

				err := o.call(ctx, f, leases[tt.present])
				g := openFile(t, dir, state.WithClock(clock))
				if tt.wantOK {
					require.NoError(t, err, "%s(lease %d) with %s deleted", o.name, leases[tt.present].Token, state.LeaseFile)
				} else {
					var fe *state.FencedError
					require.ErrorAs(t, err, &fe, "%s(lease %d) with %s deleted", o.name, leases[tt.present].Token, state.LeaseFile)
					assert.Equal(t, tt.written, fe.Written, "FencedError.Written")
					assert.Equal(t, tt.current, fe.Current, "FencedError.Current")
					assert.NotContains(t, err.Error(), "the lock is free", "the lock is not free: an Acquire is refused")
					_, statErr := os.Stat(filepath.Join(dir, state.LeaseFile))
					assert.ErrorIs(t, statErr, os.ErrNotExist, "a fenced %s wrote %s", o.name, state.LeaseFile)
				}

				// Another holder: refused while the lease is taken as held,
				// then in with a token never issued before.
				l, err := g.Acquire(ctx, "x", ttl)
				if !(tt.wantOK && o.name == "Release") {
					var le *state.LockedError
					require.ErrorAs(t, err, &le, "Acquire after %s", o.name)
					if tt.wantOK && o.name == "Refresh" {
						assert.Equal(t, "b", le.Holder, "LockedError.Holder: the refresh wrote its holder back")
					}
					clock.Advance(2 * ttl)
					l, err = g.Acquire(ctx, "x", ttl)
				}
				require.NoError(t, err, "Acquire once the lease ran out")
				assert.Greater(t, l.Token, last, "Acquire().Token: never issued before")
				assert.ErrorIs(t, f.Commit(ctx, leases[tt.present].Token, statetest.Big(2), nil), state.ErrFenced, "a Commit under the old lease after another acquired")
			})
		}
	}
}
