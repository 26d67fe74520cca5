package etcdstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/etcdstore"
	"github.com/hopdag/hopdag/state/statetest"
)

// TestLockKeyDeleted deletes the lock key (etcdctl del P/lock) while its
// holder runs: another Acquire is refused, naming the missing key, for as
// long as the holder's etcd lease lives; the holder's commits go on, its
// Refresh puts the key back, a stale token stays fenced, and after the
// holder's Release the next token is above every one before. With the
// issued record deleted too, the lock is taken as held for one TTL from
// when that was first seen, not extended by Acquires that see it again.
func TestLockKeyDeleted(t *testing.T) {
	const ttl = 6 * time.Second
	tests := []struct {
		name string
		// deleted are the keys (under the prefix) removed by hand.
		deleted []string
		// wrote: the holder committed before the deletion.
		wrote bool
	}{
		{name: "lock key, the holder wrote", deleted: []string{"lock"}, wrote: true},
		{name: "lock key, the holder never wrote", deleted: []string{"lock"}},
		{name: "lock and issued keys, the holder wrote", deleted: []string{"lock", "issued"}, wrote: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			cli := client(t)
			p := prefix()
			a, b := etcdstore.New(cli, p), etcdstore.New(cli, p)
			old, err := a.Acquire(ctx, "old", ttl)
			require.NoError(t, err)
			s := statetest.Big(4)
			require.NoError(t, a.Commit(ctx, old.Token, s, nil))
			require.NoError(t, a.Release(ctx, old))
			la, err := a.Acquire(ctx, "a", ttl)
			require.NoError(t, err)
			if tt.wrote {
				require.NoError(t, a.Commit(ctx, la.Token, s, []record.Ref{{Hop: 0, Component: 0}}))
			}
			for _, k := range tt.deleted {
				_, err := cli.Delete(ctx, p+k)
				require.NoError(t, err)
			}

			_, err = b.Acquire(ctx, "b", ttl)
			var le *state.LockedError
			require.ErrorAs(t, err, &le, "Acquire with %v deleted while lease %d runs", tt.deleted, la.Token)
			assert.Equal(t, p+"lock", le.Missing, "LockedError.Missing")
			assert.Equal(t, la.Token, le.Token, "LockedError.Token")
			assert.False(t, le.Expires.IsZero(), "LockedError.Expires")
			first := le.Expires
			_, err = b.Acquire(ctx, "b", ttl)
			require.ErrorAs(t, err, &le, "Acquire again")
			assert.False(t, le.Expires.After(first.Add(time.Second)), "a second Acquire extended the lease taken as held: %v, then %v", first, le.Expires)
			_, held, err := b.ReadLease(ctx)
			require.NoError(t, err)
			assert.True(t, held, "ReadLease: held, with the lock key deleted")

			// The holder goes on: a commit, a refresh that puts the key
			// back, another commit.
			s.Hops[0].Components[1].Phase = record.Succeeded
			require.NoError(t, a.Commit(ctx, la.Token, s, []record.Ref{{Hop: 0, Component: 1}}), "Commit by the holder with %v deleted", tt.deleted)
			got, err := a.Refresh(ctx, la)
			require.NoError(t, err, "Refresh by the holder with %v deleted", tt.deleted)
			assert.Equal(t, la.Token, got.Token, "Refresh kept the token")
			resp, err := cli.Get(ctx, p+"lock")
			require.NoError(t, err)
			require.Len(t, resp.Kvs, 1, "the Refresh put the lock key back")
			assert.NotZero(t, resp.Kvs[0].Lease, "the lock key is bound to an etcd lease")
			l, held, err := b.ReadLease(ctx)
			require.NoError(t, err)
			assert.True(t, held, "ReadLease after the refresh")
			assert.Equal(t, "a", l.Holder, "ReadLease().Holder after the refresh")
			assert.Equal(t, la.Token, l.Token, "ReadLease().Token after the refresh")
			_, err = b.Acquire(ctx, "b", ttl)
			require.ErrorAs(t, err, &le, "Acquire after the refresh")
			assert.Equal(t, "a", le.Holder, "LockedError.Holder after the refresh")
			assert.Empty(t, le.Missing, "LockedError.Missing after the refresh")
			s.Hops[0].Components[2].Phase = record.Succeeded
			require.NoError(t, a.Commit(ctx, la.Token, s, []record.Ref{{Hop: 0, Component: 2}}), "Commit after the refresh")
			require.NoError(t, a.Save(ctx, la.Token, s), "Save (a snapshot) after the refresh")

			// A stale token stays fenced.
			err = b.Commit(ctx, old.Token, s, nil)
			assert.ErrorIs(t, err, state.ErrFenced, "Commit under the released lease %d", old.Token)
			_, err = b.Refresh(ctx, old)
			assert.ErrorIs(t, err, state.ErrFenced, "Refresh of the released lease %d", old.Token)

			require.NoError(t, a.Release(ctx, la), "Release by the holder")
			lb, err := b.Acquire(ctx, "b", ttl)
			require.NoError(t, err, "Acquire after the release")
			assert.Greater(t, lb.Token, la.Token, "the token after the release")
			err = a.Commit(ctx, la.Token, s, nil)
			assert.ErrorIs(t, err, state.ErrFenced, "Commit under the released lease %d", la.Token)
			loaded, err := b.Load(ctx)
			require.NoError(t, err)
			assert.Equal(t, statetest.Big(4).Hops[0].Components[0].Name, loaded.Hops[0].Components[0].Name)
			assert.Equal(t, record.Succeeded, loaded.Hops[0].Components[2].Phase, "the holder's commits after the deletion are in")
			require.NoError(t, b.Release(ctx, lb))
		})
	}
}

