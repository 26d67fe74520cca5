package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// TestRouteChangedWhileStopped: an upgrade stopped at its until step
// (after hop 2 of 3) resumes on a route the catalog has changed meanwhile
// (v26.09 is reached from v26.06.1 only, no longer from v26.06): the
// record was written for other hops, and the run is refused (runner.ErrPlanMismatch). The
// Failing condition names the ClusterVersion, the hops of the record and
// those of the new plan, and says what the user can do in its terms, not
// the library's; abandoning the record and clearing spec.abandon starts
// the upgrade over on the new route from where the system is.
func TestRouteChangedWhileStopped(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	op := startOperator(t, opConfig{})
	ctx := context.Background()

	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	cv.Spec.Until = "v26.06"
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	waitFor(t, c, key, 60*time.Second, "at the until step", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return p != nil && p.Reason == "UntilReached"
	})

	var up v1alpha1.UpgradePath
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "openfuyao-upgrade-paths"}, &up))
	found := false
	for i, r := range up.Spec.Rules {
		if r.To == "v26.09" && r.From == ">= v26.06, < v26.09" {
			up.Spec.Rules[i].From, found = ">= v26.06.1, < v26.09", true
		}
	}
	require.True(t, found, "the rule to v26.09 in %+v", up.Spec.Rules)
	require.NoError(t, c.Update(ctx, &up))
	op.sees(t, &up)
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Until = "" })
	got := waitFor(t, c, key, 30*time.Second, "failed", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseFailed })
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	require.NotNil(t, f)
	assert.Equal(t, "UpgradeFailed", f.Reason)
	assert.Equal(t, "ClusterVersion "+key.String()+": the record of the upgrade v26.06-rc.2 -> v26.09 in its state store was written for 3 hops "+
		"(v26.06-rc.2 -> v26.06-rc.3, v26.06-rc.3 -> v26.06, v26.06 -> v26.09), and the catalog and the spec now plan 4 hops "+
		"(v26.06-rc.2 -> v26.06-rc.3, v26.06-rc.3 -> v26.06, v26.06 -> v26.06.1, v26.06.1 -> v26.09), so it cannot resume "+
		"(runner: status does not match plan: status has 3 hops, plan has 4); "+mismatchNext(ns, "v26.06-rc.2", "v26.09"), f.Message)
	assertNoLibraryAdvice(t, f.Message)
	require.Eventually(t, func() bool { return len(eventNotes(t, c, ns, "UpgradeFailed")) > 0 }, 10*time.Second, 100*time.Millisecond, "an UpgradeFailed Event")
	note := eventNotes(t, c, ns, "UpgradeFailed")[0]
	assert.True(t, strings.HasPrefix(note, "upgrade v26.06-rc.2 -> v26.09 cannot resume: its record was written for 3 hops (v26.06-rc.2 -> v26.06-rc.3, v26.06-rc.3 -> v26.06, v26.06 -> v26.09), and the catalog and the spec now plan 4 hops"), note)
	assertNoLibraryAdvice(t, note)

	// What the message says: abandon, then clear spec.abandon.
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) {
		s.Abandon = &v1alpha1.AbandonRequest{Reason: "test: the route changed"}
	})
	waitFor(t, c, key, 30*time.Second, "abandoned", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseAbandoned })
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Abandon = nil })
	got = waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.09"
	})
	assert.Equal(t, []string{"v26.06 -> v26.06.1", "v26.06.1 -> v26.09"}, got.Status.Plan.Hops, "started over from where the system was, on the new route")
	require.Len(t, got.Status.History, 2)
	assert.Equal(t, v1alpha1.UpdateHistory{From: "v26.06", To: "v26.09", State: v1alpha1.HistoryCompleted}, withoutTimes(got.Status.History[0]))
	assert.Equal(t, "abandoned: test: the route changed", got.Status.History[1].Message)
	require.NoError(t, c.Delete(ctx, got))
}
