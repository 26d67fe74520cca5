package store_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

// fenceFails refuses writes of the head ConfigMap named head while
// refusing is set, as a client without RBAC for them would; once it has
// refused one and lease is set, it refuses writes of the Lease too (the
// acquisition's attempt to free it again) until leaseRefused is cleared.
type fenceFails struct {
	client.Client
	head         string
	lease        bool
	refusing     atomic.Bool
	leaseRefused atomic.Bool
}

func (c *fenceFails) refuse(obj client.Object) error {
	switch obj.(type) {
	case *corev1.ConfigMap:
		if c.refusing.Load() && obj.GetName() == c.head {
			if c.lease {
				c.leaseRefused.Store(true)
			}
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, obj.GetName(), errors.New("injected: cannot write the head"))
		}
	case *coordinationv1.Lease:
		if c.leaseRefused.Load() {
			return apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, obj.GetName(), errors.New("injected: cannot write the Lease"))
		}
	}
	return nil
}

func (c *fenceFails) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.refuse(obj); err != nil {
		return err
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c *fenceFails) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.refuse(obj); err != nil {
		return err
	}
	return c.Client.Update(ctx, obj, opts...)
}

// TestAcquireFenceFails: an Acquire whose second write (the head's fence)
// fails leaves no Lease held by nobody: it frees the Lease again, and the
// same holder's retry gets the lock at once, and so does another holder.
// When freeing the Lease fails too, the holder's own retry still gets it
// (other holders wait for its expiry). The token of the retry is greater
// than any handed out before.
func TestAcquireFenceFails(t *testing.T) {
	needAPIServer(t)
	tests := []struct {
		name string
		// saved: the store has a record (the head exists: its update
		// fails, not its creation).
		saved bool
		// leaseToo: freeing the Lease fails as well.
		leaseToo bool
	}{
		{name: "new store"},
		{name: "store with a record", saved: true},
		{name: "new store, freeing the Lease fails too", leaseToo: true},
		{name: "store with a record, freeing the Lease fails too", saved: true, leaseToo: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			ns := newNamespace(t, newClient(t))
			fc := &fenceFails{Client: newClient(t), head: "run", lease: tt.leaseToo}
			s := newStore(t, fc, ns, "run")
			var before uint64
			if tt.saved {
				l, err := s.Acquire(ctx, "op/1", time.Minute)
				require.NoError(t, err)
				require.NoError(t, s.Save(ctx, l.Token, statetest.Sample(1)))
				require.NoError(t, s.Release(ctx, l))
				before = l.Token
			}

			fc.refusing.Store(true)
			_, err := s.Acquire(ctx, "op/1", time.Minute)
			require.Error(t, err, "Acquire with the fence write refused")
			assert.True(t, apierrors.IsForbidden(err), "Acquire's error = %v, want the injected Forbidden", err)
			assert.Contains(t, err.Error(), "raising the fence of "+ns+"/run", "Acquire's error says which write failed")
			assert.NotErrorIs(t, err, state.ErrLocked, "the failed Acquire")
			fc.refusing.Store(false)
			fc.leaseRefused.Store(false)

			other := newStore(t, newClient(t), ns, "run")
			_, held, err := other.ReadLease(ctx)
			require.NoError(t, err)
			if !tt.leaseToo {
				assert.False(t, held, "ReadLease after the failed Acquire: the Lease is held, want it freed")
				lo, err := other.Acquire(ctx, "op/2", time.Minute)
				require.NoError(t, err, "another holder's Acquire after the failed one")
				assert.Greater(t, lo.Token, before, "another holder's token")
				require.NoError(t, other.Release(ctx, lo))
				before = lo.Token
			} else {
				_, err := other.Acquire(ctx, "op/2", time.Minute)
				require.ErrorIs(t, err, state.ErrLocked, "another holder's Acquire while the Lease the failed Acquire wrote runs")
			}

			l, err := s.Acquire(ctx, "op/1", time.Minute)
			require.NoError(t, err, "the same holder's retry of the failed Acquire")
			assert.Greater(t, l.Token, before, "the retry's token")
			require.NoError(t, s.Save(ctx, l.Token, statetest.Sample(2)), "Save under the retry's token")
			got, err := other.Load(ctx)
			require.NoError(t, err)
			assert.Equal(t, statetest.Sample(2), got, "the record after the retry's Save")
		})
	}
}

// TestAcquireSupersededByItself: two Acquires under one holder name
// racing, the second taking over the Lease the first wrote before the
// first raised the fence (the rule that lets a holder take back its own
// unfinished acquisition): the first is refused, not handed a token that
// is already fenced.
func TestAcquireSupersededByItself(t *testing.T) {
	needAPIServer(t)
	ctx := context.Background()
	ns := newNamespace(t, newClient(t))
	second := newStore(t, newClient(t), ns, "run")
	var lb state.Lease
	hook := &beforeFence{Client: newClient(t), head: "run", hook: func() {
		var err error
		lb, err = second.Acquire(ctx, "op/1", time.Minute)
		require.NoError(t, err, "the second Acquire, between the first's two writes")
	}}
	_, err := newStore(t, hook, ns, "run").Acquire(ctx, "op/1", time.Minute)
	require.True(t, hook.done.Load(), "the hook ran")
	var le *state.LockedError
	require.ErrorAs(t, err, &le, "the first Acquire, superseded")
	assert.Equal(t, lb.Token, le.Token, "LockedError.Token: the second Acquire's")
	require.NoError(t, second.Save(ctx, lb.Token, statetest.Sample(1)), "Save under the second Acquire's token")
}

// beforeFence runs hook once, before the first write of the head.
type beforeFence struct {
	client.Client
	head string
	hook func()
	done atomic.Bool
}

func (c *beforeFence) run(obj client.Object) {
	if _, ok := obj.(*corev1.ConfigMap); ok && obj.GetName() == c.head && c.done.CompareAndSwap(false, true) {
		c.hook()
	}
}

func (c *beforeFence) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.run(obj)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *beforeFence) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.run(obj)
	return c.Client.Update(ctx, obj, opts...)
}
