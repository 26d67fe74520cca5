package controller_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

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
