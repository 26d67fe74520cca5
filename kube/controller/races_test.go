package controller_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// TestConflictNotWrittenBack: a reconcile whose status write conflicts
// with another writer's (a replica without leader election) does not
// write the status it decided from the object it read over the newer
// one: it returns the conflict, and the next reconcile decides from the
// object as it is. (writeStatus read the object again and wrote the old
// decision over it: here the history entry the other writer added was
// lost.)
func TestConflictNotWrittenBack(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	ctx := context.Background()
	cv := newCV(ns, "v26.09", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)

	// The other writer's status, written just before this replica's
	// write, once.
	other := v1alpha1.UpdateHistory{From: "v26.06", To: "v26.09", State: v1alpha1.HistoryCompleted, StartedTime: metav1.Now(), CompletionTime: new(metav1.Now()), Message: "written by the other replica"}
	var once sync.Once
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ic := interceptor.NewClient(wc, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			var err error
			once.Do(func() {
				var latest v1alpha1.ClusterVersion
				if err = c.Get(ctx, key, &latest); err == nil {
					latest.Status.History = append([]v1alpha1.UpdateHistory{other}, latest.Status.History...)
					err = c.Status().Update(ctx, &latest)
				}
			})
			if err != nil {
				return err
			}
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	r := controller.New(ic, runnertest.New(), memStores(), controller.WithExecutorOptions(checks()...), controller.WithManifests(os.DirFS(catalogDir)))
	req := ctrl.Request{NamespacedName: key}
	// The conflict is no error for controller-runtime to log: the
	// reconcile asks to be requeued, and decides again then.
	res, err := r.Reconcile(ctx, req)
	require.NoError(t, err)
	require.Positive(t, res.RequeueAfter, "a conflicted write is decided again")
	_, err = r.Reconcile(ctx, req) // as the controller requeues it
	require.NoError(t, err)
	var got v1alpha1.ClusterVersion
	require.NoError(t, c.Get(ctx, key, &got))
	require.NotEmpty(t, got.Status.History, "the other writer's history entry")
	assert.Equal(t, other.Message, got.Status.History[0].Message, "the other writer's history entry stays")
	assert.Equal(t, v1alpha1.PhaseIdle, got.Status.Phase)
	assert.Equal(t, got.Generation, got.Status.ObservedGeneration, "the reconcile's own decision is written too")
}

// TestReconcileWaitsForTheRunnable: a reconcile that comes before the
// manager has started the runnable that gives runs their context (the
// manager starts both at once, in no set order) waits for it, writing
// nothing. (It wrote Upgrading for a run that start then dropped: the
// run was resumed by a later reconcile, unannounced, with no
// UpgradeStarted Event.)
func TestReconcileWaitsForTheRunnable(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	opts := ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: new(true)}}
	watched(t, &opts)
	mgr, err := ctrl.NewManager(cfg, opts)
	require.NoError(t, err)
	r := controller.New(mgr.GetClient(), runnertest.New(), memStores(), controller.WithExecutorOptions(checks()...), controller.WithManifests(os.DirFS(catalogDir)))
	require.NoError(t, r.SetupWithManager(mgr))
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.06-rc.3")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)

	early, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err = r.Reconcile(early, ctrl.Request{NamespacedName: key})
	require.ErrorIs(t, err, context.DeadlineExceeded, "the reconcile before the manager started waits for it")
	var got v1alpha1.ClusterVersion
	require.NoError(t, c.Get(ctx, key, &got))
	assert.Empty(t, got.Status.Phase, "nothing written before the runnable started")

	mctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.NoError(t, mgr.Start(mctx))
	}()
	t.Cleanup(func() { stop(); <-done })
	waitFor(t, c, key, 60*time.Second, "at v26.06-rc.3", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.06-rc.3" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	require.Eventually(t, func() bool {
		r := eventReasons(t, c, ns)
		return slices.Contains(r, "UpgradeStarted") && slices.Contains(r, "UpgradeCompleted")
	}, 10*time.Second, 100*time.Millisecond, "UpgradeStarted and UpgradeCompleted Events")
}

// TestTwoReplicasAnnounceOnce: two replicas without leader election (the
// run's lock in kube/store keeps one run at a time) both reconcile one
// upgrade: it runs once, and UpgradeStarted and UpgradeCompleted are each
// sent once (a replica whose status write conflicted once wrote its
// stale decision back and announced it again).
func TestTwoReplicasAnnounceOnce(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	stores := kubeStores(t)
	a := startOperator(t, opConfig{stores: stores})
	b := startOperator(t, opConfig{stores: stores})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	waitFor(t, c, key, 90*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	ran := map[string]int{}
	for _, o := range []*operator{a, b} {
		for _, rec := range o.runner.Records() {
			if rec.Err == nil {
				ran[fmt.Sprintf("%d %s", rec.Hop, rec.Component)]++
			}
		}
	}
	assert.Len(t, ran, 19, "every component of the three hops succeeded")
	for k, n := range ran {
		assert.Equal(t, 1, n, "%s succeeded %d times", k, n)
	}
	for _, reason := range []string{"UpgradeStarted", "UpgradeCompleted"} {
		waitReason(t, c, ns, reason)
	}
	time.Sleep(time.Second) // an Event sent twice would be sent by now
	for _, reason := range []string{"UpgradeStarted", "UpgradeCompleted"} {
		assert.Equal(t, 1, eventCount(t, c, ns, reason), "%s Events", reason)
	}
}

// eventCount counts the Events of that reason about a ClusterVersion in
// ns, each of a series as many times as it happened.
func eventCount(t *testing.T, c client.Client, ns, reason string) int {
	t.Helper()
	var l eventsv1.EventList
	require.NoError(t, c.List(context.Background(), &l, client.InNamespace(ns)))
	n := 0
	for _, e := range l.Items {
		if e.Regarding.Kind != "ClusterVersion" || e.Reason != reason {
			continue
		}
		if e.Series != nil {
			n += int(e.Series.Count)
		} else {
			n++
		}
	}
	return n
}
