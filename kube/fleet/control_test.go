package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/fleet"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// setRollout changes the spec of the rollout to-v26.06 of ns.
func setRollout(t *testing.T, c client.Client, ns string, mutate func(*v1alpha1.UpgradeRolloutSpec)) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var ur v1alpha1.UpgradeRollout
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "to-v26.06"}, &ur); err != nil {
			return err
		}
		mutate(&ur.Spec)
		return c.Update(context.Background(), &ur)
	}))
}

// notes are the notes of the rollout's Events of reason, oldest first.
func notes(t *testing.T, c client.Client, ns, reason string) []string {
	var l eventsv1.EventList
	require.NoError(t, c.List(context.Background(), &l, client.InNamespace(ns)))
	slices.SortFunc(l.Items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	var out []string
	for _, e := range l.Items {
		if e.Regarding.Kind == "UpgradeRollout" && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

func waitEvent(t *testing.T, c client.Client, ns, reason string) []string {
	t.Helper()
	return waitNotes(t, c, ns, reason, 1)
}

// waitNotes waits for at least n Events of that reason about an
// UpgradeRollout (client-go sends them in the background, after the
// status a test waited for) and returns their notes.
func waitNotes(t *testing.T, c client.Client, ns, reason string, n int) []string {
	t.Helper()
	var got []string
	require.Eventually(t, func() bool { got = notes(t, c, ns, reason); return len(got) >= n }, 20*time.Second, 100*time.Millisecond,
		"%d %s Events; got %d", n, reason, len(got))
	return got
}

// clusterOf is the rollout status's entry of the ClusterVersion name.
func clusterOf(ur *v1alpha1.UpgradeRollout, name string) v1alpha1.ClusterStatus {
	for _, w := range ur.Status.Waves {
		for _, cs := range w.Clusters {
			if cs.Name == name {
				return cs
			}
		}
	}
	return v1alpha1.ClusterStatus{}
}

func getCV(t *testing.T, c client.Client, ns, name string) *v1alpha1.ClusterVersion {
	t.Helper()
	var cv v1alpha1.ClusterVersion
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cv))
	return &cv
}

// TestRollback: the canary's upgrade fails, with a
// budget of 0, and the canary is rolled back through its DAG to the
// version it started from, observed there: by spec.abort with
// spec.rollback Failed after the rollout failed, or by itself with
// spec.onFailure RollbackRun. No other cluster starts.
func TestRollback(t *testing.T) {
	needAPIServer(t)
	tests := []struct {
		name   string
		spec   func(*v1alpha1.UpgradeRolloutSpec)
		abort  bool   // abort with rollback Failed once the rollout failed
		reason string // of the canary in the rollout's status once rolled back
	}{
		{"abort with rollback Failed", nil, true, "UpgradeRolledBack"},
		{"onFailure RollbackRun", func(s *v1alpha1.UpgradeRolloutSpec) { s.OnFailure = "RollbackRun" }, false, "UpgradeRolledBack"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t)
			ns := newFleet(t, c, 3)
			management(t, c, ns, "c1")
			require.NoError(t, c.Create(context.Background(), newRollout(ns, tt.spec)))
			watchFleet(t, c, ns, 2, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool { return ur.Status.Phase == "Failed" })
			if tt.abort {
				assert.Equal(t, v1alpha1.PhaseFailed, getCV(t, c, ns, "c1").Status.Phase, "the canary failed and waits")
				setRollout(t, c, ns, func(s *v1alpha1.UpgradeRolloutSpec) { s.Abort, s.Rollback = true, "Failed" })
				assert.Equal(t, []string{"aborted: rolling back c1 to v26.06-rc.2 through its DAG (its upgrade to v26.06 failed)"}, waitEvent(t, c, ns, "RollbackStarted"))
			}
			ur := watchFleet(t, c, ns, 2, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool {
				return clusterOf(ur, "c1").Reason == tt.reason
			})
			cv := getCV(t, c, ns, "c1")
			assert.Equal(t, v1alpha1.PhaseRolledBack, cv.Status.Phase)
			assert.Equal(t, "v26.06-rc.2", cv.Status.CurrentVersion, "the canary is observed back at the version it started from")
			assert.Equal(t, v1alpha1.HistoryRolledBack, cv.Status.History[0].State)
			assert.Equal(t, "Failed", clusterOf(ur, "c1").State)
			assert.Equal(t, "Failed", ur.Status.Phase)
			if tt.abort {
				assert.Equal(t, "to-v26.06", cv.Annotations[fleet.RollbackBy])
			}
			for _, name := range []string{"c2", "c3"} {
				assert.Empty(t, getCV(t, c, ns, name).Annotations[fleet.Started], "%s started after the canary failed", name)
			}
		})
	}
}

