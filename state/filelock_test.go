package state_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
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
		st  *record.Status
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
	assert.Equal(t, record.Succeeded, r.st.Phase)
	keeper.Stop()
	assert.NotErrorIs(t, context.Cause(runCtx), state.ErrLost, "the keeper lost the lease")
	require.NoError(t, f.Release(ctx, keeper.Lease()), "Release after the run")
	next, err := f.Acquire(ctx, "b", ttl)
	require.NoError(t, err, "Acquire after the release")
	assert.Greater(t, next.Token, lease.Token, "the token after the release")
}

// TestFileLeaseRecordMissingCalls: with lease.json deleted, a Commit, a
// Refresh or a Release under the last token issued succeeds (the lease is
// taken as held, so its holder keeps it), a Refresh writes the record
// again and a Release frees the lock; any other token is fenced, and its
// error does not call the lock free (an Acquire is refused). No token is
// issued twice, even one that never wrote the status: the lease record
// was its only trace until the lock file kept the last token issued too.
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
				return fmt.Errorf("Refresh() = %+v, want %+v extended", got, l)
			}
			return err
		}},
		{"Release", func(ctx context.Context, f *state.File, l state.Lease) error {
			return f.Release(ctx, l)
		}},
	}
	tests := []struct {
		name string
		// history is the holders that acquired the lock in turn, with
		// token 1, 2...; "+" marks one that wrote the status. All but
		// the last released it.
		history []string
		present string // whose lease the call presents
		// wantOK: the call succeeds; else it is fenced with Written
		// (a token below the status's) or Current (the last issued).
		wantOK           bool
		written, current uint64
	}{
		{name: "the last token, which wrote", history: []string{"a+", "b+"}, present: "b", wantOK: true},
		{name: "the last token, which never wrote", history: []string{"a+", "b+", "c"}, present: "c", wantOK: true},
		{name: "the only token, no status", history: []string{"a"}, present: "a", wantOK: true},
		{name: "an older token, below the status's", history: []string{"a+", "b+"}, present: "a", written: 2},
		{name: "an older token, the status's", history: []string{"a+", "b"}, present: "a", current: 2},
		{name: "an older token that never wrote", history: []string{"a+", "b+", "c", "d"}, present: "c", current: 4},
	}
	for _, tt := range tests {
		for _, o := range ops {
			t.Run(tt.name+"/"+o.name, func(t *testing.T) {
				ctx := context.Background()
				clock := runnertest.NewClock(epoch)
				dir := t.TempDir()
				f := openFile(t, dir, state.WithClock(clock))
				leases := map[string]state.Lease{}
				var last uint64
				for i, h := range tt.history {
					name := strings.TrimSuffix(h, "+")
					l, err := f.Acquire(ctx, name, ttl)
					require.NoError(t, err)
					if name != h {
						require.NoError(t, f.Commit(ctx, l.Token, statetest.Big(2), nil))
					}
					if i < len(tt.history)-1 {
						require.NoError(t, f.Release(ctx, l))
					}
					leases[name], last = l, l.Token
				}
				require.NoError(t, os.Remove(filepath.Join(dir, state.LeaseFile)))
				clock.Advance(ttl / 2)

				l := leases[tt.present]
				err := o.call(ctx, f, l)
				if tt.wantOK {
					require.NoError(t, err, "%s(lease %d) with %s deleted", o.name, l.Token, state.LeaseFile)
				} else {
					var fe *state.FencedError
					require.ErrorAs(t, err, &fe, "%s(lease %d) with %s deleted", o.name, l.Token, state.LeaseFile)
					assert.Equal(t, tt.written, fe.Written, "FencedError.Written")
					assert.Equal(t, tt.current, fe.Current, "FencedError.Current")
					assert.NotContains(t, err.Error(), "the lock is free", "the lock is not free: an Acquire is refused")
					_, statErr := os.Stat(filepath.Join(dir, state.LeaseFile))
					assert.ErrorIs(t, statErr, os.ErrNotExist, "a fenced %s wrote %s", o.name, state.LeaseFile)
				}

				// Another holder: refused while the lease is taken as held,
				// then in with a token never issued before.
				g := openFile(t, dir, state.WithClock(clock))
				next, err := g.Acquire(ctx, "x", ttl)
				if !tt.wantOK || o.name != "Release" {
					var le *state.LockedError
					require.ErrorAs(t, err, &le, "Acquire after %s", o.name)
					assert.Equal(t, last, le.Token, "LockedError.Token: the last token issued")
					if tt.wantOK && o.name == "Refresh" {
						assert.Equal(t, tt.present, le.Holder, "LockedError.Holder: the refresh wrote its holder back")
					}
					clock.Advance(2 * ttl)
					next, err = g.Acquire(ctx, "x", ttl)
				}
				require.NoError(t, err, "Acquire once the lease ran out")
				assert.Greater(t, next.Token, last, "Acquire().Token: never issued before")
				assert.ErrorIs(t, f.Commit(ctx, l.Token, statetest.Big(2), nil), state.ErrFenced, "a Commit under lease %d after another acquired", l.Token)
			})
		}
	}
}

