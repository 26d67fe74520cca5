package controller_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/kube/store"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
)

// kubeStores keeps each ClusterVersion's runs in kube/store, as the
// example operator does: hopdag-NAME in its namespace.
func kubeStores(t *testing.T) controller.StoreFunc {
	sc := newClient(t)
	return func(k types.NamespacedName) (state.Store, state.Lock, error) {
		s, err := store.New(sc, k.Namespace, "hopdag-"+k.Name)
		return s, s, err
	}
}

// waitGone waits until the ClusterVersion is deleted.
func waitGone(t *testing.T, c client.Client, key types.NamespacedName, timeout time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(c.Get(context.Background(), key, &v1alpha1.ClusterVersion{}))
	}, timeout, 50*time.Millisecond, "ClusterVersion %s is not gone", key)
}

// storeObjects lists what is left of kube/store's store name in ns: its
// ConfigMaps and its Lease.
func storeObjects(t *testing.T, c client.Client, ns, name string) []string {
	t.Helper()
	ctx := context.Background()
	var cms corev1.ConfigMapList
	require.NoError(t, c.List(ctx, &cms, client.InNamespace(ns), client.MatchingLabels{"hopdag.io/store": name}))
	var out []string
	for _, cm := range cms.Items {
		out = append(out, "ConfigMap "+cm.Name)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		out = append(out, "Lease "+name)
	}
	return out
}

// TestDeleteStopsTheRun: a ClusterVersion deleted during hop 1 of its
// upgrade stops its run as an abort does: hop 1 finishes, nothing of the
// hops after it runs; the deletion and where the run stopped are
// recorded in Events; the run's record and lock are removed before the
// ClusterVersion goes. Without the webhook (which the reconciler does not
// need), and with it, the deletion allowed by the annotation. (The
// object went at once, and its hops 2 and 3 ran in full with no status
// and no Event.)
func TestDeleteStopsTheRun(t *testing.T) {
	needAPIServer(t)
	for _, webhook := range []bool{false, true} {
		name := "without the webhook"
		if webhook {
			name = "with the webhook, allowed by " + controller.AllowDelete
		}
		t.Run(name, func(t *testing.T) {
			c := newClient(t)
			ns := newNamespace(t, c)
			if !webhook {
				ns = namespaceWithoutWebhook(t, c)
			}
			applyCatalog(t, c, ns, catalogDir)
			// provider is in the second batch of hop 1 and in every hop:
			// it holds hop 1 until the reconciler has seen the deletion.
			rn := runnertest.New()
			release, started := make(chan struct{}), make(chan struct{})
			var once sync.Once
			rn.OnStart = func(task runner.Task) {
				if task.HopIndex == 0 && task.Component == "provider" {
					once.Do(func() { close(started) })
					<-release
				}
			}
			startOperator(t, opConfig{rn: rn, stores: kubeStores(t)})
			ctx := context.Background()
			cv := newCV(ns, "v26.06-rc.2", "v26.09")
			require.NoError(t, c.Create(ctx, cv))
			key := client.ObjectKeyFromObject(cv)
			await(t, started, "provider starting on hop 1")
			got := waitFor(t, c, key, 30*time.Second, "holding the finalizer", func(cv *v1alpha1.ClusterVersion) bool {
				return slices.Contains(cv.Finalizers, controller.Finalizer)
			})
			require.Greater(t, len(got.Status.Plan.Hops), 1, "the upgrade's hops: %v", got.Status.Plan.Hops)
			if webhook {
				deleteAllowed(t, c, got)
			} else {
				require.NoError(t, c.Delete(ctx, got), "deleting the ClusterVersion during hop 1")
			}
			require.Eventually(t, func() bool {
				gone := apierrors.IsNotFound(c.Get(ctx, key, &v1alpha1.ClusterVersion{}))
				return gone || len(eventNotes(t, c, ns, "ClusterVersionDeleted")) > 0
			}, 30*time.Second, 50*time.Millisecond, "the reconciler seeing the deletion")
			close(release)
			waitGone(t, c, key, 60*time.Second)

			for _, r := range rn.Records() {
				assert.Equal(t, 0, r.Hop, "component %s ran on hop %d after the ClusterVersion was deleted during hop 1", r.Component, r.Hop+1)
				assert.NoError(t, r.Err, "component %s was interrupted", r.Component)
			}
			// Events are written in the background: they may follow the
			// ClusterVersion's removal.
			var notes []string
			require.Eventually(t, func() bool {
				notes = eventNotes(t, c, ns, "ClusterVersionDeleted")
				return len(notes) > 0
			}, 10*time.Second, 100*time.Millisecond, "a ClusterVersionDeleted Event")
			require.Len(t, notes, 1, "ClusterVersionDeleted Events")
			assert.Contains(t, notes[0], "ClusterVersion "+ns+"/cluster is being deleted during the upgrade v26.06-rc.2 -> v26.09: the run stops at the next safe point")
			require.Eventually(t, func() bool {
				notes = eventNotes(t, c, ns, "UpgradeStopped")
				return len(notes) > 0
			}, 10*time.Second, 100*time.Millisecond, "an UpgradeStopped Event")
			require.Len(t, notes, 1, "UpgradeStopped Events")
			assert.Contains(t, notes[0], "the ClusterVersion is being deleted; the system runs v26.06-rc.3", "where the run stopped")
			assert.NotContains(t, eventReasons(t, c, ns), "UpgradeCompleted")
			assert.Empty(t, storeObjects(t, c, ns, "hopdag-cluster"), "what is left of the run's store after the ClusterVersion went")
		})
	}
}

