package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

// TestLeaseDeleted deletes the Lease object (kubectl delete lease) while
// its holder runs: another Acquire is refused, naming the Lease, for one
// TTL from when that was first found (Acquires that find it again do not
// extend it); the holder's commits go on, its Refresh puts its Lease
// back, a stale token stays fenced, and a Release frees the lock with the
// next token above every one before. Found held and not refreshed, the
// lease taken as held runs out and the lock can be taken.
func TestLeaseDeleted(t *testing.T) {
	needAPIServer(t)
	const ttl = time.Minute
	tests := []struct {
		name string
		// wrote: the holder committed before the deletion.
		wrote bool
		// refreshed: the holder refreshes and releases (else it is gone,
		// and the lease taken as held runs out).
		refreshed bool
	}{
		{name: "the holder wrote and goes on", wrote: true, refreshed: true},
		{name: "the holder never wrote and goes on", refreshed: true},
		{name: "the holder is gone", wrote: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t)
			ns := newNamespace(t, c)
			ctx := context.Background()
			a, b := newStore(t, newClient(t), ns, "run"), newStore(t, newClient(t), ns, "run")
			old, err := a.Acquire(ctx, "old", ttl)
			require.NoError(t, err)
			s := statetest.Big(4)
			require.NoError(t, a.Commit(ctx, old.Token, s, nil))
			require.NoError(t, a.Release(ctx, old))
			la, err := a.Acquire(ctx, "a", ttl)
			require.NoError(t, err)
			if tt.wrote {
				s.Hops[0].Components[0].Phase = record.Succeeded
				require.NoError(t, a.Commit(ctx, la.Token, s, []record.Ref{{Hop: 0, Component: 0}}))
			}
			require.NoError(t, c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run"}}))

			l, held, err := b.ReadLease(ctx)
			require.NoError(t, err)
			assert.True(t, held, "ReadLease with the Lease deleted")
			assert.Equal(t, la.Token, l.Token, "ReadLease().Token with the Lease deleted")
			_, err = b.Acquire(ctx, "b", ttl)
			var le *state.LockedError
			require.ErrorAs(t, err, &le, "Acquire with the Lease deleted while lease %d runs", la.Token)
			assert.Equal(t, "Lease "+ns+"/run", le.Missing, "LockedError.Missing")
			assert.Equal(t, la.Token, le.Token, "LockedError.Token")
			first := le.Expires
			_, err = b.Acquire(ctx, "b", ttl)
			require.ErrorAs(t, err, &le, "Acquire again")
			assert.Equal(t, first, le.Expires, "a second Acquire moved the expiry of the lease taken as held")

			s.Hops[0].Components[1].Phase = record.Succeeded
			require.NoError(t, a.Commit(ctx, la.Token, s, []record.Ref{{Hop: 0, Component: 1}}), "Commit by the holder with the Lease deleted")
			err = b.Commit(ctx, old.Token, s, nil)
			assert.ErrorIs(t, err, state.ErrFenced, "Commit under the released lease %d", old.Token)
			_, err = b.Refresh(ctx, old)
			assert.ErrorIs(t, err, state.ErrFenced, "Refresh of the released lease %d", old.Token)

			if !tt.refreshed {
				// Nobody refreshes: past the TTL and the skew allowance,
				// the lock is free.
				var lease coordinationv1.Lease
				require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "run"}, &lease))
				past := metav1.NewMicroTime(time.Now().Add(-2 * ttl))
				lease.Spec.RenewTime = &past
				require.NoError(t, c.Update(ctx, &lease))
				lb, err := b.Acquire(ctx, "b", ttl)
				require.NoError(t, err, "Acquire after the lease taken as held ran out")
				assert.Greater(t, lb.Token, la.Token)
				err = a.Commit(ctx, la.Token, s, nil)
				assert.ErrorIs(t, err, state.ErrFenced, "Commit by the gone holder after the takeover")
				return
			}
			got, err := a.Refresh(ctx, la)
			require.NoError(t, err, "Refresh by the holder with the Lease deleted")
			assert.Equal(t, la.Token, got.Token)
			l, held, err = b.ReadLease(ctx)
			require.NoError(t, err)
			assert.True(t, held, "ReadLease after the refresh")
			assert.Equal(t, "a", l.Holder, "ReadLease().Holder after the refresh: the holder's name is back")
			assert.Equal(t, la.Token, l.Token)
			assert.Equal(t, ttl, l.TTL, "ReadLease().TTL after the refresh: the holder's")
			s.Hops[0].Components[2].Phase = record.Succeeded
			require.NoError(t, a.Commit(ctx, la.Token, s, []record.Ref{{Hop: 0, Component: 2}}), "Commit after the refresh")
			require.NoError(t, a.Save(ctx, la.Token, s), "Save after the refresh")
			require.NoError(t, a.Release(ctx, la), "Release by the holder")
			lb, err := b.Acquire(ctx, "b", ttl)
			require.NoError(t, err, "Acquire after the release")
			assert.Greater(t, lb.Token, la.Token)
			got2, err := b.Load(ctx)
			require.NoError(t, err)
			assert.Equal(t, record.Succeeded, got2.Hops[0].Components[2].Phase, "the holder's commits after the deletion are in")
		})
	}
}

