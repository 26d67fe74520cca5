package controller_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// TestUnreachableTargetFails: a target the catalog cannot reach gives a
// Failing condition with the resolver's diagnostics, and nothing runs.
// The webhook refuses such a target when it is set, so the catalog changes
// under a paused ClusterVersion instead: the rule to v26.09 is blocked.
func TestUnreachableTargetFails(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	op := startOperator(t, opConfig{})
	ctx := context.Background()

	cv := newCV(ns, "v26.06", "v26.06")
	cv.Spec.Paused = true
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "v26.09" })
	waitFor(t, c, key, 30*time.Second, "paused", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhasePaused && cv.Status.DesiredVersion == "v26.09"
	})

	var up v1alpha1.UpgradePath
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "openfuyao-upgrade-paths"}, &up))
	for i, r := range up.Spec.Rules {
		if r.To == "v26.09" {
			up.Spec.Rules[i].Blocked = "test: the v26.09 migration is withdrawn"
		}
	}
	require.NoError(t, c.Update(ctx, &up))
	op.sees(t, &up)
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Paused = false })
	got := waitFor(t, c, key, 30*time.Second, "failing", func(cv *v1alpha1.ClusterVersion) bool {
		return meta.IsStatusConditionTrue(cv.Status.Conditions, v1alpha1.ConditionFailing) && !cv.Spec.Paused
	})
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	assert.Equal(t, "NoRoute", f.Reason)
	assert.Contains(t, f.Message, "path: no route from v26.06 to v26.09")
	assert.Contains(t, f.Message, "the v26.09 migration is withdrawn", "the diagnostics name the blocked edge")
	assert.Equal(t, v1alpha1.PhaseIdle, got.Status.Phase)
	assert.Equal(t, "v26.06", got.Status.CurrentVersion)
	assert.True(t, meta.IsStatusConditionFalse(got.Status.Conditions, v1alpha1.ConditionProgressing))
	time.Sleep(300 * time.Millisecond)
	assert.Empty(t, op.runner.Records(), "nothing runs toward an unreachable target")
	assert.Empty(t, got.Status.History, "no upgrade was started")
}

