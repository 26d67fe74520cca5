package statetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/state"
)

// testReadLease checks a backend's state.LeaseReader, when it has one:
// through another handle, ReadLease reports what Acquire would decide
// (a lease that holds the lock, one that expired, none), names the
// lease, and changes no record.
func testReadLease(t *testing.T, env Env) {
	a, b := env.Open(), env.Open()
	r, ok := b.(state.LeaseReader)
	if !ok {
		t.Skipf("%T is not a state.LeaseReader", b)
	}
	read := func(what string) (state.Lease, bool) {
		t.Helper()
		l, held, err := r.ReadLease(t.Context())
		require.NoError(t, err, "ReadLease %s", what)
		return l, held
	}
	// held must be what Acquire decides.
	requireAcquireAgrees := func(what string, held bool) {
		t.Helper()
		l, err := b.Acquire(t.Context(), "prober", env.TTL)
		if held {
			require.ErrorIs(t, err, state.ErrLocked, "%s: ReadLease said held, Acquire must refuse", what)
			return
		}
		require.NoError(t, err, "%s: ReadLease said not held, Acquire must succeed", what)
		require.NoError(t, b.Release(t.Context(), l))
	}

	l, held := read("of a fresh store")
	assert.Equal(t, state.Lease{}, l, "ReadLease of a fresh store: the lease")
	assert.False(t, held, "ReadLease of a fresh store says held")
	requireAcquireAgrees("fresh store", held)

	la := acquire(t, a, "a", env)
	require.NoError(t, a.Save(t.Context(), la.Token, Sample(1)))
	before := records(env)
	l, held = read("of a held lock")
	assert.True(t, held, "ReadLease of a lease just acquired = not held, want held")
	assert.Equal(t, "a", l.Holder, "ReadLease().Holder")
	assert.Equal(t, la.Token, l.Token, "ReadLease().Token")
	assert.Equal(t, env.TTL, l.TTL, "ReadLease().TTL")
	// The backend's view of the expiry; etcd's is whole seconds.
	assert.WithinDuration(t, la.Expires, l.Expires, 2*time.Second, "ReadLease().Expires = %v, want about the holder's %v", l.Expires, la.Expires)
	assert.Equal(t, before, records(env), "ReadLease changed a record")
	requireAcquireAgrees("held lock", held)
	require.NoError(t, a.Save(t.Context(), la.Token, Sample(2)), "the holder's lease did not survive ReadLease")

	ra, err := a.Refresh(t.Context(), la)
	require.NoError(t, err)
	l, held = read("after a refresh")
	assert.True(t, held, "ReadLease after a refresh = not held, want held")
	assert.Equal(t, ra.Token, l.Token, "ReadLease().Token after a refresh")

	env.Expire(ra)
	before = records(env)
	l, held = read("of an expired lease")
	assert.Equal(t, before, records(env), "ReadLease of an expired lease changed a record")
	assert.False(t, held, "ReadLease of an expired lease = held, want not held")
	if l != (state.Lease{}) { // etcd forgets an expired lease
		assert.Equal(t, "a", l.Holder, "ReadLease().Holder of an expired lease")
		assert.Equal(t, la.Token, l.Token, "ReadLease().Token of an expired lease")
	}
	requireAcquireAgrees("expired lease", held)

	lb := acquire(t, b, "b", env)
	l, held = read("after a takeover")
	assert.True(t, held, "ReadLease after a takeover = not held, want held")
	assert.Equal(t, "b", l.Holder, "ReadLease().Holder after a takeover")
	assert.Equal(t, lb.Token, l.Token, "ReadLease().Token after a takeover")
	require.NoError(t, b.Release(t.Context(), lb))
	l, held = read("after a release")
	assert.Equal(t, state.Lease{}, l, "ReadLease after a release: the lease")
	assert.False(t, held, "ReadLease after a release says held")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err = r.ReadLease(ctx)
	assert.ErrorIs(t, err, context.Canceled, "ReadLease with a cancelled context")
}

// records returns every stored record, by name.
func records(env Env) map[string]string {
	if env.Raw == nil {
		return nil
	}
	m := map[string]string{}
	for _, n := range env.Raw.Names() {
		m[n] = string(env.Raw.Read(n))
	}
	return m
}
