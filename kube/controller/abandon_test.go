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
)

// TestAbandonWithNothingRunning: spec.abandon set on an idle
// ClusterVersion, together with a new desiredVersion or before it, starts
// nothing (it once started the upgrade and abandoned it at once): the
// phase stays Idle, Progressing says that there is nothing to abandon and
// what to clear, one Warning Event says so, and no history entry is
// opened. Clearing spec.abandon starts the upgrade normally.
func TestAbandonWithNothingRunning(t *testing.T) {
	needAPIServer(t)
	abandon := func(s *v1alpha1.ClusterVersionSpec) {
		s.Abandon = &v1alpha1.AbandonRequest{Reason: "test: nothing runs"}
	}
	target := func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "v26.06" }
	tests := []struct {
		name    string
		changes []func(*v1alpha1.ClusterVersionSpec) // applied in order, each reconciled before the next
	}{
		{name: "together with the new target", changes: []func(*v1alpha1.ClusterVersionSpec){func(s *v1alpha1.ClusterVersionSpec) { abandon(s); target(s) }}},
		{name: "before the new target", changes: []func(*v1alpha1.ClusterVersionSpec){abandon, target}},
		{name: "with a paused new target", changes: []func(*v1alpha1.ClusterVersionSpec){func(s *v1alpha1.ClusterVersionSpec) { s.Paused = true; target(s) }, abandon, func(s *v1alpha1.ClusterVersionSpec) { s.Paused = false }}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t)
			ns := newNamespace(t, c)
			applyCatalog(t, c, ns, catalogDir)
			op := startOperator(t, opConfig{})
			ctx := context.Background()
			cv := newCV(ns, "v26.06-rc.2", "v26.06-rc.2")
			require.NoError(t, c.Create(ctx, cv))
			key := client.ObjectKeyFromObject(cv)
			waitFor(t, c, key, 30*time.Second, "idle", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseIdle })

			var got *v1alpha1.ClusterVersion
			for _, change := range tt.changes {
				setSpec(t, c, key, change)
				var now v1alpha1.ClusterVersion
				require.NoError(t, c.Get(ctx, key, &now))
				got = waitFor(t, c, key, 30*time.Second, "reconciled", func(cv *v1alpha1.ClusterVersion) bool {
					return cv.Status.ObservedGeneration >= now.Generation
				})
			}
			time.Sleep(500 * time.Millisecond) // a run started by mistake would have run components by now
			require.NoError(t, c.Get(ctx, key, got))
			assert.Empty(t, op.runner.Records(), "nothing runs while spec.abandon is set and nothing was running")
			assert.Equal(t, v1alpha1.PhaseIdle, got.Status.Phase)
			assert.Empty(t, got.Status.History, "no upgrade was started")
			assert.Equal(t, "v26.06-rc.2", got.Status.CurrentVersion)
			p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
			require.NotNil(t, p)
			assert.Equal(t, metav1.ConditionFalse, p.Status)
			assert.Equal(t, "NothingToAbandon", p.Reason)
			assert.Equal(t, "spec.abandon is set and no upgrade is running: nothing to abandon; clear spec.abandon to start the upgrade to v26.06", p.Message)
			assert.True(t, meta.IsStatusConditionFalse(got.Status.Conditions, v1alpha1.ConditionFailing))
			assert.NotContains(t, eventReasons(t, c, ns), "UpgradeStarted")
			assert.NotContains(t, eventReasons(t, c, ns), "UpgradeAbandoned")
			require.Eventually(t, func() bool { return len(eventNotes(t, c, ns, "NothingToAbandon")) > 0 }, 10*time.Second, 100*time.Millisecond, "a NothingToAbandon Event")
			assert.Equal(t, []string{p.Message}, eventNotes(t, c, ns, "NothingToAbandon"), "one Event, however many reconciles")
			assert.Equal(t, "Warning", eventType(t, c, ns, "NothingToAbandon"))

			setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Abandon = nil })
			got = waitFor(t, c, key, 60*time.Second, "at v26.06", func(cv *v1alpha1.ClusterVersion) bool {
				return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.06"
			})
			require.Len(t, got.Status.History, 1)
			assert.Equal(t, v1alpha1.UpdateHistory{From: "v26.06-rc.2", To: "v26.06", State: v1alpha1.HistoryCompleted}, withoutTimes(got.Status.History[0]))
			assert.NotEmpty(t, op.runner.Records())
			require.NoError(t, c.Delete(ctx, got))
		})
	}
}
