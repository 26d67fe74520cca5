package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

// TestHeadAndLeaseDeleted deletes the head and the Lease together while
// their holder runs (the store starts over, its tokens from 1 again, see
// the package documentation): the old holder's handle, whose token is
// issued again to a new holder, is fenced all the same, and the new
// holder's status stands.
func TestHeadAndLeaseDeleted(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	ctx := context.Background()
	a := newStore(t, newClient(t), ns, "run")
	first, err := a.Acquire(ctx, "first", time.Minute)
	require.NoError(t, err)
	require.NoError(t, a.Commit(ctx, first.Token, statetest.Big(4), nil))

	require.NoError(t, c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run"}}))
	require.NoError(t, c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run"}}))
	b := newStore(t, newClient(t), ns, "run")
	lb, err := b.Acquire(ctx, "b", time.Minute)
	require.NoError(t, err)
	require.Equal(t, first.Token, lb.Token, "the test needs the token issued again")
	require.NoError(t, b.Save(ctx, lb.Token, statetest.Big(2)))

	s := statetest.Big(4)
	s.Hops[0].Components[0].Phase = record.Succeeded
	err = a.Save(ctx, first.Token, s)
	require.ErrorIs(t, err, state.ErrFenced, "Save")
	require.ErrorContains(t, err, "the lock is held by b (lease 1)", "names the new holder, not a free lock")
	require.ErrorContains(t, err, "the store was started over since this handle acquired lease 1")
	require.ErrorIs(t, a.Commit(ctx, first.Token, s, []record.Ref{{Hop: 0, Component: 0}}), state.ErrFenced, "Commit")
	_, err = a.Refresh(ctx, first)
	require.ErrorIs(t, err, state.ErrFenced, "Refresh")
	require.ErrorIs(t, a.Release(ctx, first), state.ErrFenced, "Release")
	got, err := b.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, statetest.Big(2), got, "the new holder's status stands")
}