// TestRollbackMoved: the canary completes, a cluster of the first wave
// fails with a budget of 0, and the rollout, aborted with rollback
// Moved, rolls back every cluster it started, whether its upgrade
// completed, failed or was in progress, through its DAG, to the version
// it started from, each observed there (RolledBack, the components of
// its completed hops rolled back); in the rollout's status the ones that
// had not failed are RolledBack, not Failed; the cluster of the wave it
// never started is not touched.
func TestRollbackMoved(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newFleet(t, c, 4)
	var mu sync.Mutex
	rolled := map[string][]string{} // cluster -> hop/component rolled back
	runnerFor := func(k types.NamespacedName, _ *rest.Config) (runner.Runner, error) {
		rn := runnertest.New()
		for _, name := range []string{"bkeagent", "provider", "calico"} {
			rn.Script(name, runnertest.Script{Delay: 100 * time.Millisecond})
		}
		if k.Name == "c2" {
			rn.Script("provider", runnertest.Script{FailAlways: true, Permanent: true})
		}
		return recordingRollbacker{rn, func(t runner.Task) {
			mu.Lock()
			defer mu.Unlock()
			rolled[k.Name] = append(rolled[k.Name], fmt.Sprintf("%d/%s", t.HopIndex, t.Component))
		}}, nil
	}
	operate(t, ns, runnerFor)
	require.NoError(t, c.Create(context.Background(), newRollout(ns, nil)))
	watchFleet(t, c, ns, 2, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool { return ur.Status.Phase == "Failed" })
	assert.Equal(t, v1alpha1.PhaseIdle, getCV(t, c, ns, "c1").Status.Phase, "the canary completed")
	assert.Equal(t, "v26.06", getCV(t, c, ns, "c1").Status.CurrentVersion)

	setRollout(t, c, ns, func(s *v1alpha1.UpgradeRolloutSpec) { s.Abort, s.Rollback = true, "Moved" })
	ur := watchFleet(t, c, ns, 2, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool {
		return clusterOf(ur, "c1").Reason == "UpgradeRolledBack" && clusterOf(ur, "c2").Reason == "UpgradeRolledBack" && clusterOf(ur, "c3").Reason == "UpgradeRolledBack"
	})
	started := waitNotes(t, c, ns, "RollbackStarted", 3)
	assert.Contains(t, started, "aborted: rolling back c1 to v26.06-rc.2 through its DAG (its upgrade to v26.06 is completed)")
	assert.Contains(t, started, "aborted: rolling back c2 to v26.06-rc.2 through its DAG (its upgrade to v26.06 failed)")
	assert.Len(t, started, 3, "c1, c2 and c3, each once: %v", started)
	for _, name := range []string{"c1", "c2", "c3"} {
		cv := getCV(t, c, ns, name)
		assert.Equal(t, v1alpha1.PhaseRolledBack, cv.Status.Phase, name)
		assert.Equal(t, "v26.06-rc.2", cv.Status.CurrentVersion, "%s is observed back at the version it started from", name)
		assert.Equal(t, v1alpha1.HistoryRolledBack, cv.Status.History[0].State, name)
		assert.Equal(t, "to-v26.06", cv.Annotations[fleet.RollbackBy], name)
		require.NotNil(t, cv.Spec.Rollback, name)
		assert.Equal(t, "UpgradeRollout to-v26.06 aborted with rollback Moved", cv.Spec.Rollback.Reason)
	}
	// The canary and c3 had not failed: rolled back on request, not a
	// failure; c2 failed, and failed it stays.
	assert.Equal(t, "RolledBack", clusterOf(ur, "c1").State)
	assert.Equal(t, "RolledBack", clusterOf(ur, "c3").State)
	assert.Equal(t, "Failed", clusterOf(ur, "c2").State)
	assert.Equal(t, v1alpha1.RolloutCounts{Pending: 1, Failed: 1, RolledBack: 2}, ur.Status.Counts)
	assert.Equal(t, "Failed", ur.Status.Phase, "c2's failure exceeded the budget before the abort")
	mu.Lock()
	c1 := slices.Clone(rolled["c1"])
	mu.Unlock()
	assert.Contains(t, c1, "1/provider", "the canary's last hop is rolled back: %v", c1)
	assert.Contains(t, c1, "0/kubernetes-master", "and the hop before it: %v", c1)
	assert.Less(t, slices.Index(c1, "1/provider"), slices.Index(c1, "0/kubernetes-master"), "last hop first")
	c4 := getCV(t, c, ns, "c4")
	assert.Empty(t, c4.Annotations[fleet.Started], "c4's wave never started")
	assert.Nil(t, c4.Spec.Rollback)
	assert.Equal(t, "v26.06-rc.2", c4.Status.CurrentVersion)
}

