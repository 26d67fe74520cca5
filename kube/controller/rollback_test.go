package controller_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// rollbackRunner is the fake runner with the Rollback ability: it fails
// the component failOn names ("hop/component", hop from 0) for good,
// records what it rolls back (the same way) and fails the rollbacks of
// the components in fail.
type rollbackRunner struct {
	*runnertest.Runner
	fail map[string]bool

	mu     sync.Mutex
	failOn string
	rolled []string
}

func (r *rollbackRunner) Run(ctx context.Context, t runner.Task) error {
	r.mu.Lock()
	fail := r.failOn == fmt.Sprintf("%d/%s", t.HopIndex, t.Component)
	r.mu.Unlock()
	if fail {
		return runner.Permanent(fmt.Errorf("%s on hop %d: %w", t.Component, t.HopIndex+1, runnertest.ErrScripted))
	}
	return r.Runner.Run(ctx, t)
}

func (r *rollbackRunner) setFailOn(step string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failOn = step
}

func (r *rollbackRunner) Rollback(_ context.Context, t runner.Task) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rolled = append(r.rolled, fmt.Sprintf("%d/%s", t.HopIndex, t.Component))
	if r.fail[t.Component] {
		return fmt.Errorf("rollback of %s: %w", t.Component, runnertest.ErrScripted)
	}
	return nil
}

func (r *rollbackRunner) rolledBack() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.rolled)
}

// TestRollback: a hop whose rule says onFailure: rollback, and a
// component of it that fails for good. The rolled-back upgrade is not a
// failure of the system: phase and history RolledBack, an
// UpgradeRolledBack Event, currentVersion the release before the hop
// (the hops before it stay completed), and nothing more runs until the
// spec changes; then a new upgrade starts from there and completes. A
// rollback that fails is a failure: phase Failed, Failing RollbackFailed
// with the code, history Failed.
func TestRollback(t *testing.T) {
	needAPIServer(t)
	tests := []struct {
		name         string
		failRollback map[string]bool
		phase        v1alpha1.Phase
		history      v1alpha1.HistoryState
		reason       string // the Failing condition's and the Event's
		event        string
	}{
		{name: "rolled back", phase: v1alpha1.PhaseRolledBack, history: v1alpha1.HistoryRolledBack, reason: "UpgradeRolledBack", event: "UpgradeRolledBack"},
		{name: "rollback failed", failRollback: map[string]bool{"kubernetes-master": true}, phase: v1alpha1.PhaseFailed, history: v1alpha1.HistoryFailed, reason: "RollbackFailed", event: "UpgradeRollbackFailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t)
			ns := newNamespace(t, c)
			applyCatalog(t, c, ns, catalogDir)
			setRule(t, c, ns, "v26.09", func(r *v1alpha1.Rule) { r.OnFailure = "rollback" })
			rn := runnertest.New()
			rb := &rollbackRunner{Runner: rn, fail: tt.failRollback, failOn: "2/kubernetes-worker"}
			startOperator(t, opConfig{rn: rn, inner: rb})
			ctx := context.Background()

			cv := newCV(ns, "v26.06-rc.2", "v26.09")
			require.NoError(t, c.Create(ctx, cv))
			key := client.ObjectKeyFromObject(cv)
			got := waitFor(t, c, key, 60*time.Second, "ended", func(cv *v1alpha1.ClusterVersion) bool {
				return len(cv.Status.History) > 0 && cv.Status.History[0].CompletionTime != nil
			})
			st := got.Status
			assert.Equal(t, tt.phase, st.Phase)
			assert.Equal(t, tt.history, st.History[0].State, "history: %+v", st.History[0])
			assert.Equal(t, "v26.06", st.CurrentVersion, "the hops before the failed one stay")
			require.NotNil(t, st.Plan.LastFailure)
			assert.Equal(t, "kubernetes-worker", st.Plan.LastFailure.Component)
			assert.Equal(t, 2, st.Plan.LastFailure.Hop)
			rolled := rb.rolledBack()
			assert.Contains(t, rolled, "2/kubernetes-master", "the failed hop's components are rolled back")
			for _, r := range rolled {
				assert.Regexp(t, `^2/`, r, "only the failed hop is rolled back")
			}
			f := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionFailing)
			require.NotNil(t, f)
			assert.Equal(t, metav1.ConditionTrue, f.Status, "the desired version was not reached")
			assert.Equal(t, tt.reason, f.Reason)
			assert.Contains(t, f.Message, "kubernetes-worker")
			p := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing)
			require.NotNil(t, p)
			assert.Equal(t, metav1.ConditionFalse, p.Status)
			require.Eventually(t, func() bool {
				return slices.Contains(eventReasons(t, c, ns), tt.event)
			}, 10*time.Second, 100*time.Millisecond, "an %s Event; got %v", tt.event, eventReasons(t, c, ns))
			assert.Equal(t, "Warning", eventType(t, c, ns, tt.event))
			if tt.phase == v1alpha1.PhaseRolledBack {
				assert.Equal(t, "RolledBack", st.Plan.Phase)
				assert.Contains(t, f.Message, "the system runs v26.06")
				assert.NotContains(t, eventReasons(t, c, ns), "UpgradeFailed")
			} else {
				assert.Equal(t, "RollbackFailed", st.Plan.Phase)
				assert.Contains(t, f.Message, string(record.CodeRollbackFailed))
				assert.Contains(t, f.Message, "kubernetes-master")
				assert.Contains(t, f.Message, "increment spec.retry to retry the rollbacks that failed", "a failed rollback is retried (an irreversible stop is not: rollbackNext)")
			}

			// Nothing runs until the spec changes.
			n, m := len(rn.Records()), len(rb.rolledBack())
			time.Sleep(time.Second)
			assert.Len(t, rn.Records(), n, "an upgrade that ended waits for a spec change")
			assert.Len(t, rb.rolledBack(), m, "a rollback that ended waits for a spec change")
			if tt.phase != v1alpha1.PhaseRolledBack {
				// Failed with components moved: the webhook keeps it.
				deleteAllowed(t, c, got)
				return
			}
			// A spec change starts a new upgrade from where the system is.
			rb.setFailOn("")
			setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.AcceptRisks = append(s.AcceptRisks, "operator-retry") })
			done := waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
				return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
			})
			require.Len(t, done.Status.History, 2)
			assert.Equal(t, v1alpha1.HistoryCompleted, done.Status.History[0].State)
			assert.Equal(t, "v26.06", done.Status.History[0].From, "the retry starts where the system is")
			assert.Equal(t, v1alpha1.HistoryRolledBack, done.Status.History[1].State)
			assert.Equal(t, []string{"v26.06 -> v26.09"}, done.Status.Plan.Hops)
			assert.True(t, meta.IsStatusConditionFalse(done.Status.Conditions, v1alpha1.ConditionFailing))
			require.NoError(t, c.Delete(ctx, done))
		})
	}
}
