package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/fleet"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// failOnHop is the simulated runner with the Rollback ability whose
// component fails for good on one hop only.
type failOnHop struct {
	rollbacker
	hop       int
	component string
}

func (f failOnHop) Run(ctx context.Context, t runner.Task) error {
	if t.HopIndex == f.hop && t.Component == f.component {
		return runner.Permanent(fmt.Errorf("%s on hop %d: %w", t.Component, t.HopIndex+1, runnertest.ErrScripted))
	}
	return f.rollbacker.Run(ctx, t)
}

// A rollout that completed, aborted with rollback Moved: every cluster
// is rolled back to v26.06-rc.2. The rollout's status then says it was
// aborted and rolled back (phase Aborted, a RolloutAborted Event), not
// "Completed" (nothing is at the target) nor that clusters "failed, more
// than the failure budget" (nothing failed: the rollback was asked for).
func TestRollbackMovedCompleted(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newFleet(t, c, 2)
	management(t, c, ns)
	require.NoError(t, c.Create(context.Background(), newRollout(ns, func(s *v1alpha1.UpgradeRolloutSpec) { s.Canaries = nil })))
	watchFleet(t, c, ns, 2, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool { return ur.Status.Phase == "Completed" })

	setRollout(t, c, ns, func(s *v1alpha1.UpgradeRolloutSpec) { s.Abort, s.Rollback = true, "Moved" })
	ur := watchFleet(t, c, ns, 2, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool {
		return clusterOf(ur, "c1").Reason == "UpgradeRolledBack" && clusterOf(ur, "c2").Reason == "UpgradeRolledBack"
	})
	for _, name := range []string{"c1", "c2"} {
		assert.Equal(t, "v26.06-rc.2", getCV(t, c, ns, name).Status.CurrentVersion, name)
	}
	assert.Equal(t, "Aborted", string(ur.Status.Phase), "the rollout was aborted and rolled back; status %+v", ur.Status.Conditions)
	waitEvent(t, c, ns, "RolloutAborted")
	assert.NotContains(t, reasons(t, c, ns), "BudgetExceeded", "a rollback asked for is not a failure")
	assert.Len(t, waitNotes(t, c, ns, "RollbackStarted", 2), 2, "one per cluster")
}

// A cluster whose own failure policy (spec.onFailure Rollback) rolled
// back the hop that failed is RolledBack at v26.06-rc.3, the release
// between: its first hop stays completed. An abort with rollback Moved
// "rolls back every cluster the rollout started ... to the version it
// started from", so it must ask it too (spec.rollback), and it ends at
// v26.06-rc.2 like the others. toRollBack skips it (phase RolledBack),
// and the ClusterVersion would refuse it the same way (decide's
// reverting, runner.Revert).
func TestRollbackMovedAfterPolicyRollback(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newFleet(t, c, 2)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cv := getCV(t, c, ns, "c2")
		cv.Spec.OnFailure = "Rollback"
		return c.Update(context.Background(), cv)
	}))
	runnerFor := func(k types.NamespacedName, _ *rest.Config) (runner.Runner, error) {
		rn := runnertest.New()
		if k.Name == "c2" {
			return failOnHop{rollbacker{rn}, 1, "provider"}, nil
		}
		return rollbacker{rn}, nil
	}
	operate(t, ns, runnerFor)
	require.NoError(t, c.Create(context.Background(), newRollout(ns, nil)))
	require.Eventually(t, func() bool {
		cv := getCV(t, c, ns, "c2")
		return cv.Status.Phase == v1alpha1.PhaseRolledBack
	}, 2*time.Minute, 200*time.Millisecond, "c2's failed hop rolled back by its policy")
	require.Equal(t, "v26.06-rc.3", getCV(t, c, ns, "c2").Status.CurrentVersion, "c2's first hop stays completed")

	setRollout(t, c, ns, func(s *v1alpha1.UpgradeRolloutSpec) { s.Abort, s.Rollback = true, "Moved" })
	require.Eventually(t, func() bool {
		return getCV(t, c, ns, "c1").Status.Phase == v1alpha1.PhaseRolledBack
	}, 2*time.Minute, 200*time.Millisecond, "c1 rolled back")
	c2 := getCV(t, c, ns, "c2")
	assert.NotNil(t, c2.Spec.Rollback, "c2 was started by the rollout and moved: it is asked to roll back")
	assert.Eventually(t, func() bool {
		return getCV(t, c, ns, "c2").Status.CurrentVersion == "v26.06-rc.2"
	}, 30*time.Second, 200*time.Millisecond, "c2 back at v26.06-rc.2; it is at %s, RollbackStarted %v", c2.Status.CurrentVersion, notes(t, c, ns, "RollbackStarted"))
}

