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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/runner"
)

// TestCatalogEditedWhilePaused: a Release the paused upgrade was planned
// from changes a version of a component that already moved; resuming
// fails on the stored record, and the Failing condition says what does
// help (put the catalog back, then retry; or abandon the record and start
// over), not only a retry, which would fail the same way, nor the
// library's advice ("start over with no previous status"), which an
// operator's user cannot follow. It names the ClusterVersion and the hops
// of the record. Putting it back and retrying completes the upgrade.
func TestCatalogEditedWhilePaused(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	// kubernetes-master (after bkeagent) is held until the run has taken
	// the pause, so that the pause comes before the hop ends however
	// slow the machine (a fixed delay once let the hop finish first).
	rn := slowRunner(t, 50*time.Millisecond)
	held, release := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	rn.OnStart = func(tk runner.Task) {
		if tk.Component == "kubernetes-master" {
			once.Do(func() { close(held) })
			<-release
		}
	}
	op := startOperator(t, opConfig{rn: rn})
	t.Cleanup(free) // before the operator stops (cleanups run last first)
	ctx := context.Background()

	cv := newCV(ns, "v26.06-rc.2", "v26.06-rc.3")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("kubernetes-master did not start within 30s")
	}
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Paused = true })
	var paused v1alpha1.ClusterVersion
	require.NoError(t, c.Get(ctx, key, &paused))
	waitFor(t, c, key, 30*time.Second, "the pause observed", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.ObservedGeneration >= paused.Generation
	})
	free()
	waitFor(t, c, key, 30*time.Second, "paused", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhasePaused })

	var rel v1alpha1.Release
	rkey := client.ObjectKey{Namespace: ns, Name: "openfuyao-v26.06-rc.3"}
	require.NoError(t, c.Get(ctx, rkey, &rel))
	orig := rel.DeepCopy()
	for i := range rel.Spec.Components {
		if rel.Spec.Components[i].Name == "bkeagent" {
			rel.Spec.Components[i].Version = "v1.4.2"
		}
	}
	require.NoError(t, c.Update(ctx, &rel))
	op.sees(t, &rel)
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Paused = false })
	got := waitFor(t, c, key, 30*time.Second, "failed", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseFailed })
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	require.NotNil(t, f)
	assert.Equal(t, "UpgradeFailed", f.Reason)
	assert.True(t, strings.HasPrefix(f.Message, "ClusterVersion "+key.String()+": the record of the upgrade v26.06-rc.2 -> v26.06-rc.3 in its state store was written for 1 hop (v26.06-rc.2 -> v26.06-rc.3), which the catalog and the spec now plan otherwise, so it cannot resume (runner: status does not match plan: hop 1 components differ: "), f.Message)
	assert.Contains(t, f.Message, "bkeagent@v1.4.1")
	assert.Contains(t, f.Message, "bkeagent@v1.4.2")
	assert.True(t, strings.HasSuffix(f.Message, "); "+mismatchNext(ns, "v26.06-rc.2", "v26.06-rc.3")), f.Message)
	assertNoLibraryAdvice(t, f.Message)
	h := got.Status.History[0]
	assert.Equal(t, v1alpha1.HistoryFailed, h.State)
	assert.True(t, strings.HasPrefix(h.Message, "ClusterVersion "+key.String()+": the record of the upgrade v26.06-rc.2 -> v26.06-rc.3 in its state store was written for 1 hop"), h.Message)
	assertNoLibraryAdvice(t, h.Message)
	var notes []string
	require.Eventually(t, func() bool {
		notes = eventNotes(t, c, ns, "UpgradeFailed")
		return len(notes) > 0
	}, 10*time.Second, 100*time.Millisecond, "an UpgradeFailed Event")
	assert.True(t, strings.HasPrefix(notes[0], "upgrade v26.06-rc.2 -> v26.06-rc.3 cannot resume: its record was written for 1 hop (v26.06-rc.2 -> v26.06-rc.3), which the catalog and the spec now plan otherwise; "+mismatchNext(ns, "v26.06-rc.2", "v26.06-rc.3")), notes[0])
	assertNoLibraryAdvice(t, notes[0])

	require.NoError(t, c.Get(ctx, rkey, &rel))
	rel.Spec = orig.Spec
	require.NoError(t, c.Update(ctx, &rel))
	op.sees(t, &rel)
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Retry++ })
	waitFor(t, c, key, 60*time.Second, "at v26.06-rc.3", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.06-rc.3"
	})
}

// mismatchNext is what the status says to do about an upgrade FROM ->
// TO of a ClusterVersion in namespace ns whose record no longer matches
// its plan.
func mismatchNext(ns, from, to string) string {
	return "to resume it, put the catalog objects of namespace " + ns + " and spec.channel, spec.allowPrereleases and spec.acceptRisks back as they were when the upgrade started, then increment spec.retry; " +
		"to start it over as the catalog and the spec plan it now, set spec.abandon (the record is marked Abandoned and never resumed), then clear it: the upgrade to " + to + " starts afresh from status.currentVersion (the components of a hop the record left partway run again); " +
		"setting desiredVersion back to " + from + " aborts the upgrade but keeps the record, which a later upgrade " + from + " -> " + to + " would resume, and be refused again"
}

// assertNoLibraryAdvice checks that msg does not give the runner's
// advice for a record that does not match its plan, which names what an
// operator's user has no hand on (Execute's previous status, a new state
// store).
func assertNoLibraryAdvice(t *testing.T, msg string) {
	t.Helper()
	for _, s := range []string{"start over with no previous status", "a new one", "resume with the plan this status was written for"} {
		assert.NotContains(t, msg, s)
	}
}
