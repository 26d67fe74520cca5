package fleet

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/rollout"
)

// TestProgressOnly: a rollout status that changed in its clusters'
// states, its counts (but the failed), its next decision or its
// conditions' messages waits for the status interval; any other change
// is written at once.
func TestProgressOnly(t *testing.T) {
	was := func() *v1alpha1.UpgradeRolloutStatus {
		return &v1alpha1.UpgradeRolloutStatus{
			ObservedGeneration: 1, Phase: "Progressing", Wave: "wave-1",
			Counts:     v1alpha1.RolloutCounts{Pending: 2, Upgrading: 1},
			Waves:      []v1alpha1.WaveStatus{{Name: "wave-1", Clusters: []v1alpha1.ClusterStatus{{Name: "a", State: "Upgrading"}, {Name: "b", State: "Pending"}, {Name: "c", State: "Pending"}}}},
			Conditions: []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Progressing", Message: "wave 1 of 1: 1 upgrading"}},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.UpgradeRolloutStatus)
		want   bool
	}{
		{"nothing", func(*v1alpha1.UpgradeRolloutStatus) {}, true},
		{"a cluster done, the counts and the message", func(st *v1alpha1.UpgradeRolloutStatus) {
			st.Waves[0].Clusters[0].State = "Succeeded"
			st.Counts.Upgrading, st.Counts.Succeeded = 0, 1
			st.Conditions[0].Message = "wave 1 of 1: 1 succeeded"
		}, true},
		{"the next decision", func(st *v1alpha1.UpgradeRolloutStatus) { st.NextDecision = &metav1.Time{} }, true},
		{"a cluster failed", func(st *v1alpha1.UpgradeRolloutStatus) {
			st.Waves[0].Clusters[0].State = "Failed"
			st.Counts.Upgrading, st.Counts.Failed = 0, 1
		}, false},
		{"the phase", func(st *v1alpha1.UpgradeRolloutStatus) { st.Phase = "Completed" }, false},
		{"the wave", func(st *v1alpha1.UpgradeRolloutStatus) { st.Wave = "wave-2" }, false},
		{"a condition's reason", func(st *v1alpha1.UpgradeRolloutStatus) { st.Conditions[0].Reason = "Paused" }, false},
		{"a condition's status", func(st *v1alpha1.UpgradeRolloutStatus) { st.Conditions[0].Status = metav1.ConditionFalse }, false},
		{"a new condition", func(st *v1alpha1.UpgradeRolloutStatus) {
			st.Conditions = append(st.Conditions, metav1.Condition{Type: "Failed", Status: metav1.ConditionFalse, Reason: "Progressing"})
		}, false},
		{"an approval", func(st *v1alpha1.UpgradeRolloutStatus) {
			st.Approvals = append(st.Approvals, v1alpha1.RecordedWaveApproval{Wave: "wave-1", By: "alice"})
		}, false},
		{"the dry run", func(st *v1alpha1.UpgradeRolloutStatus) { st.DryRun = &v1alpha1.DryRun{ObservedGeneration: 1} }, false},
		{"the generation", func(st *v1alpha1.UpgradeRolloutStatus) { st.ObservedGeneration = 2 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := was()
			tc.change(st)
			assert.Equal(t, tc.want, progressOnly(was(), st), "progressOnly after %s", tc.name)
		})
	}
}

// TestWaitingNote: the note of the clusters waiting to roll back names
// the first five that hold the places and counts the others.
func TestWaitingNote(t *testing.T) {
	two, five := rollout.Amount{N: 2}, rollout.Amount{N: 5, Percent: true}
	tests := []struct {
		name             string
		waiting, holding []string
		limit            int
		max              rollout.Amount
		want             string
	}{
		{"none holding", []string{"c3"}, nil, 2, two, "; 1 waiting to roll back, at most 2 in flight at once (maxConcurrency 2)"},
		{"two holding", []string{"c3", "c4"}, []string{"c1", "c2"}, 2, two, "; 2 waiting to roll back, at most 2 in flight at once (maxConcurrency 2): in flight c1, c2"},
		{"more than five holding", []string{"z"}, []string{"a", "b", "c", "d", "e", "f", "g"}, 7, five, "; 1 waiting to roll back, at most 7 in flight at once (maxConcurrency 5%): in flight a, b, c, d, e and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, waitingNote(tt.waiting, tt.holding, tt.limit, rollout.Spec{MaxConcurrency: tt.max}))
		})
	}
}