// The lock file keeps the last token issued and its lease's TTL (20
// digits, a space, 20 digits and a newline): an empty one (a store from
// before) is no token, the token alone (a store from before the TTL was
// kept) a token, and anything else that is not a token is a
// *CorruptError naming it, with nothing written. The token survives a
// deleted lease.json and the lease record put back from an older backup.
func TestFileLockFileToken(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string, oldLease []byte)
		want    uint64 // the next Acquire's token, 0 for ErrCorrupt
		corrupt bool
	}{
		{name: "as written", damage: func(*testing.T, string, []byte) {}, want: 3},
		{name: "empty: a store from before", damage: func(t *testing.T, dir string, _ []byte) {
			require.NoError(t, os.Truncate(filepath.Join(dir, "lock"), 0))
		}, want: 3},
		{name: "the token alone: a store from before", damage: func(t *testing.T, dir string, _ []byte) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "lock"), []byte("00000000000000000002\n"), 0o644))
		}, want: 3},
		{name: "lease.json from an older backup", damage: func(t *testing.T, dir string, old []byte) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, state.LeaseFile), old, 0o644))
		}, want: 3},
		{name: "garbage", damage: func(t *testing.T, dir string, _ []byte) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "lock"), []byte("two\n"), 0o644))
		}, corrupt: true},
		{name: "cut short", damage: func(t *testing.T, dir string, _ []byte) {
			require.NoError(t, os.Truncate(filepath.Join(dir, "lock"), 10))
		}, corrupt: true},
		{name: "cut after the token", damage: func(t *testing.T, dir string, _ []byte) {
			require.NoError(t, os.Truncate(filepath.Join(dir, "lock"), 21))
		}, corrupt: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			clock := runnertest.NewClock(epoch)
			dir := t.TempDir()
			f := openFile(t, dir, state.WithClock(clock))
			// Token 1 wrote the status; token 2 was released without
			// writing: only lease.json and the lock file know of it.
			l, err := f.Acquire(ctx, "a", time.Minute)
			require.NoError(t, err)
			require.NoError(t, f.Commit(ctx, l.Token, statetest.Big(2), nil))
			require.NoError(t, f.Release(ctx, l))
			old, err := os.ReadFile(filepath.Join(dir, state.LeaseFile))
			require.NoError(t, err)
			l, err = f.Acquire(ctx, "b", time.Minute)
			require.NoError(t, err)
			require.NoError(t, f.Release(ctx, l))
			lock, err := os.ReadFile(filepath.Join(dir, "lock"))
			require.NoError(t, err)
			require.Equal(t, "00000000000000000002 00000000060000000000\n", string(lock), "the lock file after token 2, a 1 min lease")

			tt.damage(t, dir, old)
			before, _ := os.ReadFile(filepath.Join(dir, state.LeaseFile))
			got, err := openFile(t, dir, state.WithClock(clock)).Acquire(ctx, "c", time.Minute)
			if tt.corrupt {
				var ce *state.CorruptError
				require.ErrorAs(t, err, &ce, "Acquire with a damaged lock file")
				assert.Equal(t, filepath.Join(dir, "lock"), ce.Path, "CorruptError.Path")
				after, _ := os.ReadFile(filepath.Join(dir, state.LeaseFile))
				assert.Equal(t, string(before), string(after), "Acquire wrote %s over a damaged lock file", state.LeaseFile)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Token, "Acquire().Token")
		})
	}
}

// TestFileLeaseRecordMissingHolderTTL: A holds a 1 h lease (refreshing
// every 20 min) when lease.json is deleted, and B asks for a 1 min lease.
// B is kept out for A's TTL, not its own: until A's next refresh, which
// keeps the lock A's, or, if A died, until an hour (and the skew
// allowance) from when B found the record missing. Before, B got the
// lock 2 minutes after the deletion (its own TTL and skew), while A's
// commands still ran.
func TestFileLeaseRecordMissingHolderTTL(t *testing.T) {
	const ttlA, ttlB = time.Hour, time.Minute
	for _, tc := range []struct {
		name      string
		refreshes bool // A refreshes 20 min after the deletion
	}{
		{"holder refreshes", true},
		{"holder died", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			clock := runnertest.NewClock(epoch)
			dir := t.TempDir()
			a := openFile(t, dir, state.WithClock(clock))
			la, err := a.Acquire(ctx, "a", ttlA)
			require.NoError(t, err)
			require.NoError(t, a.Commit(ctx, la.Token, statetest.Big(2), nil))
			require.NoError(t, os.Remove(filepath.Join(dir, state.LeaseFile)))

			b := openFile(t, dir, state.WithClock(clock))
			_, err = b.Acquire(ctx, "b", ttlB)
			var le *state.LockedError
			require.ErrorAs(t, err, &le, "B's Acquire with %s deleted", state.LeaseFile)
			assert.Equal(t, epoch.Add(ttlA), le.Expires, "LockedError.Expires: A's TTL from when the record was found missing")

			clock.Advance(2*ttlB + state.Skew(ttlB))
			_, err = b.Acquire(ctx, "b", ttlB)
			require.ErrorIs(t, err, state.ErrLocked, "B's Acquire %v after the deletion, while A (TTL %v) may still run", 2*ttlB+state.Skew(ttlB), ttlA)

			clock.Advance(20*time.Minute - clock.Now().Sub(epoch))
			if tc.refreshes {
				la, err = a.Refresh(ctx, la)
				require.NoError(t, err, "A's Refresh 20 min after the deletion")
			}
			clock.Advance(ttlA - 20*time.Minute - time.Second)
			_, err = b.Acquire(ctx, "b", ttlB)
			require.ErrorIs(t, err, state.ErrLocked, "B's Acquire just under %v after the deletion", ttlA)

			clock.Advance(time.Second + state.Skew(ttlA))
			lb, err := b.Acquire(ctx, "b", ttlB)
			if tc.refreshes {
				require.ErrorIs(t, err, state.ErrLocked, "B's Acquire %v after A's refresh", ttlA-20*time.Minute+state.Skew(ttlA))
				require.NoError(t, a.Commit(ctx, la.Token, statetest.Big(2), nil), "A's Commit: its lease is current")
				return
			}
			require.NoError(t, err, "B's Acquire %v after the deletion, A having stopped", ttlA+state.Skew(ttlA))
			assert.Greater(t, lb.Token, la.Token, "B's token")
		})
	}
}
