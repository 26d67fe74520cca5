package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// twoTrackOperator starts an operator for testdata/two-track (its
// platform hops check iso-uploaded) in a new namespace.
func twoTrackOperator(t *testing.T, rn *runnertest.Runner) (client.Client, string) {
	t.Helper()
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, "../../testdata/two-track")
	ok := func(context.Context, runner.CheckTask) error { return nil }
	startOperator(t, opConfig{rn: rn, opts: []controller.Option{controller.WithExecutorOptions(runner.WithCheck("iso-uploaded", ok))}})
	return c, ns
}

// TestMultiTrackAbortAfterHop: an upgrade across tracks stopped after its
// first hop (spec.until), then set back to the state it started from,
// ends as on one track: Progressing UpgradeAborted saying where the
// system is and what to set, Failing False, history Partial; not a
// downgrade failure.
func TestMultiTrackAbortAfterHop(t *testing.T) {
	c, ns := twoTrackOperator(t, nil)
	ctx := context.Background()
	cv := newCV(ns, "platform=13.01.0,kubernetes=v1.32.0", "platform=27.03.0")
	cv.Spec.Until = "13.01.2"
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	waitFor(t, c, key, 60*time.Second, "stopped after the first hop", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return cv.Status.Phase == v1alpha1.PhasePaused && p != nil && p.Reason == "UntilReached"
	})
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "platform=13.01.0" }) // the track it named, set back
	got := waitFor(t, c, key, 30*time.Second, "the abort explained", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return cv.Status.ObservedGeneration == cv.Generation && p != nil && p.Reason == "UpgradeAborted"
	})
	assert.Equal(t, v1alpha1.PhaseIdle, got.Status.Phase)
	assert.Equal(t, "kubernetes=v1.32.0,platform=13.01.2", got.Status.CurrentVersion)
	p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Contains(t, p.Message, "set desiredVersion to kubernetes=v1.32.0,platform=13.01.2 to accept where the system is")
	assert.True(t, meta.IsStatusConditionFalse(got.Status.Conditions, v1alpha1.ConditionFailing), "an abort is no failure: %+v", got.Status.Conditions)
	assert.Equal(t, v1alpha1.HistoryPartial, got.Status.History[0].State)
	require.NoError(t, c.Delete(ctx, got))
}

// TestMultiTrackRetarget: an upgrade across tracks that failed before any
// component succeeded may change target; a new desired state that the old
// route's end would satisfy too (Kubernetes v1.33.1, which the old route
// to platform 27.03.0 passed through) is a new target, not the old
// upgrade: the platform stays on 13.01.
func TestMultiTrackRetarget(t *testing.T) {
	rn := runnertest.New().Script("sw-deploy", runnertest.Script{FailAlways: true, Permanent: true})
	c, ns := twoTrackOperator(t, rn)
	ctx := context.Background()
	cv := newCV(ns, "platform=13.01.0,kubernetes=v1.32.0", "platform=27.03.0")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 60*time.Second, "failed", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseFailed })
	require.Zero(t, got.Status.Plan.Progress.Done)
	assert.Equal(t, "platform=27.03.0", got.Status.Plan.Target)
	rn.Script("sw-deploy", runnertest.Script{})
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "kubernetes=v1.33.1" })
	got = waitFor(t, c, key, 60*time.Second, "at the new target", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "kubernetes=v1.33.1,platform=13.01.0"
	})
	require.Len(t, got.Status.History, 2)
	assert.Equal(t, v1alpha1.HistoryCompleted, got.Status.History[0].State)
	assert.Equal(t, "kubernetes=v1.33.1", got.Status.History[0].To)
	assert.Equal(t, v1alpha1.HistoryPartial, got.Status.History[1].State, "the first upgrade ended, superseded")
	assert.Contains(t, got.Status.History[1].Message, "superseded")
	require.NoError(t, c.Delete(ctx, got))
}

// TestCheckUpdateAcrossTracks: mid-hop, setting desiredVersion back to
// the state the upgrade started from is the abort, also when it names
// only the tracks the target named; another state is refused.
func TestCheckUpdateAcrossTracks(t *testing.T) {
	old := newCV("ns", "platform=13.01.0,kubernetes=v1.32.0", "platform=27.03.0")
	old.Status.Phase = v1alpha1.PhaseUpgrading
	old.Status.Plan = &v1alpha1.PlanSummary{Target: "platform=27.03.0", From: "kubernetes=v1.32.0,platform=13.01.0", To: "kubernetes=v1.33.1,platform=27.03.0",
		Hop: "platform 13.01.0 -> 13.01.2", Progress: v1alpha1.Progress{Done: 1, Total: 6, Summary: "1/6"}}
	for desired, ok := range map[string]bool{
		"platform=13.01.0":                    true,
		"kubernetes=v1.32.0,platform=13.01.0": true,
		"platform=13.01.0,kubernetes=v1.32.0": true,
		"platform=27.03.1":                    false,
		"kubernetes=v1.33.1":                  false,
	} {
		cv := old.DeepCopy()
		cv.Spec.DesiredVersion = v1alpha1.Target(desired)
		err := controller.CheckUpdate(old, cv)
		if ok {
			assert.NoError(t, err, "desiredVersion %s mid-hop", desired)
		} else {
			assert.ErrorContains(t, err, "may only be set back to kubernetes=v1.32.0,platform=13.01.0", "desiredVersion %s mid-hop", desired)
		}
	}
}

// TestCheckReachableAcrossTracks: the webhook's refusals of states say
// what is wrong and in which field: an unknown version lists what is
// reachable; a track the catalog lacks is named, in desiredVersion or in
// installedVersion, whichever names it.
func TestCheckReachableAcrossTracks(t *testing.T) {
	cat, err := release.LoadDir("../../testdata/two-track")
	require.NoError(t, err)
	for _, tc := range []struct{ from, to, want string }{
		{"platform=13.01.0,kubernetes=v1.32.0", "platform=99.0.0", "spec.desiredVersion: Invalid value: \"platform=99.0.0\": "},
		{"platform=13.01.0,kubernetes=v1.32.0", "plattform=27.03.0", "spec.desiredVersion: Invalid value: \"plattform=27.03.0\": unknown track \"plattform\""},
		{"platform=13.01.0,kubernetes=v1.32.0,extra=1.0.0", "platform=27.03.0", "spec.installedVersion: Invalid value: \"platform=13.01.0,kubernetes=v1.32.0,extra=1.0.0\": unknown track \"extra\""},
		{"platform=13.01.0,kubernetes=v1.32.0", "kubernetes=v1.32.0,platform=13.01.0", ""},
	} {
		err := controller.CheckReachable(cat, newCV("ns", tc.from, tc.to), tc.from)
		if tc.want == "" {
			assert.NoError(t, err, "%s -> %s", tc.from, tc.to)
			continue
		}
		assert.ErrorContains(t, err, tc.want, "%s -> %s", tc.from, tc.to)
	}
}
