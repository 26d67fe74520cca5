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

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
)

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