// TestLockKeyDeletedHolderGone: the lock key is deleted and its holder
// is gone (its etcd lease revoked, as etcd expires it): the next Acquire
// takes the lock at once, with a greater token.
func TestLockKeyDeletedHolderGone(t *testing.T) {
	ctx := t.Context()
	cli := client(t)
	p := prefix()
	a := etcdstore.New(cli, p)
	la, err := a.Acquire(ctx, "a", time.Minute)
	require.NoError(t, err)
	resp, err := cli.Get(ctx, p+"lock")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	_, err = cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	require.NoError(t, err)
	lb, err := etcdstore.New(cli, p).Acquire(ctx, "b", time.Minute)
	require.NoError(t, err, "Acquire after the holder's lease expired")
	assert.Greater(t, lb.Token, la.Token)
	_, err = a.Refresh(ctx, la)
	assert.ErrorIs(t, err, state.ErrFenced, "Refresh of the expired lease")
}

// TestLockKeyWithoutLease: a lock key put by hand, bound to no etcd
// lease, would never expire: Acquire says so, naming the key, rather
// than asking to wait for an expiry that never comes.
func TestLockKeyWithoutLease(t *testing.T) {
	ctx := t.Context()
	cli := client(t)
	p := prefix()
	_, err := cli.Put(ctx, p+"lock", "someone")
	require.NoError(t, err)
	_, err = etcdstore.New(cli, p).Acquire(ctx, "a", time.Minute)
	var ce *state.CorruptError
	require.ErrorAs(t, err, &ce, "Acquire over a lock key without an etcd lease")
	assert.Equal(t, p+"lock", ce.Path)
	assert.NotContains(t, err.Error(), "wait for the lease to expire")
	assert.Contains(t, err.Error(), "no etcd lease")
}

// TestSnapshotHeadMissing: with the snapshot head deleted, the error
// names it, not the first commit after it.
func TestSnapshotHeadMissing(t *testing.T) {
	ctx := t.Context()
	cli := client(t)
	p := prefix()
	a := etcdstore.New(cli, p)
	l, err := a.Acquire(ctx, "a", time.Minute)
	require.NoError(t, err)
	s := statetest.Big(4)
	require.NoError(t, a.Commit(ctx, l.Token, s, nil))
	s.Hops[0].Components[0].Phase = record.Succeeded
	require.NoError(t, a.Commit(ctx, l.Token, s, []record.Ref{{Hop: 0, Component: 0}}))
	_, err = cli.Delete(ctx, p+"snap")
	require.NoError(t, err)
	_, err = etcdstore.New(cli, p).Load(ctx)
	var ce *state.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, p+"snap", ce.Path, "CorruptError.Path: %v", err)
	assert.Contains(t, err.Error(), "snapshot")
	assert.Contains(t, err.Error(), "missing")
}