// TestRecreatedClusterVersion: a ClusterVersion deleted and created again
// under its name is a new one: its upgrade runs every component again
// (it once found its predecessor's record, ran 0 components and reported
// Completed), and the deleted one's store is gone (kube/store, a
// Remover) or never resumed (a store that keeps records).
func TestRecreatedClusterVersion(t *testing.T) {
	needAPIServer(t)
	tests := []struct {
		name   string
		stores func(t *testing.T) controller.StoreFunc
		kube   bool
	}{
		{name: "kube/store", stores: kubeStores, kube: true},
		{name: "a store that keeps records", stores: func(*testing.T) controller.StoreFunc { return memStores() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t)
			ns := newNamespace(t, c)
			applyCatalog(t, c, ns, catalogDir)
			op := startOperator(t, opConfig{stores: tt.stores(t)})
			ctx := context.Background()
			upgrade := func(what string) *v1alpha1.ClusterVersion {
				cv := newCV(ns, "v26.06-rc.2", "v26.06-rc.3")
				require.NoError(t, c.Create(ctx, cv), "creating the %s ClusterVersion", what)
				return waitFor(t, c, client.ObjectKeyFromObject(cv), 60*time.Second, "upgraded", func(cv *v1alpha1.ClusterVersion) bool {
					return cv.Status.Phase == v1alpha1.PhaseIdle && len(cv.Status.History) > 0 && cv.Status.History[0].CompletionTime != nil
				})
			}
			first := upgrade("first")
			ran := len(op.runner.Records())
			require.Positive(t, ran, "components the first upgrade ran")
			require.NoError(t, c.Delete(ctx, first))
			waitGone(t, c, client.ObjectKeyFromObject(first), 30*time.Second)
			if tt.kube {
				assert.Empty(t, storeObjects(t, c, ns, "hopdag-cluster"), "what is left of the deleted ClusterVersion's store")
			}

			second := upgrade("second")
			assert.NotEqual(t, first.UID, second.UID)
			require.Len(t, second.Status.History, 1, "the new ClusterVersion's history")
			assert.Equal(t, v1alpha1.HistoryCompleted, second.Status.History[0].State)
			assert.Equal(t, "v26.06-rc.3", second.Status.CurrentVersion)
			assert.Equal(t, 2*ran, len(op.runner.Records()), "components run in all: the second upgrade must run the %d of the first again", ran)
			require.NoError(t, c.Delete(ctx, second))
			waitGone(t, c, client.ObjectKeyFromObject(second), 30*time.Second)
		})
	}
}

// TestDeletedMidUpgradeRecorded: a ClusterVersion whose upgrade failed
// partway (its status the only record of where the components are),
// deleted with no run in flight, leaves a DeletedMidUpgrade Warning
// Event with the reason the escape hatch gave; without the webhook,
// which would have asked for one, it says that none was given.
func TestDeletedMidUpgradeRecorded(t *testing.T) {
	needAPIServer(t)
	for _, webhook := range []bool{false, true} {
		name := "without the webhook"
		if webhook {
			name = "with the webhook, allowed by " + controller.AllowDelete
		}
		t.Run(name, func(t *testing.T) {
			c := newClient(t)
			ns := newNamespace(t, c)
			if !webhook {
				ns = namespaceWithoutWebhook(t, c)
			}
			applyCatalog(t, c, ns, catalogDir)
			rn := runnertest.New().Script("etcd", runnertest.Script{FailAlways: true, Permanent: true})
			startOperator(t, opConfig{rn: rn, stores: kubeStores(t)})
			ctx := context.Background()
			cv := newCV(ns, "v26.06-rc.2", "v26.09")
			require.NoError(t, c.Create(ctx, cv))
			key := client.ObjectKeyFromObject(cv)
			got := waitFor(t, c, key, 60*time.Second, "failed", func(cv *v1alpha1.ClusterVersion) bool {
				return cv.Status.Phase == v1alpha1.PhaseFailed && slices.Contains(cv.Finalizers, controller.Finalizer)
			})
			why := "no reason given (" + controller.AllowDelete + " not set: the webhook is not in use)"
			if webhook {
				require.Error(t, c.Delete(ctx, got.DeepCopy(), client.DryRunAll), "the webhook refuses deleting a failed upgrade")
				deleteAllowed(t, c, got)
				why = "test: done"
			} else {
				require.NoError(t, c.Delete(ctx, got))
			}
			waitGone(t, c, key, 60*time.Second)
			var notes []string
			require.Eventually(t, func() bool {
				notes = eventNotes(t, c, ns, "DeletedMidUpgrade")
				return len(notes) > 0
			}, 10*time.Second, 100*time.Millisecond, "a DeletedMidUpgrade Event")
			require.Len(t, notes, 1, "DeletedMidUpgrade Events")
			assert.Contains(t, notes[0], "ClusterVersion "+ns+"/cluster deleted mid-upgrade ("+why+"): hop ")
			assert.Contains(t, notes[0], "failed")
			assert.Contains(t, notes[0], "its status and its run's record, which said where the components are, are gone with it")
		})
	}
}