// TestWebhookRefusalsAndAbort: the webhook's three refusals, then the abort
// it allows, which stops the run at the next safe point.
func TestWebhookRefusalsAndAbort(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	// etcd moves on the last hop only: the abort below comes while it runs.
	rn := runnertest.New().Script("etcd", runnertest.Script{Delay: 2 * time.Second})
	etcdStarted := make(chan struct{})
	var once sync.Once
	rn.OnStart = func(t runner.Task) {
		if t.Component == "etcd" {
			once.Do(func() { close(etcdStarted) })
		}
	}
	op := startOperator(t, opConfig{rn: rn})
	ctx := context.Background()

	// 1. desiredVersion must exist and be reachable.
	err := c.Create(ctx, newCV(ns, "v26.06-rc.2", "v26.07"))
	require.Error(t, err, "a desiredVersion that is not a release is refused")
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "v26.07 is not a release of the catalog; reachable from v26.06-rc.2: v26.06-rc.3, v26.06, v26.06.1, v26.09")
	err = c.Create(ctx, newCV(ns, "v26.06-rc.2", "v26.09-rc.1"))
	require.Error(t, err, "a target behind an unaccepted risk is refused")
	assert.Contains(t, err.Error(), "behind risks: v26.09-rc.1 (accept containerd-v2-config)")
	// And the API server's own validation refuses what is not a version.
	err = c.Create(ctx, newCV(ns, "v26.06-rc.2", "latest"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.desiredVersion")
	assert.Contains(t, err.Error(), "must be a version such as v26.09, or a state across tracks such as platform=27.03.0,kubernetes=v1.34.0", "the CRD's validation refuses it, before the webhook, saying what to write: %v", err)

	cv := newCV(ns, "v26.06-rc.2", "v26.06-rc.2")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	waitFor(t, c, key, 30*time.Second, "idle", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseIdle })
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "v26.09" })
	waitFor(t, c, key, 30*time.Second, "upgrading", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseUpgrading
	})
	select {
	case <-etcdStarted:
	case <-time.After(30 * time.Second):
		t.Fatal("etcd did not start")
	}

	// 2. No other change of desiredVersion mid-hop.
	err = updateSpec(c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "v26.06.1" })
	require.Error(t, err, "a new target while a hop runs is refused")
	assert.Contains(t, err.Error(), "desiredVersion may only be set back to v26.06-rc.2")

	// 3. No delete mid-upgrade.
	err = c.Delete(ctx, &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})
	require.Error(t, err, "deleting mid-upgrade is refused")
	assert.True(t, apierrors.IsForbidden(err), "%v", err)

	// The abort is allowed. It comes during the last hop, which an abort
	// lets finish (TestAbortLetsTheHopFinish: an abort mid-upgrade): the
	// upgrade completes, and the status says so and what to set.
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "v26.06-rc.2" })
	got := waitFor(t, c, key, 30*time.Second, "settled after the abort", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return cv.Status.Phase == v1alpha1.PhaseIdle && len(cv.Status.History) > 0 && cv.Status.History[0].CompletionTime != nil &&
			p != nil && p.Reason == "UpgradeAborted" && cv.Status.ObservedGeneration == cv.Generation
	})
	h := got.Status.History[0]
	assert.Equal(t, v1alpha1.HistoryCompleted, h.State, "history: %+v", h)
	assert.Equal(t, "completed: the abort to v26.06-rc.2 came during the last hop, and an abort lets the hop in progress finish", h.Message)
	for _, r := range rn.Records() {
		assert.NoError(t, r.Err, "component %s was interrupted by the abort", r.Component)
	}
	assert.Equal(t, "v26.09", got.Status.CurrentVersion)
	assert.Equal(t, got.Status.Plan.Progress.Total, got.Status.Plan.Progress.Done)
	time.Sleep(time.Second) // another reconcile or two: they do not fail on the way back (a downgrade)
	require.NoError(t, c.Get(ctx, key, got))
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	require.NotNil(t, f)
	assert.Equal(t, metav1.ConditionFalse, f.Status, "Failing after an abort: %s %s", f.Reason, f.Message)
	assert.Equal(t, v1alpha1.PhaseIdle, got.Status.Phase)
	p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Contains(t, p.Message, "was aborted after reaching v26.09, and going back to v26.06-rc.2 is a downgrade, which is refused: set desiredVersion to v26.09")
	// Deleting is allowed again.
	require.NoError(t, c.Delete(ctx, got))
	_ = op
}