// TestNestedPrefix: runs under prefixes nested in each other (P and
// P+"log/", P+"snap/1/", P+"log/0/") do not see each other's keys, and a
// snapshot of one deletes none of the other's; a key of the store's own
// form that is bad is still corrupt.
func TestNestedPrefix(t *testing.T) {
	for _, inner := range []string{"log/", "snap/", "snap/1/", "log/0/", "snap/x/"} {
		t.Run(inner, func(t *testing.T) {
			ctx := t.Context()
			cli := client(t)
			p := prefix()
			outer, nested := etcdstore.New(cli, p), etcdstore.New(cli, p+inner)
			lo, err := outer.Acquire(ctx, "outer", time.Minute)
			require.NoError(t, err)
			ln, err := nested.Acquire(ctx, "nested", time.Minute)
			require.NoError(t, err)
			so, sn := statetest.Big(4), statetest.Big(6)
			for i := range 3 {
				so.Hops[0].Components[i].Phase = record.Succeeded
				sn.Hops[0].Components[i].Phase = record.Succeeded
				require.NoError(t, outer.Commit(ctx, lo.Token, so, []record.Ref{{Hop: 0, Component: i}}))
				require.NoError(t, nested.Commit(ctx, ln.Token, sn, []record.Ref{{Hop: 0, Component: i}}))
			}
			require.NoError(t, outer.Save(ctx, lo.Token, so), "a snapshot of the outer run")
			require.NoError(t, nested.Save(ctx, ln.Token, sn), "a snapshot of the nested run")
			sn.Hops[0].Components[3].Phase = record.Succeeded
			require.NoError(t, nested.Commit(ctx, ln.Token, sn, []record.Ref{{Hop: 0, Component: 3}}))
			for name, c := range map[string]struct {
				s    *etcdstore.Store
				want int
			}{"outer": {etcdstore.New(cli, p), 4}, "nested": {etcdstore.New(cli, p+inner), 6}} {
				got, err := c.s.Load(ctx)
				require.NoError(t, err, "Load of the %s run", name)
				require.NotNil(t, got, "Load of the %s run", name)
				assert.Len(t, got.Hops[0].Components, c.want, "components of the %s run", name)
			}
			// A bad key of the outer run's own form is still corrupt.
			_, err = cli.Put(ctx, p+"log/00000000000000000009", "garbage")
			require.NoError(t, err)
			_, err = etcdstore.New(cli, p).Load(ctx)
			var ce *state.CorruptError
			require.ErrorAs(t, err, &ce, "Load with a bad key of the store's form")
			assert.Equal(t, p+"log/00000000000000000009", ce.Path)
		})
	}
}

// TestNestedAmongOwnKeys: a prefix nested among the store's own keys
// (P+"log/" and 20 digits, which a snapshot's range delete would take)
// is refused, naming the key, and the nested run's keys survive.
func TestNestedAmongOwnKeys(t *testing.T) {
	for _, inner := range []string{"log/00000000000000000001/", "snap/00000000000000000001/"} {
		t.Run(inner, func(t *testing.T) {
			ctx := t.Context()
			cli := client(t)
			p := prefix()
			nested := etcdstore.New(cli, p+inner)
			ln, err := nested.Acquire(ctx, "nested", time.Minute)
			require.NoError(t, err)
			require.NoError(t, nested.Commit(ctx, ln.Token, statetest.Big(4), nil))
			outer := etcdstore.New(cli, p)
			_, err = outer.Load(ctx)
			require.Error(t, err, "Load of the outer run")
			assert.Contains(t, err.Error(), p+inner, "the error names the nested key")
			assert.Contains(t, err.Error(), "do not nest")
			if lo, err := outer.Acquire(ctx, "outer", time.Minute); err == nil {
				assert.Error(t, outer.Save(ctx, lo.Token, statetest.Big(2)), "Save of the outer run")
			}
			got, err := etcdstore.New(cli, p+inner).Load(ctx)
			require.NoError(t, err, "Load of the nested run after the outer's Save")
			assert.Len(t, got.Hops[0].Components, 4)
		})
	}
}

// deleteKeys deletes keys (under p) by hand, as etcdctl del would.
func deleteKeys(t *testing.T, cli *clientv3.Client, p string, keys ...string) {
	t.Helper()
	for _, k := range keys {
		_, err := cli.Delete(t.Context(), p+k)
		require.NoError(t, err)
	}
}

