package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// TestRollbackRequested: spec.rollback rolls the last upgrade back
// through its DAGs, last hop first, to the version it started from,
// whether it completed, failed (no rollback policy; the failed component
// is not run again) or was in progress (stopped at its safe point
// first). The ClusterVersion is then RolledBack, not failing, with
// UpgradeRollingBack and UpgradeRolledBack Events; nothing starts while
// spec.rollback is set, and clearing it starts the upgrade again.
func TestRollbackRequested(t *testing.T) {
	needAPIServer(t)
	const reason = "rollout fleet/to-v26.09 aborted"
	tests := []struct {
		name   string
		failOn string // "hop/component" that fails for good
		// inFlight: the rollback is asked while hop 1's
		// kubernetes-master (3 s) runs.
		inFlight bool
		// rolled are the hops rolled back, in order.
		rolled []string
	}{
		{name: "completed", rolled: []string{"2", "1", "0"}},
		{name: "failed", failOn: "2/kubernetes-worker", rolled: []string{"2", "1", "0"}},
		{name: "in progress", inFlight: true, rolled: []string{"0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t)
			ns := newNamespace(t, c)
			applyCatalog(t, c, ns, catalogDir)
			rn := runnertest.New()
			if tt.inFlight {
				rn.Script("kubernetes-master", runnertest.Script{Delay: 3 * time.Second})
			}
			rb := &rollbackRunner{Runner: rn, failOn: tt.failOn}
			startOperator(t, opConfig{rn: rn, inner: rb})
			ctx := context.Background()

			cv := newCV(ns, "v26.06-rc.2", "v26.09")
			require.NoError(t, c.Create(ctx, cv))
			key := client.ObjectKeyFromObject(cv)
			if tt.inFlight {
				waitFor(t, c, key, 60*time.Second, "kubernetes-master running", func(cv *v1alpha1.ClusterVersion) bool {
					return cv.Status.Plan != nil && cv.Status.Plan.Progress.Done >= 3
				})
			} else {
				waitFor(t, c, key, 60*time.Second, "ended", func(cv *v1alpha1.ClusterVersion) bool {
					return len(cv.Status.History) > 0 && cv.Status.History[0].CompletionTime != nil
				})
			}
			ran := len(rn.Records())
			setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Rollback = &v1alpha1.RollbackRequest{Reason: reason} })
			got := waitFor(t, c, key, 60*time.Second, "rolled back", func(cv *v1alpha1.ClusterVersion) bool {
				return cv.Status.Phase == v1alpha1.PhaseRolledBack
			})
			st := got.Status
			assert.Equal(t, "v26.06-rc.2", st.CurrentVersion, "back where the upgrade started")
			require.Len(t, st.History, 1, "the upgrade's entry, not a new one")
			assert.Equal(t, v1alpha1.HistoryRolledBack, st.History[0].State)
			assert.Equal(t, "the upgrade v26.06-rc.2 -> v26.09 was rolled back on request (rollback requested: "+reason+"); the system runs v26.06-rc.2", st.History[0].Message)
			assert.Equal(t, "RolledBack", st.Plan.Phase)
			assert.True(t, meta.IsStatusConditionFalse(st.Conditions, v1alpha1.ConditionFailing), "a rollback asked for is not a failure")
			p := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing)
			require.NotNil(t, p)
			assert.Equal(t, "RollbackRequested", p.Reason)

			var hops []string
			for _, r := range rb.rolledBack() {
				if h, _, _ := strings.Cut(r, "/"); len(hops) == 0 || hops[len(hops)-1] != h {
					hops = append(hops, h)
				}
			}
			assert.Equal(t, tt.rolled, hops, "hops rolled back, last first: %v", rb.rolledBack())
			if tt.inFlight {
				assert.Contains(t, rb.rolledBack(), "0/kubernetes-master", "the component running when the rollback was asked finished, and is rolled back")
				assert.NotContains(t, rb.rolledBack(), "0/calico", "what never started is not rolled back")
			}
			for _, r := range rn.Records()[ran:] {
				if !tt.inFlight || r.Hop != 0 || r.Component != "kubernetes-master" {
					t.Errorf("%d/%s ran after the rollback was asked", r.Hop, r.Component)
				}
			}
			require.Eventually(t, func() bool {
				return slices.Contains(eventReasons(t, c, ns), "UpgradeRolledBack") && slices.Contains(eventReasons(t, c, ns), "UpgradeRollingBack")
			}, 10*time.Second, 100*time.Millisecond, "UpgradeRollingBack and UpgradeRolledBack Events; got %v", eventReasons(t, c, ns))
			assert.Equal(t, "Normal", eventType(t, c, ns, "UpgradeRolledBack"))

			// Nothing starts while spec.rollback is set, and the status
			// says why.
			n, m := len(rn.Records()), len(rb.rolledBack())
			setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.AcceptRisks = append(s.AcceptRisks, "nudge") })
			held := waitFor(t, c, key, 30*time.Second, "held", func(cv *v1alpha1.ClusterVersion) bool {
				p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
				return p != nil && p.ObservedGeneration == cv.Generation && strings.Contains(p.Message, "clear spec.rollback to start it")
			})
			assert.Equal(t, v1alpha1.PhaseRolledBack, held.Status.Phase)
			assert.Len(t, rn.Records(), n)
			assert.Len(t, rb.rolledBack(), m)

			// Cleared, the upgrade starts again from where the system is.
			rb.setFailOn("")
			setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Rollback = nil })
			done := waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
				return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
			})
			require.Len(t, done.Status.History, 2)
			assert.Equal(t, v1alpha1.HistoryCompleted, done.Status.History[0].State)
			assert.Equal(t, v1alpha1.HistoryRolledBack, done.Status.History[1].State)
		})
	}
}
