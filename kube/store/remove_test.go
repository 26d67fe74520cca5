package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

// TestRemove: Remove under the current lease deletes the store's records,
// its head and its Lease (a labelled copy someone made stays); under any
// other token it is fenced and deletes nothing. The store is new again
// afterwards.
func TestRemove(t *testing.T) {
	needAPIServer(t)
	ctx := context.Background()
	c := newClient(t)
	ns := newNamespace(t, c)
	s := newStore(t, newClient(t), ns, "run")
	old, err := s.Acquire(ctx, "op/1", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, old))
	l, err := s.Acquire(ctx, "op/1", time.Minute)
	require.NoError(t, err)
	st := statetest.Big(8)
	require.NoError(t, s.Save(ctx, l.Token, st))
	st.Hops[0].Components[0].Phase = record.Succeeded
	require.NoError(t, s.Commit(ctx, l.Token, st, []record.Ref{{Hop: 0, Component: 0}}))
	backup := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run-backup", Labels: map[string]string{"hopdag.io/store": "run"}}}
	require.NoError(t, c.Create(ctx, backup))
	labelled := func() []string {
		var list corev1.ConfigMapList
		require.NoError(t, c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"hopdag.io/store": "run"}))
		var names []string
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
		return names
	}
	before := labelled()
	require.Greater(t, len(before), 2, "the store's objects before Remove: %v", before)

	err = newStore(t, newClient(t), ns, "run").Remove(ctx, old.Token)
	require.ErrorIs(t, err, state.ErrFenced, "Remove under the released lease %d", old.Token)
	assert.Equal(t, before, labelled(), "a fenced Remove deleted objects")

	require.NoError(t, s.Remove(ctx, l.Token))
	assert.Equal(t, []string{"run-backup"}, labelled(), "the store's ConfigMaps after Remove, want only the copy someone made")
	err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "run"}, &coordinationv1.Lease{})
	assert.True(t, apierrors.IsNotFound(err), "Get of the Lease after Remove = %v, want NotFound", err)

	fresh := newStore(t, newClient(t), ns, "run")
	got, err := fresh.Load(ctx)
	require.NoError(t, err)
	assert.Nil(t, got, "Load after Remove")
	nl, err := fresh.Acquire(ctx, "op/2", time.Minute)
	require.NoError(t, err, "Acquire after Remove")
	assert.Equal(t, uint64(1), nl.Token, "the first token after Remove")
	require.ErrorIs(t, s.Save(ctx, l.Token, st), state.ErrFenced, "Save by the removed store's holder")
}
