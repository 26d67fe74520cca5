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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "store-"}}
	require.NoError(t, c.Create(context.Background(), ns))
	return ns.Name
}

// A token acquired through another handle is current for this one too,
// though this handle's view predates the acquisition.
func TestTokenAcquiredOnAnotherHandle(t *testing.T) {
	needAPIServer(t)
	ns := newNamespace(t, newClient(t))
	ctx := context.Background()
	a, b := newStore(t, newClient(t), ns, "run"), newStore(t, newClient(t), ns, "run")
	la, err := a.Acquire(ctx, "p", time.Minute)
	require.NoError(t, err)
	require.NoError(t, a.Save(ctx, la.Token, statetest.Sample(1)))
	require.NoError(t, a.Release(ctx, la))
	lb, err := b.Acquire(ctx, "p", time.Minute)
	require.NoError(t, err)
	require.NoError(t, a.Save(ctx, lb.Token, statetest.Sample(2)), "a's view is older than b's Acquire")
	err = a.Save(ctx, la.Token, statetest.Sample(3))
	require.ErrorIs(t, err, state.ErrFenced, "the released token")
	got, err := b.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, statetest.Sample(2), got)
}

// conflictAfterApply applies an Update of the head and then answers with
// a Conflict, as when client-go resends a PUT the server applied (a 5xx
// with Retry-After on the way back) and the second one conflicts.
type conflictAfterApply struct {
	client.Client
	head  string
	armed *atomic.Bool
}

func (c conflictAfterApply) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	err := c.Client.Update(ctx, obj, opts...)
	if _, ok := obj.(*corev1.ConfigMap); ok && err == nil && obj.GetName() == c.head && c.armed.CompareAndSwap(true, false) {
		return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, c.head, errors.New("the object has been modified"))
	}
	return err
}

// A head update that landed but answered Conflict is a landed write: the
// records it names stay, for a commit and for a snapshot.
func TestConflictAfterApplyKeepsTheWrite(t *testing.T) {
	needAPIServer(t)
	ns := newNamespace(t, newClient(t))
	ctx := context.Background()
	var armed atomic.Bool
	s := newStore(t, conflictAfterApply{Client: newClient(t), head: "run", armed: &armed}, ns, "run")
	l, err := s.Acquire(ctx, "p", time.Minute)
	require.NoError(t, err)
	st := statetest.Big(20)
	require.NoError(t, s.Commit(ctx, l.Token, st, nil))
	for _, all := range []bool{false, true} {
		st.Hops[0].Components[0].Attempts++
		armed.Store(true)
		if all {
			require.NoError(t, s.Save(ctx, l.Token, st), "snapshot")
		} else {
			require.NoError(t, s.Commit(ctx, l.Token, st, []record.Ref{{Hop: 0, Component: 0}}), "commit")
		}
		require.False(t, armed.Load(), "the fault was injected")
		got, err := newStore(t, newClient(t), ns, "run").Load(ctx)
		require.NoError(t, err, "snapshot %v", all)
		assert.Equal(t, st, got, "snapshot %v", all)
	}
}

// A head whose label was taken off is an error naming the label, not an
// empty store that a controller would start a new run on.
func TestHeadWithoutLabel(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	ctx := context.Background()
	s := newStore(t, newClient(t), ns, "run")
	l, err := s.Acquire(ctx, "p", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Save(ctx, l.Token, statetest.Sample(1)))
	var head corev1.ConfigMap
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "run"}, &head))
	delete(head.Labels, "hopdag.io/store")
	require.NoError(t, c.Update(ctx, &head))
	_, err = newStore(t, newClient(t), ns, "run").Load(ctx)
	var ce *state.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "ConfigMap "+ns+"/run label hopdag.io/store", ce.Path)
	assert.Contains(t, err.Error(), "put it back")
}

// A snapshot removes the store's own objects only: a labelled copy (a
// backup an operator made) stays.
func TestSnapshotKeepsForeignObjects(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	ctx := context.Background()
	s := newStore(t, newClient(t), ns, "run")
	l, err := s.Acquire(ctx, "p", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Save(ctx, l.Token, statetest.Sample(1)))
	backup := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run-backup-1", Labels: map[string]string{"hopdag.io/store": "run"}}}
	require.NoError(t, c.Create(ctx, backup))
	require.NoError(t, s.Save(ctx, l.Token, statetest.Sample(2)))
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(backup), backup), "the snapshot removed a ConfigMap that is not the store's")
}

// An expired Lease is taken over only once the clock-skew allowance (a
// tenth of its duration) has passed after its expiry, as the state.Lock
// contract says.
func TestAcquireWaitsForSkewAllowance(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	ctx := context.Background()
	s := newStore(t, newClient(t), ns, "run")
	// A long lease (allowance 20s) leaves the test's requests 10s
	// between the aged renewal and the Acquire that must be refused.
	l, err := s.Acquire(ctx, "a", 200*time.Second)
	require.NoError(t, err)
	age := func(d time.Duration) {
		var lease coordinationv1.Lease
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "run"}, &lease))
		renew := metav1.NewMicroTime(time.Now().Add(-d))
		lease.Spec.RenewTime = &renew
		require.NoError(t, c.Update(ctx, &lease))
	}
	age(210 * time.Second) // expired 10s ago; the allowance is 20s
	require.ErrorIs(t, s.Save(ctx, l.Token, statetest.Sample(1)), state.ErrFenced, "the expired holder is fenced")
	_, err = newStore(t, newClient(t), ns, "run").Acquire(ctx, "b", 200*time.Second)
	require.ErrorIs(t, err, state.ErrLocked, "within the allowance after the expiry")
	age(230 * time.Second) // expired 30s ago
	lb, err := newStore(t, newClient(t), ns, "run").Acquire(ctx, "b", 200*time.Second)
	require.NoError(t, err, "after the allowance")
	assert.Greater(t, lb.Token, l.Token)
}

// listHook is a client whose first List of ConfigMaps runs hook after
// the list was read: a write that lands between a load's list of the
// store's objects and what it reads next.
type listHook struct {
	client.Client
	hook func()
	done atomic.Bool
}

func (c *listHook) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := c.Client.List(ctx, list, opts...)
	if _, ok := list.(*corev1.ConfigMapList); ok && err == nil && c.done.CompareAndSwap(false, true) {
		c.hook()
	}
	return err
}

// TestLoadWhileTheHeadIsCreated: a Load whose list of the store's objects
// predates the head (another handle's first Acquire created it, and its
// Save filled it, just after the list) reads again and returns that
// status; it is no "label taken off" corruption. (A reader of a
// controller's record raced the controller's first Acquire so:
// TestStaleLeaderFenced failed once on it.)
func TestLoadWhileTheHeadIsCreated(t *testing.T) {
	needAPIServer(t)
	ns := newNamespace(t, newClient(t))
	ctx := context.Background()
	writer := newStore(t, newClient(t), ns, "run")
	hooked := &listHook{Client: newClient(t)}
	hooked.hook = func() {
		// The first Acquire creates the head; the Save fills it.
		l, err := writer.Acquire(ctx, "w", time.Minute)
		require.NoError(t, err)
		require.NoError(t, writer.Save(ctx, l.Token, &record.Status{Phase: record.Running, From: "v1", To: "v2", Hops: []record.HopStatus{}}))
	}
	reader := newStore(t, hooked, ns, "run")
	got, err := reader.Load(ctx)
	require.NoError(t, err)
	require.True(t, hooked.done.Load(), "the hook ran: the head was created after the reader's list")
	require.NotNil(t, got, "the status written during the load")
	assert.Equal(t, record.Running, got.Phase)
}