// recordingRollbacker is the simulated runner with the Rollback ability,
// telling each rollback to rolled.
type recordingRollbacker struct {
	*runnertest.Runner
	rolled func(runner.Task)
}

func (r recordingRollbacker) Rollback(_ context.Context, t runner.Task) error {
	r.rolled(t)
	return nil
}

// TestPauseResumeAndGate: a paused rollout starts nothing (Paused,
// RolloutPaused); resumed, its first wave runs (RolloutResumed); the
// gated second wave waits (WaitingForApproval, saying what to add) until
// spec.approvals names it, and the approval is recorded with who gave it
// (status.approvals, WaveApproved).
func TestPauseResumeAndGate(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newFleet(t, c, 4)
	management(t, c, ns)
	require.NoError(t, c.Create(context.Background(), newRollout(ns, func(s *v1alpha1.UpgradeRolloutSpec) {
		s.Canaries, s.Paused, s.Gates = nil, true, []string{"wave-2"}
	})))
	ur := watchFleet(t, c, ns, 2, 30*time.Second, func(ur *v1alpha1.UpgradeRollout) bool { return ur.Status.Phase == "Paused" })
	assert.Equal(t, 4, ur.Status.Counts.Pending)
	assert.Equal(t, []string{"paused: no cluster starts until spec.paused is cleared"}, waitEvent(t, c, ns, "RolloutPaused"))
	time.Sleep(time.Second)
	for i := 1; i <= 4; i++ {
		assert.Empty(t, getCV(t, c, ns, fmt.Sprintf("c%d", i)).Annotations[fleet.Started], "c%d started while paused", i)
	}

	setRollout(t, c, ns, func(s *v1alpha1.UpgradeRolloutSpec) { s.Paused = false })
	waitEvent(t, c, ns, "RolloutResumed")
	ur = watchFleet(t, c, ns, 2, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool { return ur.Status.Phase == "WaitingForApproval" })
	assert.Equal(t, 2, ur.Status.Counts.Succeeded)
	assert.Equal(t, "wave-2", ur.Status.Wave)
	want := "wave wave-2 (2 clusters) waits for its approval: add {wave: wave-2, by: NAME} to spec.approvals"
	assert.Equal(t, []string{want}, waitEvent(t, c, ns, "WaveWaitingForApproval"))
	assert.Empty(t, ur.Status.Approvals)

	setRollout(t, c, ns, func(s *v1alpha1.UpgradeRolloutSpec) {
		s.Approvals = []v1alpha1.WaveApproval{{Wave: "wave-2", By: "alice"}}
	})
	ur = watchFleet(t, c, ns, 2, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool { return ur.Status.Phase == "Completed" })
	require.Len(t, ur.Status.Approvals, 1)
	assert.Equal(t, "wave-2", ur.Status.Approvals[0].Wave)
	assert.Equal(t, "alice", ur.Status.Approvals[0].By)
	assert.False(t, ur.Status.Approvals[0].At.IsZero())
	assert.Equal(t, []string{"wave wave-2 approved by alice: it starts"}, waitEvent(t, c, ns, "WaveApproved"))
}

