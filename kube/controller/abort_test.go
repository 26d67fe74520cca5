package controller_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// startedOn returns a channel closed when component first starts on hop
// (counted from 0) in rn.
func startedOn(rn *runnertest.Runner, hop int, component string) <-chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	rn.OnStart = func(t runner.Task) {
		if t.HopIndex == hop && t.Component == component {
			once.Do(func() { close(ch) })
		}
	}
	return ch
}

func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal(what + " did not happen")
	}
}

// TestAbortLetsTheHopFinish: an abort during a hop lets that hop finish
// (its components not yet started too), so the system ends at a release
// of the catalog and status.currentVersion is where it is; nothing of the
// hops after it runs. (It once stopped partway through the hop and said
// the system ran the release before it, so that the next upgrade planned
// from versions the components no longer had.)
func TestAbortLetsTheHopFinish(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	// provider is in the second batch of hop 1 (of 7 components) and all
	// of hop 2.
	rn := runnertest.New().Script("provider", runnertest.Script{Delay: 1500 * time.Millisecond})
	started := startedOn(rn, 0, "provider")
	startOperator(t, opConfig{rn: rn})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	await(t, started, "provider starting on hop 1")

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "v26.06-rc.2" })
	got := waitFor(t, c, key, 30*time.Second, "settled after the abort", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return cv.Status.Phase == v1alpha1.PhaseIdle && len(cv.Status.History) > 0 && cv.Status.History[0].CompletionTime != nil &&
			p != nil && p.Reason == "UpgradeAborted" && strings.Contains(p.Message, "is a downgrade")
	})
	h := got.Status.History[0]
	assert.Equal(t, v1alpha1.HistoryPartial, h.State, "history: %+v", h)
	assert.Contains(t, h.Message, "aborted at 7/19: desiredVersion set back to v26.06-rc.2; the system runs v26.06-rc.3")
	assert.Equal(t, "v26.06-rc.3", got.Status.CurrentVersion, "the hop the abort came during finished")
	assert.Nil(t, got.Status.Plan.Partial, "no hop stopped partway")
	ok := map[string]bool{}
	for _, r := range rn.Records() {
		assert.NoError(t, r.Err, "component %s was interrupted by the abort", r.Component)
		assert.Equal(t, 0, r.Hop, "%s ran on hop %d, after the abort", r.Component, r.Hop+1)
		ok[r.Component] = true
	}
	assert.Len(t, ok, 7, "every component of hop 1 ran: %v", ok)
	p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Contains(t, p.Message, "was aborted after reaching v26.06-rc.3, and going back to v26.06-rc.2 is a downgrade, which is refused: set desiredVersion to v26.06-rc.3")
	a := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAvailable)
	require.NotNil(t, a)
	assert.Equal(t, "AsExpected", a.Reason, a.Message)
}

// TestBetweenVersions: an upgrade paused partway through a hop, then
// aborted, leaves the system between two releases; the status says so
// (which components run the later one) rather than that it runs the
// earlier one, and a new upgrade whose route does not start with that hop
// is refused, since it would take those components to versions planned
// from the earlier release; finishing the hop is allowed.
func TestBetweenVersions(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	// etcd moves on hop 3 only, in its third batch.
	rn := runnertest.New().Script("etcd", runnertest.Script{Delay: 2 * time.Second})
	started := startedOn(rn, 2, "etcd")
	startOperator(t, opConfig{rn: rn})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	await(t, started, "etcd starting on hop 3")
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Paused = true })
	paused := waitFor(t, c, key, 30*time.Second, "paused", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhasePaused && cv.Status.Plan != nil && cv.Status.Plan.Partial != nil
	})
	ph := paused.Status.Plan.Partial
	assert.Equal(t, "v26.06 -> v26.09", ph.Hop)
	assert.Equal(t, "v26.09", ph.To)
	assert.Equal(t, 11, ph.Total)
	assert.Contains(t, ph.Done, "etcd", "the component running when the pause came finished")
	assert.Less(t, ph.Count, ph.Total)
	assert.Len(t, ph.Done, ph.Count)
	prog := meta.FindStatusCondition(paused.Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Contains(t, prog.Message, "the system is between v26.06 and v26.09")

	// The abort of the paused upgrade ends it there, between versions.
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "v26.06-rc.2" })
	got := waitFor(t, c, key, 30*time.Second, "aborted", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return cv.Status.Phase == v1alpha1.PhaseIdle && p != nil && p.Reason == "UpgradeAborted" && cv.Status.ObservedGeneration == cv.Generation
	})
	assert.Equal(t, v1alpha1.HistoryPartial, got.Status.History[0].State)
	assert.Contains(t, got.Status.History[0].Message, "the system is between v26.06 and v26.09")
	assert.Equal(t, "v26.06", got.Status.CurrentVersion)
	prog = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Contains(t, prog.Message, "partway through the hop after it")
	assert.Contains(t, prog.Message, "set desiredVersion to v26.09")
	assert.NotContains(t, prog.Message, "to accept where the system is")
	avail := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAvailable)
	require.NotNil(t, avail)
	assert.Equal(t, "BetweenVersions", avail.Reason)
	assert.Contains(t, avail.Message, "already run v26.09's versions (")

	// A route that does not start with the hop is refused; nothing runs.
	n := len(rn.Records())
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "v26.06.1" })
	got = waitFor(t, c, key, 30*time.Second, "refused", func(cv *v1alpha1.ClusterVersion) bool {
		f := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionFailing)
		return f != nil && f.Status == metav1.ConditionTrue && f.Reason == "BetweenVersions"
	})
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	assert.Contains(t, f.Message, "the route to v26.06.1 does not start with hop v26.06 -> v26.09")
	time.Sleep(300 * time.Millisecond)
	assert.Len(t, rn.Records(), n, "nothing runs toward a target that would undo the stopped hop")

	// Finishing the hop is allowed.
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion, s.Paused = "v26.09", false })
	got = waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	assert.Nil(t, got.Status.Plan.Partial)
	avail = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAvailable)
	assert.Equal(t, "AsExpected", avail.Reason, avail.Message)
}
