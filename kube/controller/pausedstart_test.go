package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// TestPausedBeforeStartKeepsHistory: a new target set together with
// spec.paused after an upgrade ended does not start; the status then says
// Paused, and the reconciles that follow must not take the last upgrade's
// plan for one in flight: its history entry stays as it ended (no
// "superseded"), and clearing paused starts the new upgrade with an entry
// of its own.
func TestPausedBeforeStartKeepsHistory(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	startOperator(t, opConfig{})
	ctx := context.Background()

	cv := newCV(ns, "v26.06", "v26.06.1")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	done := waitFor(t, c, key, 30*time.Second, "at v26.06.1", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.06.1" && len(cv.Status.History) == 1
	})
	first := done.Status.History[0]
	require.Equal(t, v1alpha1.HistoryCompleted, first.State)

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Paused, s.DesiredVersion = true, "v26.09" })
	paused := waitFor(t, c, key, 30*time.Second, "paused", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhasePaused && cv.Status.DesiredVersion == "v26.09"
	})
	// Another reconcile or two: a spec change the upgrade does not read.
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Channel = ""; s.AcceptRisks = []string{"none-such"} })
	time.Sleep(time.Second)
	require.NoError(t, c.Get(ctx, key, paused))
	assert.Equal(t, v1alpha1.PhasePaused, paused.Status.Phase)
	require.Len(t, paused.Status.History, 1, "nothing started")
	h := paused.Status.History[0]
	assert.Equal(t, v1alpha1.HistoryCompleted, h.State, "the completed upgrade's entry is kept: %+v", h)
	assert.Empty(t, h.Message)
	assert.Equal(t, first.CompletionTime, h.CompletionTime)
	require.NotNil(t, paused.Status.Plan)
	assert.Equal(t, "v26.09", paused.Status.Plan.Target, "the plan shown is the upgrade that waits to start")
	assert.Equal(t, 0, paused.Status.Plan.Progress.Done)

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Paused = false })
	got := waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.09"
	})
	require.Len(t, got.Status.History, 2)
	assert.Equal(t, v1alpha1.UpdateHistory{From: "v26.06.1", To: "v26.09", State: v1alpha1.HistoryCompleted}, withoutTimes(got.Status.History[0]))
	assert.Equal(t, v1alpha1.HistoryCompleted, got.Status.History[1].State)
	assert.Empty(t, got.Status.History[1].Message)
}

func withoutTimes(h v1alpha1.UpdateHistory) v1alpha1.UpdateHistory {
	h.StartedTime, h.CompletionTime = v1alpha1.UpdateHistory{}.StartedTime, nil
	return h
}