// TestAbort: an abort stops starting clusters for good: the cluster
// upgrading finishes, the others never start; Aborted, RolloutAborted.
// The upgrading cluster's components wait until the abort is seen, so
// that it cannot finish (and the next start) before.
func TestAbort(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newFleet(t, c, 3)
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release)
	operate(t, ns, func(types.NamespacedName, *rest.Config) (runner.Runner, error) {
		rn := runnertest.New()
		rn.OnStart = func(runner.Task) { <-hold }
		return rollbacker{rn}, nil
	})
	one := intstr.FromInt32(1)
	require.NoError(t, c.Create(context.Background(), newRollout(ns, func(s *v1alpha1.UpgradeRolloutSpec) {
		s.Canaries, s.Waves, s.MaxConcurrency = nil, nil, &one
	})))
	watchFleet(t, c, ns, 1, 30*time.Second, func(ur *v1alpha1.UpgradeRollout) bool { return ur.Status.Counts.Upgrading == 1 })
	setRollout(t, c, ns, func(s *v1alpha1.UpgradeRolloutSpec) { s.Abort = true })
	watchFleet(t, c, ns, 1, time.Minute, func(ur *v1alpha1.UpgradeRollout) bool { return ur.Status.Phase == "Aborted" })
	release()
	ur := watchFleet(t, c, ns, 1, time.Minute, func(ur *v1alpha1.UpgradeRollout) bool {
		return ur.Status.Phase == "Aborted" && ur.Status.Counts.Upgrading == 0
	})
	assert.Equal(t, 1, ur.Status.Counts.Succeeded, "the cluster upgrading when the abort came finished")
	assert.Equal(t, 2, ur.Status.Counts.Pending)
	assert.Equal(t, []string{"aborted: no cluster starts; the clusters in flight finish their hop"}, waitEvent(t, c, ns, "RolloutAborted"))
	time.Sleep(time.Second)
	started := 0
	for i := 1; i <= 3; i++ {
		if getCV(t, c, ns, fmt.Sprintf("c%d", i)).Annotations[fleet.Started] != "" {
			started++
		}
	}
	assert.Equal(t, 1, started, "ClusterVersions started by the aborted rollout")
}

