package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// eventNotes lists the notes of the Events of reason about the
// ClusterVersion.
func eventNotes(t *testing.T, c client.Client, ns, reason string) []string {
	t.Helper()
	var l eventsv1.EventList
	require.NoError(t, c.List(context.Background(), &l, client.InNamespace(ns)))
	var out []string
	for _, e := range l.Items {
		if e.Regarding.Kind == "ClusterVersion" && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

// TestComponentFailure: a component that fails for good fails the run:
// phase Failed, Failing UpgradeFailed with the error, the history entry
// Failed, the plan's last failure naming the component and its code, and
// an UpgradeFailed Event naming them. A spec change resumes the run, which
// then finishes without re-running what succeeded.
func TestComponentFailure(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := runnertest.New().Script("etcd", runnertest.Script{FailAlways: true, Permanent: true})
	startOperator(t, opConfig{rn: rn})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 60*time.Second, "failed", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseFailed })

	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	require.NotNil(t, f)
	assert.Equal(t, "True", string(f.Status))
	assert.Equal(t, "UpgradeFailed", f.Reason)
	assert.Contains(t, f.Message, "etcd")
	assert.Contains(t, f.Message, runnertest.ErrScripted.Error())
	require.NotEmpty(t, got.Status.History)
	assert.Equal(t, v1alpha1.HistoryFailed, got.Status.History[0].State)
	assert.NotNil(t, got.Status.History[0].CompletionTime)
	lf := got.Status.Plan.LastFailure
	require.NotNil(t, lf, "the plan's last failure")
	assert.Equal(t, "etcd", lf.Component)
	assert.NotEmpty(t, lf.Code)
	var notes []string
	require.Eventually(t, func() bool {
		notes = eventNotes(t, c, ns, "UpgradeFailed")
		return len(notes) > 0
	}, 10*time.Second, 100*time.Millisecond, "an UpgradeFailed Event")
	assert.Contains(t, notes[0], fmt.Sprintf("component etcd on hop %d: %s", lf.Hop+1, lf.Code))
	assert.Equal(t, "Warning", eventType(t, c, ns, "UpgradeFailed"))
	type step struct {
		hop       int
		component string
	}
	succeeded := map[step]bool{}
	for _, r := range rn.Records() {
		if r.Err == nil {
			succeeded[step{r.Hop, r.Component}] = true
		}
	}

	// Nothing happens until the spec changes (the failure is for good);
	// then the run resumes.
	n := len(rn.Records())
	time.Sleep(time.Second)
	assert.Len(t, rn.Records(), n, "a failed run waits for a spec change")
	rn.Script("etcd", runnertest.Script{})
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.AcceptRisks = append(s.AcceptRisks, "operator-retry") })
	done := waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	f = meta.FindStatusCondition(done.Status.Conditions, v1alpha1.ConditionFailing)
	assert.Equal(t, "False", string(f.Status))
	for _, r := range rn.Records()[n:] {
		assert.False(t, succeeded[step{r.Hop, r.Component}], "hop %d %s ran again after it succeeded", r.Hop, r.Component)
	}
	assert.Equal(t, v1alpha1.HistoryCompleted, done.Status.History[0].State, "history: %+v", done.Status.History[0])
}

func eventType(t *testing.T, c client.Client, ns, reason string) string {
	t.Helper()
	var l eventsv1.EventList
	require.NoError(t, c.List(context.Background(), &l, client.InNamespace(ns)))
	for _, e := range l.Items {
		if e.Regarding.Kind == "ClusterVersion" && e.Reason == reason {
			return e.Type
		}
	}
	return ""
}
