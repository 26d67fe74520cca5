package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/kube/store"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
)

// TestLeaderFailover runs two replicas under leader election: only the
// leader acts, and when it stops mid-upgrade the other takes over and
// resumes from the store (kube/store, on the API server) without re-running
// what succeeded.
func TestLeaderFailover(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	// The replicas share the run's record on the API server (kube/store).
	sc := newClient(t)
	stores := func(k types.NamespacedName) (state.Store, state.Lock, error) {
		s, err := store.New(sc, k.Namespace, "hopdag-"+k.Name)
		return s, s, err
	}
	a := startOperator(t, opConfig{stores: stores, leaderNS: ns, rn: slowRunner(t, 200*time.Millisecond)})
	b := startOperator(t, opConfig{stores: stores, leaderNS: ns, rn: slowRunner(t, 200*time.Millisecond)})
	ctx := context.Background()

	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	waitFor(t, c, key, 60*time.Second, "a few components in", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseUpgrading && cv.Status.Plan != nil && cv.Status.Plan.Progress.Done >= 4
	})
	leader, follower := a, b
	if len(a.runner.Records()) == 0 {
		leader, follower = b, a
	}
	require.NotEmpty(t, leader.runner.Records(), "one replica acts")
	assert.Empty(t, follower.runner.Records(), "only the leader acts")

	leader.stop()
	stoppedAt := time.Now()
	before := leader.runner.Records()
	waitFor(t, c, key, 90*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	after := follower.runner.Records()
	require.NotEmpty(t, after, "the new leader finished the upgrade")
	for _, r := range after {
		assert.True(t, r.StartTime.After(stoppedAt), "the follower ran %s before the leader stopped", r.Component)
	}
	ok := map[string]int{}
	for _, r := range append(before, after...) {
		if r.Err == nil {
			ok[fmt.Sprintf("hop %d %s", r.Hop, r.Component)]++
		}
	}
	for k, n := range ok {
		assert.Equal(t, 1, n, "%s succeeded %d times across the failover", k, n)
	}
	t.Logf("leader ran %d attempts, the new leader %d", len(before), len(after))
}

// TestLargeHopCoalescesStatusWrites runs one hop of 2,000 components: the
// status is written a handful of times, not once per transition (4,000),
// and the ClusterVersion stays far under the API server's object limit.
func TestLargeHopCoalescesStatusWrites(t *testing.T) {
	needAPIServer(t)
	if testing.Short() {
		t.Skip("creates 4,000 objects")
	}
	const n = 2000
	c := newClient(t)
	ns := newNamespace(t, c)
	ctx := context.Background()
	for _, v := range []string{"v1.0", "v2.0"} {
		r := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big-" + v}, Spec: v1alpha1.ReleaseSpec{Version: v1alpha1.Version(v)}}
		for i := range n {
			name := fmt.Sprintf("c%04d", i)
			r.Spec.Components = append(r.Spec.Components, v1alpha1.ComponentRef{Name: name, Version: v1alpha1.Version(v)})
			spec := v1alpha1.ComponentVersionSpec{Name: name, Version: v1alpha1.Version(v), Type: "inline", Handler: "noop"}
			if i >= 100 {
				spec.Dependencies = []string{fmt.Sprintf("c%04d", i%100)}
			}
			require.NoError(t, c.Create(ctx, &v1alpha1.ComponentVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-" + v}, Spec: spec}))
		}
		require.NoError(t, c.Create(ctx, r))
	}
	require.NoError(t, c.Create(ctx, &v1alpha1.UpgradePath{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"},
		Spec: v1alpha1.UpgradePathSpec{Rules: []v1alpha1.Rule{{From: "v1.0", To: "v2.0"}}}}))
	const interval = time.Second
	// The run's record in kube/store, counted: its checkpoints must be
	// journal commits (what changed), not whole-status saves.
	counted := &countingStore{Store: newKubeStore(t, newClient(t), ns, "big")}
	stores := func(types.NamespacedName) (state.Store, state.Lock, error) {
		return counted, counted.Store.(*store.Store), nil
	}
	op := startOperator(t, opConfig{rn: runnertest.New(), stores: stores, opts: []controller.Option{controller.WithStatusInterval(interval)}})
	start := time.Now()
	cv := newCV(ns, "v1.0", "v2.0")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	done := waitFor(t, c, key, 5*time.Minute, "at v2.0", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v2.0" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	assert.Equal(t, n, done.Status.Plan.Progress.Done)
	assert.Len(t, op.runner.Records(), n)
	elapsed := time.Since(start)
	writes := op.r.StatusWrites()
	t.Logf("2,000-component hop: %d status writes for %d component transitions in %v (interval %v)", writes, 2*n, elapsed.Round(time.Millisecond), interval)
	// At most one write per interval, plus the writes at the start, at the
	// hop's start and end and at the end of the run.
	assert.LessOrEqual(t, writes, int64(elapsed/interval)+8, "status writes are coalesced")
	data, err := json.Marshal(done)
	require.NoError(t, err)
	t.Logf("ClusterVersion object: %d bytes", len(data))
	assert.Less(t, len(data), 1<<20, "the ClusterVersion stays under 1 MiB")
	var big v1alpha1.Release
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "big-v2.0"}, &big))
	data, err = json.Marshal(&big)
	require.NoError(t, err)
	t.Logf("largest catalog object (the Release of 2,000 components): %d bytes", len(data))
	assert.Less(t, len(data), 1<<20)

	saves, commits := counted.saves.Load(), counted.commits.Load()
	var cms corev1.ConfigMapList
	require.NoError(t, c.List(ctx, &cms, client.InNamespace(ns), client.MatchingLabels{"hopdag.io/store": "big"}))
	largest := 0
	for _, cm := range cms.Items {
		b, err := json.Marshal(cm)
		require.NoError(t, err)
		largest = max(largest, len(b))
	}
	t.Logf("kube/store: %d whole-status saves, %d journal commits; %d objects, the largest %d bytes", saves, commits, len(cms.Items), largest)
	assert.Less(t, largest, 1<<20, "every kube/store object stays under 1 MiB")
	assert.Positive(t, commits, "checkpoints are journal commits (what changed)")
	assert.LessOrEqual(t, saves, int64(2), "whole-status saves only to start the record")
}

// countingStore counts the Saves and Commits of a state.Store.
type countingStore struct {
	state.Store
	saves, commits atomic.Int64
}

func (c *countingStore) Save(ctx context.Context, token uint64, s *record.Status) error {
	c.saves.Add(1)
	return c.Store.Save(ctx, token, s)
}

func (c *countingStore) Commit(ctx context.Context, token uint64, s *record.Status, changed []record.Ref) error {
	c.commits.Add(1)
	return c.Store.Commit(ctx, token, s, changed)
}
