package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/runner"
)

// TestUntilReached: the ClusterVersion has no --until, but an embedder's
// executor options may carry one (runner.WithUntil). A run stopped there
// is Paused (Progressing reason UntilReached), not Failed, and is not
// started again and again: it waits for a spec change.
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
	assert.Equal(t, v1alpha1.PhasePaused, st.Phase)
	assert.Equal(t, "v26.06", st.CurrentVersion)
	assert.Equal(t, string(runner.Paused), st.Plan.Phase)
	assert.Equal(t, v1alpha1.HistoryPartial, st.History[0].State)
	f := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionFailing)
	require.NotNil(t, f)
	assert.Equal(t, metav1.ConditionFalse, f.Status, "Failing: %s %s", f.Reason, f.Message)
	assert.NotContains(t, eventReasons(t, c, ns), "UpgradeFailed")
	n := len(op.runner.Records())
	time.Sleep(time.Second)
	assert.Len(t, op.runner.Records(), n, "a run stopped at its until step is not started again")

	// Clean up: abandon it, then delete it.
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Abandon = &v1alpha1.AbandonRequest{Reason: "test: done"} })
	got = waitFor(t, c, key, 30*time.Second, "abandoned", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseAbandoned })
	require.NoError(t, c.Delete(ctx, got))
}