// TestDryRun: before anything starts, the status holds the fleet's
// plan: each cluster's route from where it is, those at the target, and
// those that cannot go, named with why (behind a risk, no route); a spec
// change (the risk accepted) computes it again.
func TestDryRun(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newFleet(t, c, 0)
	ctx := context.Background()
	for name, at := range map[string]string{"a": "v26.06", "b": "v26.06-rc.2", "c": "v26.06.1", "d": "v26.09-rc.1"} {
		require.NoError(t, c.Create(ctx, &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"fleet": "prod"}},
			Spec: v1alpha1.ClusterVersionSpec{InstalledVersion: v1alpha1.Target(at), DesiredVersion: v1alpha1.Target(at)}}))
	}
	management(t, c, ns)
	require.NoError(t, c.Create(ctx, newRollout(ns, func(s *v1alpha1.UpgradeRolloutSpec) {
		s.DesiredVersion, s.Paused, s.Canaries = "v26.09-rc.1", true, nil
	})))
	ur := watchFleet(t, c, ns, 0, 30*time.Second, func(ur *v1alpha1.UpgradeRollout) bool { return ur.Status.DryRun != nil })
	dr := ur.Status.DryRun
	assert.Equal(t, ur.Generation, dr.ObservedGeneration)
	assert.Empty(t, dr.Routes)
	assert.Equal(t, 1, dr.AtTarget)
	assert.Equal(t, 3, dr.BlockedCount)
	var got []string
	for _, b := range dr.Blocked {
		got = append(got, fmt.Sprintf("%s %s %s %s %v", b.Name, b.Wave, b.Current, b.Reason, b.Risks))
	}
	assert.Equal(t, []string{
		"a wave-1 v26.06 BehindRisks [containerd-v2-config]",
		"b wave-1 v26.06-rc.2 BehindRisks [containerd-v2-config]",
		"c wave-2 v26.06.1 NoRoute []",
	}, got)
	assert.Contains(t, dr.Blocked[0].Message, "add containerd-v2-config to the rollout's spec.acceptRisks to take it")
	assert.Contains(t, dr.Blocked[2].Message, "path: no route")
	assert.Equal(t, []string{"dry run: 4 clusters in 2 waves: 0 to upgrade along 0 routes, 1 at the target, 3 blocked: [a (BehindRisks) b (BehindRisks) c (NoRoute)]"},
		waitEvent(t, c, ns, "DryRunComputed"))

	setRollout(t, c, ns, func(s *v1alpha1.UpgradeRolloutSpec) { s.AcceptRisks = []string{"containerd-v2-config"} })
	ur = watchFleet(t, c, ns, 0, 30*time.Second, func(ur *v1alpha1.UpgradeRollout) bool {
		return ur.Status.DryRun != nil && ur.Status.DryRun.ObservedGeneration == ur.Generation
	})
	dr = ur.Status.DryRun
	assert.Equal(t, []v1alpha1.PlannedRoute{
		{From: "v26.06", Hops: []string{"v26.06 -> v26.09-rc.1"}, Clusters: []string{"a (wave-1)"}},
		{From: "v26.06-rc.2", Hops: []string{"v26.06-rc.2 -> v26.06-rc.3", "v26.06-rc.3 -> v26.06", "v26.06 -> v26.09-rc.1"}, Clusters: []string{"b (wave-1)"}},
	}, dr.Routes)
	assert.Equal(t, 1, dr.BlockedCount)
	assert.Equal(t, "c", dr.Blocked[0].Name)
}

// An UpgradeRollout's Event whose note is longer than the events API
// accepts (a dry run naming ten blocked clusters of 200-character names)
// arrives cut to 1,024 bytes, saying how much was left out: client-go's
// recorder would send it whole and the API server refuse it, unseen.
func TestLongRolloutEventNoteKept(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newFleet(t, c, 0)
	ctx := context.Background()
	for i := range 12 {
		name := fmt.Sprintf("c%02d-%s", i, strings.Repeat("x", 196))
		require.NoError(t, c.Create(ctx, &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"fleet": "prod"}},
			Spec: v1alpha1.ClusterVersionSpec{InstalledVersion: "v9.9.9", DesiredVersion: "v9.9.9"}}))
	}
	management(t, c, ns)
	require.NoError(t, c.Create(ctx, newRollout(ns, func(s *v1alpha1.UpgradeRolloutSpec) {
		s.DesiredVersion, s.Paused, s.Canaries = "v26.09-rc.1", true, nil
	})))
	note := waitEvent(t, c, ns, "DryRunComputed")[0]
	assert.LessOrEqual(t, len(note), 1024)
	assert.True(t, strings.HasPrefix(note, "dry run: 12 clusters in "), "the note's start is kept: %q", note)
	assert.Regexp(t, `\.\.\. and [0-9]+ more bytes$`, note)
}