// TestLeaseDeletedNoRecord: the Lease object deleted before the holder
// comes back to it, with no Acquire in between: its Refresh puts it
// back, its Release frees the lock (the next Acquire does not wait).
func TestLeaseDeletedNoRecord(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	ctx := context.Background()
	a := newStore(t, newClient(t), ns, "run")
	la, err := a.Acquire(ctx, "a", time.Minute)
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run"}}))
	_, err = a.Refresh(ctx, la)
	require.NoError(t, err, "Refresh with the Lease deleted")
	require.NoError(t, c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run"}}))
	require.NoError(t, a.Release(ctx, la), "Release with the Lease deleted")
	lb, err := newStore(t, newClient(t), ns, "run").Acquire(ctx, "b", time.Minute)
	require.NoError(t, err, "Acquire after the release")
	assert.Greater(t, lb.Token, la.Token)
}

// leaseCreateHook is a client whose first Create of a Lease runs hook
// before it is sent: another writer that gets there first.
type leaseCreateHook struct {
	client.Client
	hook func()
	done *atomic.Bool
}

func (c leaseCreateHook) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, ok := obj.(*coordinationv1.Lease); ok && c.done.CompareAndSwap(false, true) {
		c.hook()
	}
	return c.Client.Create(ctx, obj, opts...)
}

// TestLeaseDeletedShorterTTL: the Lease deleted while its holder runs
// with a long TTL, found by an acquirer with a shorter one: the lease
// taken as held lasts the holder's TTL, not the acquirer's, so the
// acquirer does not take over a holder that refreshes in time.
func TestLeaseDeletedShorterTTL(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	ctx := context.Background()
	a, b := newStore(t, newClient(t), ns, "run"), newStore(t, newClient(t), ns, "run")
	la, err := a.Acquire(ctx, "a", 2*time.Minute)
	require.NoError(t, err)
	require.NoError(t, a.Commit(ctx, la.Token, statetest.Big(4), nil))
	require.NoError(t, c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run"}}))
	_, err = b.Acquire(ctx, "b", 15*time.Second)
	var le *state.LockedError
	require.ErrorAs(t, err, &le, "Acquire with the Lease deleted")
	assert.False(t, le.Expires.Before(time.Now().Add(time.Minute)), "the lease taken as held ends at %v, before the holder's TTL of 2m from now", le.Expires)
	// 20s later (the acquirer's TTL and allowance have passed; the
	// holder, refreshing every 40s, has not refreshed yet).
	var lease coordinationv1.Lease
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "run"}, &lease))
	past := metav1.NewMicroTime(lease.Spec.RenewTime.Add(-20 * time.Second))
	lease.Spec.RenewTime = &past
	require.NoError(t, c.Update(ctx, &lease))
	_, err = b.Acquire(ctx, "b", 15*time.Second)
	require.ErrorIs(t, err, state.ErrLocked, "Acquire 20s after the Lease was put back, while lease %d (TTL 2m) runs", la.Token)
	_, err = a.Refresh(ctx, la)
	require.NoError(t, err, "Refresh by the holder")
}

// TestLeaseDeletedRefreshRacesPutBack: the Lease deleted, the holder's
// Refresh (or Release) about to create it again, and an Acquire puts it
// back first, held by an unknown holder under the holder's token: the
// Refresh takes it (the holder keeps its lease), the Release frees it.
func TestLeaseDeletedRefreshRacesPutBack(t *testing.T) {
	needAPIServer(t)
	for _, op := range []string{"Refresh", "Release"} {
		t.Run(op, func(t *testing.T) {
			c := newClient(t)
			ns := newNamespace(t, c)
			ctx := context.Background()
			b := newStore(t, newClient(t), ns, "run")
			var armed atomic.Bool
			armed.Store(true)
			a := newStore(t, leaseCreateHook{Client: newClient(t), done: &armed, hook: func() {
				_, err := b.Acquire(ctx, "b", time.Minute)
				assert.ErrorIs(t, err, state.ErrLocked, "Acquire with the Lease deleted")
			}}, ns, "run")
			la, err := a.Acquire(ctx, "a", time.Minute)
			require.NoError(t, err)
			require.NoError(t, c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run"}}))
			armed.Store(false)
			if op == "Refresh" {
				_, err = a.Refresh(ctx, la)
				require.NoError(t, err, "Refresh with the Lease put back under it")
				l, held, err := b.ReadLease(ctx)
				require.NoError(t, err)
				assert.True(t, held)
				assert.Equal(t, "a", l.Holder, "ReadLease().Holder after the refresh")
				return
			}
			require.NoError(t, a.Release(ctx, la), "Release with the Lease put back under it")
			lb, err := b.Acquire(ctx, "b", time.Minute)
			require.NoError(t, err, "Acquire after the release")
			assert.Greater(t, lb.Token, la.Token)
		})
	}
}

// TestLeaseDeletedPutBackRacesRelease: an Acquire that finds the Lease
// missing and finds, when it puts it back, that the holder released it
// meanwhile takes the lock (it is free), rather than refusing with a
// lease held until year 1.
func TestLeaseDeletedPutBackRacesRelease(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	ctx := context.Background()
	a := newStore(t, newClient(t), ns, "run")
	la, err := a.Acquire(ctx, "a", time.Minute)
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run"}}))
	var armed atomic.Bool
	b := newStore(t, leaseCreateHook{Client: newClient(t), done: &armed, hook: func() {
		assert.NoError(t, a.Release(ctx, la), "Release with the Lease deleted")
	}}, ns, "run")
	lb, err := b.Acquire(ctx, "b", time.Minute)
	require.NoError(t, err, "Acquire after the holder released the lock")
	assert.Greater(t, lb.Token, la.Token)
}
