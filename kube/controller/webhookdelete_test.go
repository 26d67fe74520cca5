package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
)

// deleteAllowed deletes cv, annotated hopdag.io/allow-delete first: the
// webhook refuses it otherwise (it stopped mid-upgrade).
func deleteAllowed(t *testing.T, c client.Client, cv *v1alpha1.ClusterVersion) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cv), cv); err != nil {
			return err
		}
		if cv.Annotations == nil {
			cv.Annotations = map[string]string{}
		}
		cv.Annotations[controller.AllowDelete] = "test: done"
		return c.Update(ctx, cv)
	}))
	require.NoError(t, c.Delete(ctx, cv))
}

// midHop3 is the status of an upgrade v26.06-rc.2 -> v26.09 stopped in
// phase, with 4 of the 11 components of its third hop at v26.09 when
// partial.
func midHop3(phase v1alpha1.Phase, partial bool) v1alpha1.ClusterVersionStatus {
	st := v1alpha1.ClusterVersionStatus{
		Phase: phase, CurrentVersion: "v26.06", DesiredVersion: "v26.09",
		Plan: &v1alpha1.PlanSummary{Target: "v26.09", From: "v26.06-rc.2", To: "v26.09",
			Hops: []string{"v26.06-rc.2 -> v26.06-rc.3", "v26.06-rc.3 -> v26.06", "v26.06 -> v26.09"}, CurrentHop: 2, Hop: "v26.06 -> v26.09",
			Progress: v1alpha1.Progress{Done: 18, Total: 29, Summary: "18/29"}},
	}
	if partial {
		st.Plan.Partial = &v1alpha1.PartialHop{Hop: "v26.06 -> v26.09", To: "v26.09", Done: []string{"bkeagent", "containerd", "etcd", "provider"}, Count: 4, Total: 11}
	}
	return st
}

// TestWebhookRefusesDeleteMidUpgrade: the webhook refuses to delete a
// ClusterVersion whenever it refuses it a new target (Failed with
// components moved included), and when a hop was left partway, saying
// where the upgrade is as the update's refusal does; the annotation
// hopdag.io/allow-delete lets it go, and so does an upgrade abandoned.
// (A failed mid-hop upgrade was deleted, and created again re-ran
// bkeagent, provider and containerd from the wrong from-version.)
func TestWebhookRefusesDeleteMidUpgrade(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	ctx := context.Background()
	partial := "the system is between v26.06 and v26.09: 4 of the 11 components of hop v26.06 -> v26.09 already run v26.09's versions (bkeagent, containerd, etcd, provider)"
	tests := []struct {
		name   string
		status v1alpha1.ClusterVersionStatus
		// where is what both refusals say ("" when the delete is
		// allowed); update whether a new target is refused too.
		where  string
		update bool
	}{
		{name: "failed mid-hop", status: midHop3(v1alpha1.PhaseFailed, true), update: true,
			where: "hop v26.06 -> v26.09 of the upgrade v26.06-rc.2 -> v26.09 failed (18/29 done)"},
		{name: "failed after a hop", status: midHop3(v1alpha1.PhaseFailed, false), update: true,
			where: "hop v26.06 -> v26.09 of the upgrade v26.06-rc.2 -> v26.09 failed (18/29 done)"},
		{name: "upgrading", status: midHop3(v1alpha1.PhaseUpgrading, false), update: true,
			where: "hop v26.06 -> v26.09 of the upgrade v26.06-rc.2 -> v26.09 is in progress (18/29 done)"},
		{name: "idle with a hop left partway", status: midHop3(v1alpha1.PhaseIdle, true), where: partial},
		{name: "abandoned mid-hop", status: midHop3(v1alpha1.PhaseAbandoned, true)},
		{name: "idle", status: midHop3(v1alpha1.PhaseIdle, false)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cv := newCV(ns, "v26.06-rc.2", "v26.09")
			cv.Name = "cv-" + string(rune('a'+i))
			require.NoError(t, c.Create(ctx, cv))
			cv.Status = tt.status
			require.NoError(t, c.Status().Update(ctx, cv))

			next := cv.DeepCopy()
			next.Spec.DesiredVersion = "v26.06.1"
			uerr := c.Update(ctx, next, client.DryRunAll)
			derr := c.Delete(ctx, cv.DeepCopy(), client.DryRunAll)
			if tt.where == "" {
				assert.NoError(t, derr, "deleting ClusterVersion %s", tt.name)
				require.NoError(t, c.Delete(ctx, cv))
				return
			}
			require.Error(t, derr, "deleting ClusterVersion %s", tt.name)
			assert.True(t, apierrors.IsForbidden(derr), "deleting ClusterVersion %s: %v, want Forbidden", tt.name, derr)
			assert.Contains(t, derr.Error(), tt.where+": deleting ClusterVersion "+ns+"/"+cv.Name+" would lose that record", "the refusal of the delete")
			assert.Contains(t, derr.Error(), "or annotate it hopdag.io/allow-delete=<reason> to delete it all the same", "the refusal of the delete names the escape hatch")
			if tt.update {
				require.Error(t, uerr, "a new target for ClusterVersion %s", tt.name)
				assert.Contains(t, uerr.Error(), tt.where+": desiredVersion may only be set back to v26.06-rc.2", "the refusal of the update")
			}

			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(cv), cv))
			cv.Annotations = map[string]string{controller.AllowDelete: "test: rebuilt from backup"}
			require.NoError(t, c.Update(ctx, cv))
			assert.NoError(t, c.Delete(ctx, cv), "deleting ClusterVersion %s annotated %s", tt.name, controller.AllowDelete)
		})
	}
}

