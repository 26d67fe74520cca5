package state_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
)

// wait is how long a keeper test waits for the keeper goroutine to set
// its next timers: a bound on a hang, never reached when the test passes.
const wait = time.Minute

// scriptedLock is a Lock whose Refresh does what the test says: pass
// through to the Memory lock, fail, or hang until its ctx is done. Each
// Refresh is announced on calls.
type scriptedLock struct {
	*state.Memory
	calls chan string
	mode  atomic.Value // string: "", "fail", "fence", "hang", "late"
}

func newScriptedLock(m *state.Memory) *scriptedLock {
	l := &scriptedLock{Memory: m, calls: make(chan string, 100)}
	l.mode.Store("")
	return l
}

func (l *scriptedLock) Refresh(ctx context.Context, lease state.Lease) (state.Lease, error) {
	mode := l.mode.Load().(string)
	l.calls <- mode
	switch mode {
	case "fail":
		return state.Lease{}, errors.New("connection refused")
	case "fence":
		return state.Lease{}, &state.FencedError{Token: lease.Token, Holder: "b", Current: lease.Token + 1}
	case "hang":
		<-ctx.Done()
		return state.Lease{}, ctx.Err()
	case "late":
		// Sent before the cancel, and taken by the backend all the same.
		<-ctx.Done()
		return l.Memory.Refresh(context.WithoutCancel(ctx), lease)
	}
	return l.Memory.Refresh(ctx, lease)
}

func startKeeper(t *testing.T, ttl time.Duration) (*runnertest.Clock, *scriptedLock, context.Context, *state.Keeper) {
	t.Helper()
	clock := runnertest.NewClock(epoch)
	lock := newScriptedLock(state.NewMemory(state.WithClock(clock)))
	lease, err := lock.Acquire(t.Context(), "a", ttl)
	require.NoError(t, err)
	ctx, k := state.Keep(t.Context(), lock, lease, state.WithClock(clock))
	t.Cleanup(k.Stop)
	return clock, lock, ctx, k
}

func TestKeeperRefreshes(t *testing.T) {
	clock, lock, ctx, k := startKeeper(t, 30*time.Second)
	first := k.Lease()
	for i := range 5 {
		// Keep set two timers (expiry, next refresh); each refresh sets
		// two more, and an old expiry timer fires unread every 10s. After
		// the first refresh 3 are pending, after the others 4: waiting
		// for exactly that many waits for both of the refresh's timers.
		clock.Advance(10 * time.Second)
		assert.Equal(t, "", <-lock.calls, "refresh %d", i+1)
		require.True(t, clock.WaitForTimers(min(3+i, 4), wait), "keeper set no timers after refresh %d", i+1)
	}
	// 50s have passed, beyond the first lease's 30s: refreshes kept it.
	got := k.Lease()
	assert.Equal(t, first.Token, got.Token)
	assert.Equal(t, epoch.Add(80*time.Second), got.Expires, "Lease().Expires after 5 refreshes, 10s apart, with a TTL of 30s")
	assert.NoError(t, ctx.Err(), "the keeper cancelled a lease it kept")
}

func TestKeeperLosesLease(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    string
		advance time.Duration
		fenced  bool
	}{
		// The refresh hangs: the lease is lost at its expiry, while the
		// refresh still hangs.
		{"refresh hangs", "hang", 30 * time.Second, false},
		// Refreshes fail and are retried until the lease expires.
		{"refresh fails", "fail", 30 * time.Second, false},
		// A fenced refresh loses the lease at once, before its expiry.
		{"refresh fenced", "fence", 10 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock, lock, ctx, k := startKeeper(t, 30*time.Second)
			lock.mode.Store(tc.mode)
			require.True(t, clock.WaitForTimers(2, wait))
			clock.Advance(tc.advance)
			<-ctx.Done()
			cause := context.Cause(ctx)
			require.ErrorIs(t, cause, state.ErrLost)
			var lost *state.LostError
			require.ErrorAs(t, cause, &lost)
			assert.Equal(t, k.Lease(), lost.Lease)
			assert.Equal(t, tc.fenced, errors.Is(cause, state.ErrFenced), "cause %v matches ErrFenced", cause)
			assert.ErrorIs(t, ctx.Err(), context.Canceled)
		})
	}
}