// TestPauseResumeAbandon: pause stops starting components and resumes
// without re-running successes; abandon ends the run for good.
func TestPauseResumeAbandon(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := slowRunner(t, 300*time.Millisecond)
	startOperator(t, opConfig{rn: rn})
	ctx := context.Background()

	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	waitFor(t, c, key, 30*time.Second, "upgrading", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseUpgrading })
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Paused = true })
	paused := waitFor(t, c, key, 30*time.Second, "paused", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhasePaused })
	n := len(rn.Records())
	time.Sleep(500 * time.Millisecond)
	assert.Len(t, rn.Records(), n, "nothing starts while paused")
	assert.Less(t, paused.Status.Plan.Progress.Done, paused.Status.Plan.Progress.Total)

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Paused = false })
	waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	ok := map[[2]any]int{}
	for _, r := range rn.Records() {
		if r.Err == nil {
			ok[[2]any{r.Hop, r.Component}]++
		}
	}
	for k, n := range ok {
		assert.Equal(t, 1, n, "component %v succeeded %d times: resume re-ran a success", k, n)
	}

	// Abandon: a second upgrade, abandoned while it runs.
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "v26.09" }) // no-op: stays idle
	cv2 := newCV(ns, "v26.06-rc.2", "v26.06")
	cv2.Name = "second"
	require.NoError(t, c.Create(ctx, cv2))
	key2 := client.ObjectKeyFromObject(cv2)
	waitFor(t, c, key2, 30*time.Second, "upgrading", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseUpgrading })
	setSpec(t, c, key2, func(s *v1alpha1.ClusterVersionSpec) { s.Abandon = &v1alpha1.AbandonRequest{Reason: "test: give up"} })
	got := waitFor(t, c, key2, 30*time.Second, "abandoned", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseAbandoned })
	assert.Equal(t, v1alpha1.HistoryFailed, got.Status.History[0].State)
	assert.Equal(t, "abandoned: test: give up", got.Status.History[0].Message)
	assert.Equal(t, "Abandoned", got.Status.Plan.Phase)
	assert.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing).Status)
	n = len(rn.Records())
	time.Sleep(500 * time.Millisecond)
	assert.Len(t, rn.Records(), n, "an abandoned upgrade does not go on")

	// A new target while spec.abandon is still set starts nothing, and
	// the status says why; clearing abandon starts it.
	setSpec(t, c, key2, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "v26.06.1" })
	got = waitFor(t, c, key2, 30*time.Second, "told to clear abandon", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.ObservedGeneration == cv.Generation && cv.Status.DesiredVersion == "v26.06.1"
	})
	assert.Equal(t, v1alpha1.PhaseAbandoned, got.Status.Phase)
	p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Equal(t, "abandoned: test: give up; spec.abandon is still set, so the upgrade to v26.06.1 does not start: clear spec.abandon to start it", p.Message)
	assert.Len(t, rn.Records(), n, "nothing starts while spec.abandon is set")
	setSpec(t, c, key2, func(s *v1alpha1.ClusterVersionSpec) { s.Abandon = nil })
	got = waitFor(t, c, key2, 60*time.Second, "at v26.06.1", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.06.1"
	})
	require.Len(t, got.Status.History, 2)
	assert.Equal(t, "abandoned: test: give up", got.Status.History[1].Message, "the abandoned upgrade's entry stays")
}

func setSpec(t *testing.T, c client.Client, key client.ObjectKey, fn func(*v1alpha1.ClusterVersionSpec)) {
	t.Helper()
	require.NoError(t, updateSpec(c, key, fn))
}

// updateSpec changes the spec, retrying while the status writes of the
// reconciler make the update conflict; it returns the first other outcome.
func updateSpec(c client.Client, key client.ObjectKey, fn func(*v1alpha1.ClusterVersionSpec)) error {
	return retry.RetryOnConflict(wait.Backoff{Steps: 50, Duration: 10 * time.Millisecond, Factor: 1.2, Cap: 200 * time.Millisecond}, func() error {
		var cv v1alpha1.ClusterVersion
		if err := c.Get(context.Background(), key, &cv); err != nil {
			return err
		}
		fn(&cv.Spec)
		return c.Update(context.Background(), &cv)
	})
}

// slowRunner is a fake runner in which every component of testdata/catalog
// takes d.
func slowRunner(t *testing.T, d time.Duration) *runnertest.Runner {
	t.Helper()
	cat, err := release.LoadDir(catalogDir)
	require.NoError(t, err)
	rn := runnertest.New()
	for _, c := range cat.Components {
		rn.Script(c.Name, runnertest.Script{Delay: d})
	}
	return rn
}

