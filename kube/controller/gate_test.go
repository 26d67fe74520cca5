package controller_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// setRule changes the rules of testdata/catalog's UpgradePath in ns that
// lead to to.
func setRule(t *testing.T, c client.Client, ns, to string, fn func(*v1alpha1.Rule)) {
	t.Helper()
	ctx := context.Background()
	var up v1alpha1.UpgradePath
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "openfuyao-upgrade-paths"}, &up))
	n := 0
	for i, r := range up.Spec.Rules {
		if string(r.To) == to {
			fn(&up.Spec.Rules[i])
			n++
		}
	}
	require.Positive(t, n, "a rule to %s", to)
	require.NoError(t, c.Update(ctx, &up))
}

// TestGateApproval: a hop whose rule has a gate stops the upgrade there:
// phase WaitingForApproval naming the step and the gate's reason, the
// system at the release before the hop, a condition and an Event saying
// what to set. Nothing approves it but an entry of spec.approvals naming
// the step: not a restart of the operator, not another spec change, not
// an approval of another step. The entry resumes the upgrade, which
// completes; the approval is recorded once (who, when) in the run's
// record and in the status.
func TestGateApproval(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	const reason = "test: look at the etcd backup first"
	setRule(t, c, ns, "v26.09", func(r *v1alpha1.Rule) { r.Gate = &v1alpha1.Gate{Reason: reason} })
	stores := memStores()
	op := startOperator(t, opConfig{stores: stores})
	ctx := context.Background()

	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 60*time.Second, "waiting for approval", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseWaitingForApproval
	})
	st := got.Status
	require.NotNil(t, st.Plan)
	assert.Equal(t, []v1alpha1.WaitingStep{{Step: "v26.09", Reason: reason}}, st.Plan.Waiting)
	assert.Empty(t, st.Plan.Approvals)
	assert.Equal(t, "v26.06", st.CurrentVersion, "the hops before the gate completed")
	assert.Equal(t, "WaitingForApproval", st.Plan.Phase)
	require.NotEmpty(t, st.History)
	assert.Equal(t, v1alpha1.HistoryPartial, st.History[0].State)
	assert.Nil(t, st.History[0].CompletionTime, "a waiting upgrade has not ended")
	p := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing)
	require.NotNil(t, p)
	assert.Equal(t, metav1.ConditionFalse, p.Status)
	assert.Equal(t, "WaitingForApproval", p.Reason)
	assert.Contains(t, p.Message, reason)
	assert.Contains(t, p.Message, "add {step: v26.09, by: <who approves>} to spec.approvals")
	assert.True(t, meta.IsStatusConditionFalse(st.Conditions, v1alpha1.ConditionFailing), "waiting is not failing: %+v", st.Conditions)
	for _, r := range op.runner.Records() {
		assert.NotEqual(t, 2, r.Hop, "component %s of the gated hop ran", r.Component)
	}
	var notes []string
	require.Eventually(t, func() bool {
		notes = eventNotes(t, c, ns, "UpgradeWaitingForApproval")
		return len(notes) > 0
	}, 10*time.Second, 100*time.Millisecond, "an UpgradeWaitingForApproval Event")
	assert.Contains(t, notes[0], "spec.approvals")
	assert.NotContains(t, eventReasons(t, c, ns), "UpgradeFailed")
	err := c.Delete(ctx, &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})
	assert.True(t, apierrors.IsForbidden(err), "deleting an upgrade waiting for approval: %v", err)

	// The webhook keeps a waiting upgrade like a paused one: no new
	// target, but the abort (dry runs: nothing changes).
	for _, tc := range []struct {
		desired string
		refused string // "" allowed
	}{
		{"v26.06.1", "waits for approval (" + st.Plan.Progress.Summary + " done): desiredVersion may only be set back to v26.06-rc.2"},
		{"v26.06-rc.2", ""},
	} {
		// A status write between the read and the update conflicts
		// before the webhook is asked: read again then.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cur v1alpha1.ClusterVersion
			if err := c.Get(ctx, key, &cur); err != nil {
				return err
			}
			cur.Spec.DesiredVersion = v1alpha1.Target(tc.desired)
			return c.Update(ctx, &cur, client.DryRunAll)
		})
		if tc.refused == "" {
			assert.NoError(t, err, "desiredVersion %s while waiting", tc.desired)
			continue
		}
		require.Error(t, err, "desiredVersion %s while waiting", tc.desired)
		assert.Contains(t, err.Error(), tc.refused)
	}

	// Not implied: the operator restarts, the spec changes, another step
	// is approved; it still waits, and the run's record has no approval.
	op.stop()
	startOperator(t, opConfig{stores: stores, rn: op.runner})
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) {
		s.AcceptRisks = append(s.AcceptRisks, "test-unrelated")
		s.Approvals = []v1alpha1.ApprovalRequest{{Step: "v26.06", By: "mallory"}, {Step: "v26.09/etcd", By: "mallory"}}
	})
	got = waitFor(t, c, key, 30*time.Second, "observed", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.ObservedGeneration == cv.Generation
	})
	assert.Equal(t, v1alpha1.PhaseWaitingForApproval, got.Status.Phase)
	store, _, err := stores(key)
	require.NoError(t, err)
	rec, err := store.Load(ctx)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, []string{"v26.09"}, rec.Waiting)
	assert.Empty(t, rec.Approvals, "no approval without an entry naming the step")
	// The stray entries are shown, not silently ignored.
	p = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	require.NotNil(t, p)
	assert.Contains(t, p.Message, "add {step: v26.09, by: <who approves>} to spec.approvals (spec.approvals names v26.06, v26.09/etcd, which do not wait now and approve nothing until they do)")
	require.Eventually(t, func() bool { return len(eventNotes(t, c, ns, "ApprovalNotWaiting")) > 0 }, 10*time.Second, 100*time.Millisecond, "an ApprovalNotWaiting Event")
	assert.Equal(t, "Warning", eventType(t, c, ns, "ApprovalNotWaiting"))

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) {
		s.Approvals = append(s.Approvals, v1alpha1.ApprovalRequest{Step: "v26.09", By: "alice"})
	})
	done := waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	st = done.Status
	assert.Equal(t, v1alpha1.HistoryCompleted, st.History[0].State)
	assert.Empty(t, st.Plan.Waiting)
	require.Len(t, st.Plan.Approvals, 1, "approvals: %+v", st.Plan.Approvals)
	a := st.Plan.Approvals[0]
	assert.Equal(t, "v26.09", a.Step)
	assert.Equal(t, "alice", a.By)
	assert.False(t, a.At.IsZero())
	rec, err = store.Load(ctx)
	require.NoError(t, err)
	require.Len(t, rec.Approvals, 1, "the run's record: %+v", rec.Approvals)
	assert.Equal(t, "alice", rec.Approvals[0].By)
	assert.True(t, rec.Approvals[0].At.Truncate(time.Second).Equal(a.At.Time), "the status shows the recorded time (to the second): %v, want %v", a.At, rec.Approvals[0].At)
	assert.True(t, slices.ContainsFunc(op.runner.Records(), func(r runnertest.Record) bool { return r.Hop == 2 }), "the gated hop ran after the approval")
	require.Eventually(t, func() bool {
		return slices.Contains(eventReasons(t, c, ns), "UpgradeApproved")
	}, 10*time.Second, 100*time.Millisecond, "an UpgradeApproved Event")
	assert.Contains(t, eventNotes(t, c, ns, "UpgradeApproved")[0], "approved v26.09 (by alice)")
	require.NoError(t, c.Delete(ctx, done))
}