func TestKeeperRetriesFailedRefresh(t *testing.T) {
	clock, lock, ctx, k := startKeeper(t, 30*time.Second)
	lock.mode.Store("fail")
	require.True(t, clock.WaitForTimers(2, wait))
	clock.Advance(10 * time.Second)
	assert.Equal(t, "fail", <-lock.calls)
	// The retry comes a tenth of the TTL later, and succeeds.
	lock.mode.Store("")
	require.True(t, clock.WaitForTimers(2, wait))
	clock.Advance(3 * time.Second)
	assert.Equal(t, "", <-lock.calls)
	require.True(t, clock.WaitForTimers(3, wait))
	assert.Equal(t, epoch.Add(43*time.Second), k.Lease().Expires)
	clock.Advance(25 * time.Second) // past the first lease's expiry
	assert.NoError(t, ctx.Err(), "the keeper cancelled a lease it refreshed")
}

func TestKeeperStop(t *testing.T) {
	_, _, ctx, k := startKeeper(t, 30*time.Second)
	k.Stop()
	k.Stop()
	assert.ErrorIs(t, context.Cause(ctx), context.Canceled)
	assert.NotErrorIs(t, context.Cause(ctx), state.ErrLost)
}

func TestKeeperStopsWithParent(t *testing.T) {
	clock := runnertest.NewClock(epoch)
	m := state.NewMemory(state.WithClock(clock))
	lease, err := m.Acquire(t.Context(), "a", time.Minute)
	require.NoError(t, err)
	parent, cancel := context.WithCancel(t.Context())
	ctx, k := state.Keep(parent, m, lease, state.WithClock(clock))
	cancel()
	<-ctx.Done()
	k.Stop() // returns: the keeper's goroutine ended with its parent
	assert.NotErrorIs(t, context.Cause(ctx), state.ErrLost)
}

func TestKeeperStopCancelsHungRefresh(t *testing.T) {
	clock, lock, _, k := startKeeper(t, 30*time.Second)
	lock.mode.Store("hang")
	require.True(t, clock.WaitForTimers(2, wait))
	clock.Advance(10 * time.Second)
	assert.Equal(t, "hang", <-lock.calls)
	k.Stop() // returns: the hung refresh saw its ctx cancelled
}

// A refresh that succeeds although Stop cancelled it (the backend took
// the request before the cancel) is kept: Lease() then says the lease
// the lock holds, for the Release (and the audit record) that follows.
func TestKeeperStopKeepsLateRefresh(t *testing.T) {
	clock, lock, _, k := startKeeper(t, 30*time.Second)
	before := k.Lease()
	lock.mode.Store("late")
	require.True(t, clock.WaitForTimers(2, wait))
	clock.Advance(10 * time.Second)
	assert.Equal(t, "late", <-lock.calls)
	k.Stop()
	after := k.Lease()
	assert.True(t, after.Expires.After(before.Expires), "Lease() after Stop expires %v, want the late refresh's expiry, after %v", after.Expires, before.Expires)
	assert.NoError(t, lock.Release(t.Context(), after), "Release of the lease the lock holds")
}

