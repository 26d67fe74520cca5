package controller_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
)

// fencingStore fences, from its n-th Commit on, every write under the
// token of that Commit: as if another holder had written the record under
// a greater one.
type fencingStore struct {
	state.Store
	n, calls atomic.Int64
	fenced   atomic.Uint64 // the token fenced, once it is
}

func (s *fencingStore) refuse(token uint64) error {
	if f := s.fenced.Load(); f != 0 && token <= f {
		return &state.FencedError{Token: token, Holder: "another-replica", Current: f + 1}
	}
	return nil
}

func (s *fencingStore) Commit(ctx context.Context, token uint64, st *record.Status, changed []record.Ref) error {
	if s.calls.Add(1) == s.n.Load() {
		s.fenced.Store(token)
	}
	if err := s.refuse(token); err != nil {
		return err
	}
	return s.Store.Commit(ctx, token, st, changed)
}

func (s *fencingStore) Save(ctx context.Context, token uint64, st *record.Status) error {
	if err := s.refuse(token); err != nil {
		return err
	}
	return s.Store.Save(ctx, token, st)
}

// A run whose record write is refused as fenced has lost the record to
// another holder: it stops without writing the ClusterVersion (the
// holder's status is the truth), not Failed with "checkpoint failed" and
// an UpgradeFailed Event (which only spec.retry clears). Here no other
// holder exists, so the same controller takes the record again and the
// upgrade completes, with one history entry, Completed.
func TestFencedRunHandsOver(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	mem := state.NewMemory()
	fs := &fencingStore{Store: mem}
	fs.n.Store(5)
	stores := func(types.NamespacedName) (state.Store, state.Lock, error) { return fs, mem, nil }
	startOperator(t, opConfig{stores: stores})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	done := waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	require.GreaterOrEqual(t, fs.calls.Load(), int64(5), "the fenced commit happened")
	require.Len(t, done.Status.History, 1, "history: %+v", done.Status.History)
	assert.Equal(t, v1alpha1.HistoryCompleted, done.Status.History[0].State)
	assert.False(t, slices.Contains(eventReasons(t, c, ns), "UpgradeFailed"), "events: %v", eventReasons(t, c, ns))
}
