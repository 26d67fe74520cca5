package controller_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// heldRunnables is a manager whose RunnableFuncs (the reconciler's, which
// gives runs their context) start only once release is closed: the
// controller, started with them in no set order, goes first.
type heldRunnables struct {
	manager.Manager
	release chan struct{}
}

func (m heldRunnables) Add(r manager.Runnable) error {
	if f, ok := r.(manager.RunnableFunc); ok {
		return m.Manager.Add(manager.RunnableFunc(func(ctx context.Context) error {
			select {
			case <-m.release:
			case <-ctx.Done():
			}
			return f(ctx)
		}))
	}
	return m.Manager.Add(r)
}

// activeWorkers is controller-runtime's count of the reconciles in
// progress of the controllers named clusterversion (those of the other
// tests are stopped).
func activeWorkers(t *testing.T) float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_active_workers" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "clusterversion" {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

// TestReconcileBeforeRunnable: a reconcile that comes before the manager
// has started the reconciler's runnable (they start at once, in no set
// order) waits for it, and the upgrade starts, announced. (It wrote
// Upgrading, then start returned without a word: no run, and the run a
// later reconcile resumed sent no UpgradeStarted.)
func TestReconcileBeforeRunnable(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	require.NoError(t, err)
	held := heldRunnables{Manager: mgr, release: make(chan struct{})}
	r := controller.New(mgr.GetClient(), runnertest.New(), memStores(),
		controller.WithExecutorOptions(checks()...), controller.WithManifests(os.DirFS(catalogDir)),
		controller.WithStatusInterval(200*time.Millisecond), controller.WithLeaseTTL(2*time.Second))
	require.NoError(t, r.SetupWithManager(held))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })

	cv := newCV(ns, "v26.06-rc.2", "v26.06-rc.3")
	require.NoError(t, c.Create(context.Background(), cv))
	key := client.ObjectKeyFromObject(cv)
	// The first reconcile has come: it wrote its decision, or it waits.
	waitFor(t, c, key, 30*time.Second, "reconciled before the runnable started", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase != "" || activeWorkers(t) > 0
	})
	close(held.release)
	waitFor(t, c, key, 60*time.Second, "at v26.06-rc.3", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.06-rc.3"
	})
	require.Eventually(t, func() bool { return slices.Contains(eventReasons(t, c, ns), "UpgradeCompleted") }, 10*time.Second, 100*time.Millisecond)
	assert.Contains(t, eventReasons(t, c, ns), "UpgradeStarted", "the upgrade was announced")
}

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
	_, err = r.Reconcile(ctx, req)
	if err != nil {
		require.True(t, apierrors.IsConflict(err), "Reconcile = %v, want nil or a conflict", err)
		_, err = r.Reconcile(ctx, req) // as the controller requeues it
		require.NoError(t, err)
	}
	var got v1alpha1.ClusterVersion
	require.NoError(t, c.Get(ctx, key, &got))
	require.NotEmpty(t, got.Status.History, "the other writer's history entry")
	assert.Equal(t, other.Message, got.Status.History[0].Message, "the other writer's history entry stays")
	assert.Equal(t, v1alpha1.PhaseIdle, got.Status.Phase)
	assert.Equal(t, got.Generation, got.Status.ObservedGeneration, "the reconcile's own decision is written too")
}