// TestAbortStoppedAfterHop: the abort of an upgrade paused or failed after
// a hop completed is allowed (the webhook once refused it: going back from
// status.currentVersion is a downgrade), and ends the upgrade Partial; the
// status then says what to set instead of going back (here: finish the
// hop that stopped partway).
func TestAbortStoppedAfterHop(t *testing.T) {
	needAPIServer(t)
	tests := []struct {
		name string
		rn   func() *runnertest.Runner
		stop func(t *testing.T, c client.Client, key client.ObjectKey) // until the upgrade is stopped after a hop
	}{
		{
			name: "paused",
			// provider moves on hop 2: the pause is asked while it runs.
			rn: func() *runnertest.Runner {
				return runnertest.New().Script("provider", runnertest.Script{Delay: 2 * time.Second})
			},
			stop: func(t *testing.T, c client.Client, key client.ObjectKey) {
				waitFor(t, c, key, 30*time.Second, "past hop 1", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.CurrentVersion == "v26.06-rc.3" })
				setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Paused = true })
				waitFor(t, c, key, 30*time.Second, "paused", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhasePaused })
			},
		},
		{
			name: "failed",
			// etcd moves on hop 3 only.
			rn: func() *runnertest.Runner {
				return runnertest.New().Script("etcd", runnertest.Script{FailAlways: true, Permanent: true})
			},
			stop: func(t *testing.T, c client.Client, key client.ObjectKey) {
				waitFor(t, c, key, 60*time.Second, "failed", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseFailed })
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t)
			ns := newNamespace(t, c)
			applyCatalog(t, c, ns, catalogDir)
			rn := tt.rn()
			startOperator(t, opConfig{rn: rn})
			ctx := context.Background()
			cv := newCV(ns, "v26.06-rc.2", "v26.09")
			require.NoError(t, c.Create(ctx, cv))
			key := client.ObjectKeyFromObject(cv)
			tt.stop(t, c, key)
			var stopped v1alpha1.ClusterVersion
			require.NoError(t, c.Get(ctx, key, &stopped))
			reached := stopped.Status.CurrentVersion
			require.NotEqual(t, "v26.06-rc.2", reached, "a hop completed")
			n := len(rn.Records())

			require.NoError(t, updateSpec(c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "v26.06-rc.2" }),
				"the abort of an upgrade %s after a hop", tt.name)
			got := waitFor(t, c, key, 30*time.Second, "aborted", func(cv *v1alpha1.ClusterVersion) bool {
				p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
				return cv.Status.Phase == v1alpha1.PhaseIdle && p != nil && p.Reason == "UpgradeAborted" && cv.Status.ObservedGeneration == cv.Generation
			})
			h := got.Status.History[0]
			assert.Equal(t, v1alpha1.HistoryPartial, h.State, "history: %+v", h)
			assert.NotNil(t, h.CompletionTime)
			assert.Equal(t, reached, got.Status.CurrentVersion, "hopdag does not roll back")
			p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
			// Stopped partway through the hop after reached (the pause came
			// while provider ran; etcd failed among others): the status
			// says so and what to set (TestBetweenVersions).
			ph := got.Status.Plan.Partial
			require.NotNil(t, ph, "the hop after %s stopped partway", reached)
			assert.True(t, strings.HasPrefix(h.Message, "aborted: desiredVersion set back to v26.06-rc.2; the system is between "+reached+" and "+ph.To+": "), h.Message)
			assert.Contains(t, p.Message, "set desiredVersion to "+ph.To+", or to a version whose route goes through it, to finish that hop")
			if stopped.Status.Phase == v1alpha1.PhaseFailed {
				// The entry that said Failed keeps what failed.
				assert.Contains(t, h.Message, "; it had failed: "+stopped.Status.History[0].Message, "the failure is kept in the history")
			}
			assert.True(t, meta.IsStatusConditionFalse(got.Status.Conditions, v1alpha1.ConditionFailing))
			assert.Len(t, rn.Records(), n, "nothing ran after the abort")
			// The webhook keeps it while the hop is left partway.
			err := c.Delete(ctx, got, client.DryRunAll)
			assert.True(t, apierrors.IsForbidden(err), "deleting a ClusterVersion between versions: %v, want Forbidden", err)
			deleteAllowed(t, c, got)
		})
	}
}
