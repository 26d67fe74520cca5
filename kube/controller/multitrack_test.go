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
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/runner"
)

// TestMultiTrackUpgrade: a ClusterVersion of a StarlingX-like catalog,
// whose platform releases tie the Kubernetes version by supports, names
// states (track=version,...): from platform 13.01.0 with Kubernetes
// v1.32.0 to platform 27.03.0, the reconciler runs the route across both
// tracks (platform, then Kubernetes, then platform: 27.03 needs Kubernetes
// v1.33 or later), and the status, history, available updates and Events
// speak in states. The API server refuses a version beside a state and a
// track beside a state; the webhook refuses an unreachable state, listing
// what is reachable.
func TestMultiTrackUpgrade(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, "../../testdata/two-track")
	ok := func(context.Context, runner.CheckTask) error { return nil }
	op := startOperator(t, opConfig{opts: []controller.Option{controller.WithExecutorOptions(runner.WithCheck("iso-uploaded", ok))}})
	ctx := context.Background()

	for _, tc := range []struct {
		installed, desired, track, refused string
	}{
		{"platform=13.01.0,kubernetes=v1.32.0", "v1.33.0", "", "installedVersion and desiredVersion must both be versions, or both states"},
		{"platform=13.01.0,kubernetes=v1.32.0", "platform=27.03.0", "platform", "a desiredVersion of the form track=version,... names its tracks itself"},
		{"platform=13.01.0,kubernetes=v1.32.0", "platform=27.03.0,kubernetes", "", "desiredVersion"},
		{"platform=13.01.0,kubernetes=v1.32.0", "platform=99.0.0", "", "platform=99.0.0"},
		{"platform=13.01.0", "platform=27.03.0", "", "kubernetes"},
	} {
		cv := newCV(ns, tc.installed, tc.desired)
		cv.Spec.Track = tc.track
		err := c.Create(ctx, cv, client.DryRunAll)
		require.Error(t, err, "installed %s desired %s track %q", tc.installed, tc.desired, tc.track)
		assert.Contains(t, err.Error(), tc.refused)
	}

	cv := newCV(ns, "platform=13.01.0,kubernetes=v1.32.0", "platform=27.03.0")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 60*time.Second, "upgraded across both tracks, the updates from there", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "kubernetes=v1.33.1,platform=27.03.0" &&
			len(cv.Status.AvailableUpdates) > 0 && nextFrom(cv.Status.CurrentVersion, cv.Status.AvailableUpdates[0].Next)
	})
	st := got.Status
	require.NotEmpty(t, st.History)
	h := st.History[0]
	assert.Equal(t, v1alpha1.HistoryCompleted, h.State)
	assert.Equal(t, "kubernetes=v1.32.0,platform=13.01.0", h.From)
	assert.Equal(t, "platform=27.03.0", h.To)
	require.NotNil(t, st.Plan)
	assert.Equal(t, []string{"platform 13.01.0 -> 13.01.2", "kubernetes v1.32.0 -> v1.33.1", "platform 13.01.2 -> 27.03.0"}, st.Plan.Hops)
	assert.True(t, meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionAvailable))
	assert.Contains(t, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionAvailable).Message, "kubernetes=v1.33.1,platform=27.03.0")
	var hops []int
	for _, r := range op.runner.Records() {
		if len(hops) == 0 || hops[len(hops)-1] != r.Hop {
			hops = append(hops, r.Hop)
		}
	}
	assert.Equal(t, []int{0, 1, 2}, hops, "the hops ran in the route's order")
	var updates []string
	for _, u := range st.AvailableUpdates {
		updates = append(updates, u.Version)
	}
	assert.Contains(t, updates, "platform=27.03.1")
	assert.Contains(t, updates, "kubernetes=v1.35.0", "a Kubernetes version that needs the platform first is reachable")
	assert.NotContains(t, updates, "platform=27.03.0", "not the state the system runs")
	require.Eventually(t, func() bool { return slices.Contains(eventReasons(t, c, ns), "UpgradeCompleted") }, 10*time.Second, 100*time.Millisecond)
	assert.Contains(t, eventNotes(t, c, ns, "UpgradeCompleted")[0], "upgraded kubernetes=v1.32.0,platform=13.01.0 -> kubernetes=v1.33.1,platform=27.03.0")

	// An unreachable target is refused with what is reachable, in states.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur v1alpha1.ClusterVersion
		if err := c.Get(ctx, key, &cur); err != nil {
			return err
		}
		cur.Spec.DesiredVersion = "kubernetes=v1.20.0"
		return c.Update(ctx, &cur, client.DryRunAll)
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reachable from kubernetes=v1.33.1,platform=27.03.0: ")
	assert.Contains(t, err.Error(), "platform=27.03.1")

	// The next upgrade names only the track it moves.
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "kubernetes=v1.35.0" })
	got = waitFor(t, c, key, 60*time.Second, "Kubernetes moved on", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "kubernetes=v1.35.0,platform=27.03.0"
	})
	assert.Len(t, got.Status.History, 2)
	require.NoError(t, c.Delete(ctx, got))
}

// nextFrom reports whether next, an update's next hop ("TRACK FROM ->
// TO"), starts from the state current.
func nextFrom(current, next string) bool {
	track, hop, _ := strings.Cut(next, " ")
	from, _, _ := strings.Cut(hop, " -> ")
	return slices.Contains(strings.Split(current, ","), track+"="+from)
}