// TestRecordsDeletedStaleTokenFenced: the lock and issued keys deleted
// after a newer lease was acquired that has not written yet: the lease
// taken as held is the status's last writer's, whose lease had been
// released (or expired), and a write or refresh under that stale token
// is fenced, whichever handle presents it.
func TestRecordsDeletedStaleTokenFenced(t *testing.T) {
	for _, end := range []string{"released", "expired"} {
		t.Run(end, func(t *testing.T) {
			ctx := t.Context()
			cli := client(t)
			p := prefix()
			a, b := etcdstore.New(cli, p), etcdstore.New(cli, p)
			old, err := a.Acquire(ctx, "old", time.Minute)
			require.NoError(t, err)
			s := statetest.Big(4)
			require.NoError(t, a.Commit(ctx, old.Token, s, nil))
			if end == "released" {
				require.NoError(t, a.Release(ctx, old))
			} else {
				expire(t, cli, p, old)
			}
			la, err := b.Acquire(ctx, "a", time.Minute)
			require.NoError(t, err, "Acquire after the old lease %s", end)
			deleteKeys(t, cli, p, "lock", "issued")

			_, err = etcdstore.New(cli, p).Acquire(ctx, "c", time.Minute)
			require.ErrorIs(t, err, state.ErrLocked, "Acquire with the lock's records deleted")
			for name, h := range map[string]*etcdstore.Store{"the old holder's handle": a, "another handle": etcdstore.New(cli, p)} {
				s.Hops[0].Components[0].Phase = record.Succeeded
				err := h.Commit(ctx, old.Token, s, []record.Ref{{Hop: 0, Component: 0}})
				assert.ErrorIs(t, err, state.ErrFenced, "Commit through %s under lease %d, %s before lease %d was acquired", name, old.Token, end, la.Token)
				_, err = h.Refresh(ctx, old)
				assert.ErrorIs(t, err, state.ErrFenced, "Refresh through %s of lease %d, %s", name, old.Token, end)
			}
			got, err := etcdstore.New(cli, p).Load(ctx)
			require.NoError(t, err)
			assert.Equal(t, record.Pending, got.Hops[0].Components[0].Phase, "a stale holder's commit landed")
		})
	}
}

// TestRecordsDeletedHolderGoesOn: the lock and issued keys deleted while
// their holder runs, with no Acquire before its next refresh: the holder
// keeps its lease (the refresh, or a commit, puts the records back), and
// a reader meanwhile says the lock is held.
func TestRecordsDeletedHolderGoesOn(t *testing.T) {
	for _, first := range []string{"Refresh", "Commit"} {
		t.Run(first, func(t *testing.T) {
			ctx := t.Context()
			cli := client(t)
			p := prefix()
			a := etcdstore.New(cli, p)
			la, err := a.Acquire(ctx, "a", time.Minute)
			require.NoError(t, err)
			s := statetest.Big(4)
			require.NoError(t, a.Commit(ctx, la.Token, s, nil))
			deleteKeys(t, cli, p, "lock", "issued")

			l, held, err := etcdstore.New(cli, p).ReadLease(ctx)
			require.NoError(t, err)
			assert.True(t, held, "ReadLease with the lock's records deleted while lease %d runs", la.Token)
			assert.Equal(t, la.Token, l.Token, "ReadLease().Token")

			s.Hops[0].Components[0].Phase = record.Succeeded
			if first == "Refresh" {
				_, err = a.Refresh(ctx, la)
				require.NoError(t, err, "Refresh by the holder with the lock's records deleted")
			} else {
				require.NoError(t, a.Commit(ctx, la.Token, s, []record.Ref{{Hop: 0, Component: 0}}), "Commit by the holder with the lock's records deleted")
			}
			_, err = etcdstore.New(cli, p).Acquire(ctx, "b", time.Minute)
			var le *state.LockedError
			require.ErrorAs(t, err, &le, "Acquire after the holder's %s", first)
			assert.Equal(t, "a", le.Holder, "LockedError.Holder")
			assert.Equal(t, la.Token, le.Token, "LockedError.Token")
			got, err := a.Refresh(ctx, la)
			require.NoError(t, err, "Refresh")
			assert.Equal(t, la.Token, got.Token)
			s.Hops[0].Components[1].Phase = record.Succeeded
			require.NoError(t, a.Commit(ctx, la.Token, s, []record.Ref{{Hop: 0, Component: 1}}), "Commit")
			require.NoError(t, a.Release(ctx, la), "Release")
			lb, err := etcdstore.New(cli, p).Acquire(ctx, "b", time.Minute)
			require.NoError(t, err, "Acquire after the release")
			assert.Greater(t, lb.Token, la.Token)
		})
	}
}

