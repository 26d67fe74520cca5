package controller_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/state"
)

// refusingLock is a Lock whose Acquire fails while refuse is set, as a
// missing RBAC rule on Leases makes it.
type refusingLock struct {
	state.Lock
	refuse *atomic.Bool
}

func (l refusingLock) Acquire(ctx context.Context, holder string, ttl time.Duration) (state.Lease, error) {
	if l.refuse.Load() {
		return state.Lease{}, errors.New(`leases.coordination.k8s.io "hopdag-cluster" is forbidden: User "system:serviceaccount:ops:hopdag" cannot update resource "leases"`)
	}
	return l.Lock.Acquire(ctx, holder, ttl)
}

// A run whose state store refuses its lock shows it: Failing with the
// store's error and a Warning Event, not "Upgrading 0/19" forever; once
// the store works the run goes on and Failing clears.
func TestStoreFailureIsVisible(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	var refuse atomic.Bool
	refuse.Store(true)
	mem := state.NewMemory()
	stores := func(types.NamespacedName) (state.Store, state.Lock, error) {
		return mem, refusingLock{Lock: mem, refuse: &refuse}, nil
	}
	startOperator(t, opConfig{stores: stores, opts: []controller.Option{controller.WithLeaseTTL(3 * time.Second)}})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 30*time.Second, "Failing StoreUnavailable", func(cv *v1alpha1.ClusterVersion) bool {
		f := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionFailing)
		return f != nil && f.Status == "True" && f.Reason == "StoreUnavailable"
	})
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	assert.Contains(t, f.Message, "locking the run's record: ")
	assert.Contains(t, f.Message, "cannot update resource \"leases\"")
	p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Equal(t, "False", string(p.Status))
	assert.True(t, strings.HasPrefix(p.Message, "not upgrading: "), p.Message)
	require.Eventually(t, func() bool { return slices.Contains(eventReasons(t, c, ns), "StoreUnavailable") }, 10*time.Second, 100*time.Millisecond,
		"a Warning Event StoreUnavailable; got %v", eventReasons(t, c, ns))

	refuse.Store(false)
	done := waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	f = meta.FindStatusCondition(done.Status.Conditions, v1alpha1.ConditionFailing)
	assert.Equal(t, "False", string(f.Status), "Failing cleared: %s %s", f.Reason, f.Message)
}