// TestStaleApprovalNotImplied: an entry of spec.approvals that was there
// before its step began waiting (left from an earlier upgrade through the
// same gate; here, there from the start) approves nothing: the step
// waits, status.plan.waiting names the entry as stale and Progressing
// says what to do. Removing the entry and adding it again approves.
func TestStaleApprovalNotImplied(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	setRule(t, c, ns, "v26.09", func(r *v1alpha1.Rule) { r.Gate = &v1alpha1.Gate{Reason: "test: a fresh look each time"} })
	op := startOperator(t, opConfig{})
	ctx := context.Background()

	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	cv.Spec.Approvals = []v1alpha1.ApprovalRequest{{Step: "v26.09", By: "alice"}}
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 60*time.Second, "waiting, the old entry stale", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseWaitingForApproval && cv.Status.Plan != nil && len(cv.Status.Plan.Waiting) == 1 && len(cv.Status.Plan.Waiting[0].Stale) == 1
	})
	assert.Equal(t, []string{"alice"}, got.Status.Plan.Waiting[0].Stale)
	time.Sleep(time.Second) // an approval taken by mistake would have resumed the run by now
	require.NoError(t, c.Get(ctx, key, got))
	assert.Equal(t, v1alpha1.PhaseWaitingForApproval, got.Status.Phase, "an entry from before the step waited approves nothing")
	assert.Empty(t, got.Status.Plan.Approvals)
	for _, r := range op.runner.Records() {
		assert.NotEqual(t, 2, r.Hop, "component %s of the gated hop ran", r.Component)
	}
	p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	require.NotNil(t, p)
	assert.Contains(t, p.Message, "spec.approvals names v26.09 (by alice) from before the step waited")
	assert.Contains(t, p.Message, "remove the entry and add it again to approve")

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Approvals = nil })
	waitFor(t, c, key, 30*time.Second, "the stale name dropped with its entry", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.ObservedGeneration == cv.Generation && cv.Status.Plan != nil && len(cv.Status.Plan.Waiting) == 1 && len(cv.Status.Plan.Waiting[0].Stale) == 0
	})
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) {
		s.Approvals = []v1alpha1.ApprovalRequest{{Step: "v26.09", By: "alice"}}
	})
	done := waitFor(t, c, key, 60*time.Second, "approved once added again: at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	require.Len(t, done.Status.Plan.Approvals, 1)
	assert.Equal(t, "alice", done.Status.Plan.Approvals[0].By)
	require.NoError(t, c.Delete(ctx, done))
}