// TestIssuedDeletedAfterPutBack: the lock key deleted and put back by
// its holder's refresh, then the issued key deleted: the holder keeps
// its lease.
func TestIssuedDeletedAfterPutBack(t *testing.T) {
	ctx := t.Context()
	cli := client(t)
	p := prefix()
	a := etcdstore.New(cli, p)
	la, err := a.Acquire(ctx, "a", time.Minute)
	require.NoError(t, err)
	s := statetest.Big(4)
	require.NoError(t, a.Commit(ctx, la.Token, s, nil))
	deleteKeys(t, cli, p, "lock")
	_, err = a.Refresh(ctx, la)
	require.NoError(t, err, "Refresh with the lock key deleted")
	deleteKeys(t, cli, p, "issued")
	_, err = a.Refresh(ctx, la)
	require.NoError(t, err, "Refresh with the issued key deleted after the lock key was put back")
	s.Hops[0].Components[0].Phase = record.Succeeded
	require.NoError(t, a.Commit(ctx, la.Token, s, []record.Ref{{Hop: 0, Component: 0}}), "Commit")
	_, err = etcdstore.New(cli, p).Acquire(ctx, "b", time.Minute)
	var le *state.LockedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, la.Token, le.Token, "LockedError.Token")
}

// TestRecordsDeletedTwice: the holder's lease taken as held (both keys
// deleted) runs out, another holder acquires and never writes, and both
// keys are deleted again: the first holder, which saw itself fenced,
// does not take the lease back though it was the status's last writer.
func TestRecordsDeletedTwice(t *testing.T) {
	ctx := t.Context()
	cli := client(t)
	p := prefix()
	a := etcdstore.New(cli, p)
	la, err := a.Acquire(ctx, "a", time.Minute)
	require.NoError(t, err)
	s := statetest.Big(4)
	require.NoError(t, a.Commit(ctx, la.Token, s, nil))
	deleteKeys(t, cli, p, "lock", "issued")
	_, err = etcdstore.New(cli, p).Acquire(ctx, "b", time.Minute)
	var le *state.LockedError
	require.ErrorAs(t, err, &le, "Acquire with both keys deleted")
	expire(t, cli, p, state.Lease{Token: le.Token}) // the lease taken as held runs out
	lc, err := etcdstore.New(cli, p).Acquire(ctx, "c", time.Minute)
	require.NoError(t, err, "Acquire once the lease taken as held ran out")
	s.Hops[0].Components[0].Phase = record.Succeeded
	err = a.Commit(ctx, la.Token, s, []record.Ref{{Hop: 0, Component: 0}})
	require.ErrorIs(t, err, state.ErrFenced, "Commit under lease %d while lease %d holds the lock", la.Token, lc.Token)

	deleteKeys(t, cli, p, "lock", "issued")
	_, err = etcdstore.New(cli, p).Acquire(ctx, "d", time.Minute)
	require.ErrorIs(t, err, state.ErrLocked, "Acquire with both keys deleted again")
	err = a.Commit(ctx, la.Token, s, []record.Ref{{Hop: 0, Component: 0}})
	assert.ErrorIs(t, err, state.ErrFenced, "Commit under lease %d, fenced by lease %d before", la.Token, lc.Token)
	_, err = a.Refresh(ctx, la)
	assert.ErrorIs(t, err, state.ErrFenced, "Refresh of lease %d, fenced by lease %d before", la.Token, lc.Token)
}

// TestUnclaimedMessage: a refused claim of the lease taken as held says
// why, and still matches state.ErrFenced and *state.FencedError.
func TestUnclaimedMessage(t *testing.T) {
	ctx := t.Context()
	cli := client(t)
	p := prefix()
	a := etcdstore.New(cli, p)
	la, err := a.Acquire(ctx, "a", time.Minute)
	require.NoError(t, err)
	require.NoError(t, a.Commit(ctx, la.Token, statetest.Big(4), nil))
	deleteKeys(t, cli, p, "lock", "issued")
	_, err = etcdstore.New(cli, p).Refresh(ctx, la)
	var fe *state.FencedError
	require.ErrorAs(t, err, &fe, "Refresh of lease %d through a handle that did not acquire it", la.Token)
	assert.Equal(t, la.Token, fe.Current, "FencedError.Current: the lease taken as held")
	assert.Contains(t, err.Error(), p+"issued", "the error names the deleted records")
	assert.Contains(t, err.Error(), "only the handle that acquired it", "the error says who can take it back")
}
