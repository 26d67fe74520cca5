package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// TestUntilReached: an embedder's executor options may carry an until
// step for every ClusterVersion (runner.WithUntil). A run stopped there
// is Paused (Progressing reason UntilReached), not Failed, is not started
// again and again, and says that the step is the operator's.
func TestUntilReached(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	op := startOperator(t, opConfig{opts: []controller.Option{controller.WithExecutorOptions(runner.WithUntil("v26.06"))}})
	ctx := context.Background()

	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 60*time.Second, "paused at the until step", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return p != nil && p.Reason == "UntilReached"
	})
	st := got.Status
	p := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing)
	assert.Contains(t, p.Message, "restart the operator without it", "an operator-wide until step is not moved by the spec")
	assert.NotContains(t, p.Message, "change the spec")
	assert.Equal(t, v1alpha1.PhasePaused, st.Phase)
	assert.Equal(t, "v26.06", st.CurrentVersion)
	assert.Equal(t, string(record.Paused), st.Plan.Phase)
	assert.Equal(t, v1alpha1.HistoryPartial, st.History[0].State)
	f := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionFailing)
	require.NotNil(t, f)
	assert.Equal(t, metav1.ConditionFalse, f.Status, "Failing: %s %s", f.Reason, f.Message)
	assert.NotContains(t, eventReasons(t, c, ns), "UpgradeFailed")
	n := len(op.runner.Records())
	time.Sleep(time.Second)
	assert.Len(t, op.runner.Records(), n, "a run stopped at its until step is not started again")

	abandonAndDelete(t, c, key)
}

// TestSpecUntil: spec.until runs the upgrade to a step and stops there
// (StarlingX's targetDeployStep); moving it on goes on to the next stop,
// clearing it finishes the upgrade, and no component runs twice. A step
// the plan does not have fails the plan, naming the plan's hops.
func TestSpecUntil(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	op := startOperator(t, opConfig{})
	ctx := context.Background()

	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	cv.Spec.Until = "v26.07"
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 60*time.Second, "a plan that has no such hop fails", func(cv *v1alpha1.ClusterVersion) bool {
		f := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionFailing)
		return f != nil && f.Reason == "PlanInvalid"
	})
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	assert.Contains(t, f.Message, "until v26.07: the plan has no hop to v26.07; its hops are v26.06-rc.3, v26.06, v26.09")
	assert.Empty(t, op.runner.Records(), "nothing runs on a plan refused for its until step")

	stopAt := func(step, current, what string) *v1alpha1.ClusterVersion {
		t.Helper()
		setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Until = step })
		return waitFor(t, c, key, 60*time.Second, what, func(cv *v1alpha1.ClusterVersion) bool {
			p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
			return cv.Status.Phase == v1alpha1.PhasePaused && p != nil && p.Reason == "UntilReached" &&
				p.ObservedGeneration == cv.Generation && cv.Status.CurrentVersion == current
		})
	}
	got = stopAt("v26.06-rc.3", "v26.06-rc.3", "stopped after the first hop")
	p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Contains(t, p.Message, "stopped after v26.06-rc.3 as spec.until asks")
	assert.Contains(t, p.Message, "clear spec.until, or set it to a later step, to go on")
	assert.Equal(t, v1alpha1.HistoryPartial, got.Status.History[0].State)
	assert.NotContains(t, eventReasons(t, c, ns), "UpgradeFailed")

	got = stopAt("v26.06", "v26.06", "moved on: stopped after the second hop")
	assert.Equal(t, "v26.06-rc.2", got.Status.History[0].From, "one upgrade, resumed: not a new one")
	assert.Len(t, got.Status.History, 1)

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Until = "" })
	got = waitFor(t, c, key, 60*time.Second, "cleared: the upgrade completes", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.09"
	})
	assert.Equal(t, v1alpha1.HistoryCompleted, got.Status.History[0].State)
	seen := map[string]int{}
	for _, rec := range op.runner.Records() {
		seen[fmt.Sprint(rec.Hop, "/", rec.Component)]++
	}
	for step, n := range seen {
		assert.Equal(t, 1, n, "%s ran %d times", step, n)
	}
	require.NoError(t, c.Delete(ctx, got))
}