// A rollback is a run like an upgrade: maxConcurrency bounds both. A
// completed rollout of four clusters, one at a time, aborted with
// rollback Moved, asks them one at a time too, in name order (none in
// flight, none failed), the others WaitingToRollBack in its status
// meanwhile, its conditions naming the one that holds the place; all
// four end back at v26.06-rc.2.
func TestRollbackMovedConcurrency(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newFleet(t, c, 4)
	management(t, c, ns)
	one := intstr.FromInt32(1)
	require.NoError(t, c.Create(context.Background(), newRollout(ns, func(s *v1alpha1.UpgradeRolloutSpec) {
		s.Canaries, s.Waves, s.MaxConcurrency = nil, nil, &one
	})))
	watchFleet(t, c, ns, 1, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool { return ur.Status.Phase == "Completed" })

	setRollout(t, c, ns, func(s *v1alpha1.UpgradeRolloutSpec) { s.Abort, s.Rollback = true, "Moved" })
	waited, notes := false, map[string]bool{}
	ur := watchFleet(t, c, ns, 1, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool {
		if clusterOf(ur, "c4").Reason == "WaitingToRollBack" {
			waited = true
			if p := meta.FindStatusCondition(ur.Status.Conditions, "Progressing"); p != nil {
				notes[p.Message] = true
			}
		}
		for _, name := range []string{"c1", "c2", "c3", "c4"} {
			if clusterOf(ur, name).Reason != "UpgradeRolledBack" {
				return false
			}
		}
		return true
	})
	assert.True(t, waited, "c4 was seen WaitingToRollBack while the others rolled back")
	// The clusters asked hold the places, and are named.
	aborted := waitEvent(t, c, ns, "RolloutAborted")
	require.Len(t, aborted, 1)
	assert.Regexp(t, `^aborted: no cluster starts; .*; 3 waiting to roll back, at most 1 in flight at once \(maxConcurrency 1\): in flight c1$`, aborted[0])
	for n := range notes {
		assert.Regexp(t, `; [1-3] waiting to roll back, at most 1 in flight at once \(maxConcurrency 1\): in flight c[1-3]$`, n)
	}
	var asked []string
	for _, n := range waitNotes(t, c, ns, "RollbackStarted", 4) {
		asked = append(asked, strings.Fields(n)[3])
	}
	assert.Equal(t, []string{"c1", "c2", "c3", "c4"}, asked, "one at a time, in name order")
	for _, name := range []string{"c1", "c2", "c3", "c4"} {
		assert.Equal(t, "v26.06-rc.2", getCV(t, c, ns, name).Status.CurrentVersion, name)
	}
	assert.Equal(t, v1alpha1.RolloutCounts{RolledBack: 4}, ur.Status.Counts)
}

// A soaking cluster counts against maxConcurrency already: an abort with
// rollback Moved asks it at once, taking no second place (with
// maxConcurrency 1 and a 30-minute soak it would otherwise wait for the
// soak to end).
func TestRollbackMovedSoaking(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newFleet(t, c, 2)
	management(t, c, ns)
	one := intstr.FromInt32(1)
	require.NoError(t, c.Create(context.Background(), newRollout(ns, func(s *v1alpha1.UpgradeRolloutSpec) {
		s.MaxConcurrency, s.MinSuccessTime = &one, &metav1.Duration{Duration: 30 * time.Minute}
	})))
	watchFleet(t, c, ns, 1, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool { return clusterOf(ur, "c1").State == "Soaking" })

	setRollout(t, c, ns, func(s *v1alpha1.UpgradeRolloutSpec) { s.Abort, s.Rollback = true, "Moved" })
	ur := watchFleet(t, c, ns, 1, time.Minute, func(ur *v1alpha1.UpgradeRollout) bool {
		return clusterOf(ur, "c1").Reason == "UpgradeRolledBack"
	})
	assert.Equal(t, "RolledBack", clusterOf(ur, "c1").State)
	assert.Equal(t, "v26.06-rc.2", getCV(t, c, ns, "c1").Status.CurrentVersion)
	assert.Empty(t, getCV(t, c, ns, "c2").Annotations[fleet.Started], "c2 never started")
}