// The keeper cancels the run Margin before the lease's expiry when no
// refresh succeeded by then, not at the expiry itself.
func TestKeeperMargin(t *testing.T) {
	const ttl = 30 * time.Second
	clock, lock, ctx, _ := startKeeper(t, ttl)
	lock.mode.Store("hang")
	require.True(t, clock.WaitForTimers(2, wait))
	clock.Advance(10 * time.Second)
	assert.Equal(t, "hang", <-lock.calls)
	clock.Advance(ttl - state.Margin(ttl) - 10*time.Second - time.Nanosecond)
	time.Sleep(20 * time.Millisecond) // give a wrong cancel the time to happen
	require.NoError(t, ctx.Err(), "cancelled before expiry - margin")
	clock.Advance(time.Nanosecond)
	select {
	case <-ctx.Done():
	case <-time.After(wait):
		t.Fatalf("not cancelled at expiry - margin (%v before the expiry)", state.Margin(ttl))
	}
	require.ErrorIs(t, context.Cause(ctx), state.ErrLost)
}

// Another process holds the File store's directory locks and never lets
// go (stopped inside an Acquire, which holds both the status's and the
// lease's). The coordinator's checkpoint cannot finish and the keeper's
// refresh cannot run: the keeper must still cancel the run when the lease
// expires, and the checkpoint must give up rather than hang the executor.
// (From an independent review.)
func TestKeeperCancelsWhileSaveAndRefreshHang(t *testing.T) {
	dir := t.TempDir()
	f, err := state.OpenFile(dir)
	require.NoError(t, err)
	defer f.Close()
	const ttl = 300 * time.Millisecond
	lease, err := f.Acquire(context.Background(), "a", ttl)
	require.NoError(t, err)
	runCtx, k := state.Keep(context.Background(), f, lease)

	other, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR, 0)
	require.NoError(t, err)
	defer other.Close()
	require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_EX))
	otherLease, err := os.OpenFile(filepath.Join(dir, "lease.lock"), os.O_RDWR, 0)
	require.NoError(t, err)
	defer otherLease.Close()
	require.NoError(t, syscall.Flock(int(otherLease.Fd()), syscall.LOCK_EX))

	saved := make(chan error, 1)
	go func() {
		saved <- state.Checkpointer(f, lease).Checkpoint(context.WithoutCancel(runCtx), &record.Status{Phase: record.Running})
	}()
	select {
	case <-runCtx.Done():
		assert.ErrorIs(t, context.Cause(runCtx), state.ErrLost, "the run is cancelled because the lease is lost")
	case <-time.After(10 * ttl):
		t.Fatalf("the lease (TTL %s) expired long ago, but the keeper has not cancelled the run", ttl)
	}
	select {
	case err := <-saved:
		assert.Error(t, err, "a checkpoint that could not take the lock fails")
	case <-time.After(10 * ttl):
		t.Fatalf("the checkpoint still hangs %s after the lease's TTL", 10*ttl)
	}
	require.NoError(t, syscall.Flock(int(otherLease.Fd()), syscall.LOCK_UN))
	require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_UN))
	k.Stop()
}

// hungLock's Refresh never returns until released, whatever its ctx says.
type hungLock struct{ release chan struct{} }

func (hungLock) Acquire(context.Context, string, time.Duration) (state.Lease, error) {
	return state.Lease{}, nil
}
func (l hungLock) Refresh(context.Context, state.Lease) (state.Lease, error) {
	<-l.release
	return state.Lease{}, state.ErrFenced
}
func (hungLock) Release(context.Context, state.Lease) error { return nil }

// A refresh that hangs and ignores its ctx must not keep a lost lease's run
// going: the keeper cancels the run at the lease's expiry.
func TestKeeperLosesAtExpiryWhenRefreshHangs(t *testing.T) {
	const ttl = 150 * time.Millisecond
	l := hungLock{release: make(chan struct{})}
	lease := state.Lease{Holder: "a", Token: 1, TTL: ttl, Expires: time.Now().Add(ttl)}
	runCtx, k := state.Keep(context.Background(), l, lease)
	select {
	case <-runCtx.Done():
		assert.ErrorIs(t, context.Cause(runCtx), state.ErrLost)
	case <-time.After(20 * ttl):
		t.Errorf("the lease expired %s ago and the refresh hangs, but the run goes on", 19*ttl)
	}
	close(l.release)
	k.Stop()
}