// TestWebhookChecksTargetWithAbandon: a new desiredVersion set together
// with spec.abandon during an upgrade is checked like any other (it was
// accepted unchecked: v99.0), the abort with it is not refused, and
// clearing spec.abandon, which starts the upgrade to desiredVersion,
// checks it too (one accepted before, or by an API server that did not
// call the webhook).
func TestWebhookChecksTargetWithAbandon(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ctx := context.Background()
	abandon := &v1alpha1.AbandonRequest{Reason: "test: give up"}
	t.Run("set with the target", func(t *testing.T) {
		ns := newNamespace(t, c)
		applyCatalog(t, c, ns, catalogDir)
		cv := newCV(ns, "v26.06-rc.2", "v26.09")
		require.NoError(t, c.Create(ctx, cv))
		cv.Status = midHop3(v1alpha1.PhaseUpgrading, false)
		require.NoError(t, c.Status().Update(ctx, cv))
		for desired, refused := range map[string]string{
			"v99.0":       "v99.0 is not a release of the catalog",
			"v26.06-rc.2": "", // the abort
		} {
			next := cv.DeepCopy()
			next.Spec.Abandon, next.Spec.DesiredVersion = abandon, v1alpha1.Target(desired)
			err := c.Update(ctx, next, client.DryRunAll)
			if refused == "" {
				assert.NoError(t, err, "spec.abandon with desiredVersion %s", desired)
				continue
			}
			require.Error(t, err, "spec.abandon with desiredVersion %s during an upgrade", desired)
			assert.True(t, apierrors.IsInvalid(err), "spec.abandon with desiredVersion %s: %v, want Invalid", desired, err)
			assert.Contains(t, err.Error(), refused)
		}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(cv), cv))
		cv.Annotations = map[string]string{controller.AllowDelete: "test: done"}
		require.NoError(t, c.Update(ctx, cv))
		require.NoError(t, c.Delete(ctx, cv))
	})
	t.Run("cleared", func(t *testing.T) {
		// The target got in without the webhook.
		ns := namespaceWithoutWebhook(t, c)
		applyCatalog(t, c, ns, catalogDir)
		cv := newCV(ns, "v26.06-rc.2", "v99.0")
		cv.Spec.Abandon = abandon
		require.NoError(t, c.Create(ctx, cv))
		var nsObj corev1.Namespace
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: ns}, &nsObj))
		delete(nsObj.Labels, noWebhook)
		require.NoError(t, c.Update(ctx, &nsObj))
		// Once the webhook sees the namespace again (a moment after its
		// label changed), it refuses a new unknown target there.
		require.Eventually(t, func() bool {
			next := cv.DeepCopy()
			next.Spec.DesiredVersion = "v98.0"
			return c.Update(ctx, next, client.DryRunAll) != nil
		}, 30*time.Second, 50*time.Millisecond, "the webhook seeing namespace %s again", ns)

		next := cv.DeepCopy()
		next.Spec.Abandon = nil
		err := c.Update(ctx, next, client.DryRunAll)
		require.Error(t, err, "clearing spec.abandon with desiredVersion v99.0")
		assert.Contains(t, err.Error(), "v99.0 is not a release of the catalog")
		assert.True(t, strings.Contains(err.Error(), "spec.desiredVersion"), "the refusal names the field: %v", err)
		require.NoError(t, c.Delete(ctx, cv))
	})
}
