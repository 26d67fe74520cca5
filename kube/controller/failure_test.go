package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
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
// an UpgradeFailed Event naming them; both end with what to do. Neither an
// unrelated spec change nor an operator restart resumes it; incrementing
// spec.retry does, and the run finishes without re-running what succeeded.
func TestComponentFailure(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := runnertest.New().Script("etcd", runnertest.Script{FailAlways: true, Permanent: true})
	stores := memStores()
	op := startOperator(t, opConfig{rn: rn, stores: stores})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 60*time.Second, "failed", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseFailed })
	next := "increment spec.retry to retry the failed component(s), set desiredVersion back to v26.06-rc.2 to abort, spec.rollback to roll back what the upgrade changed, or abandon (spec.abandon)"

	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	require.NotNil(t, f)
	assert.Equal(t, "True", string(f.Status))
	assert.Equal(t, "UpgradeFailed", f.Reason)
	assert.Contains(t, f.Message, "etcd")
	assert.Contains(t, f.Message, runnertest.ErrScripted.Error())
	assert.True(t, strings.HasSuffix(f.Message, "; "+next), "the Failing message ends with what to do: %q", f.Message)
	assert.Zero(t, got.Status.ObservedRetry)
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
	assert.True(t, strings.HasSuffix(notes[0], "; "+next), "the UpgradeFailed Event ends with what to do: %q", notes[0])
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

	// Nothing resumes it but spec.retry (the failure is for good): not a
	// restart of the operator, not a change of another field, though
	// etcd would now succeed.
	n := len(rn.Records())
	rn.Script("etcd", runnertest.Script{})
	op.stop()
	startOperator(t, opConfig{rn: rn, stores: stores})
	for _, change := range []func(*v1alpha1.ClusterVersionSpec){
		func(s *v1alpha1.ClusterVersionSpec) { s.AcceptRisks = append(s.AcceptRisks, "test-unrelated") },
		func(s *v1alpha1.ClusterVersionSpec) { s.Paused = true },
		func(s *v1alpha1.ClusterVersionSpec) { s.Paused = false },
	} {
		setSpec(t, c, key, change)
		var cv v1alpha1.ClusterVersion
		require.NoError(t, c.Get(ctx, key, &cv))
		got = waitFor(t, c, key, 30*time.Second, "reconciled by the restarted operator", func(o *v1alpha1.ClusterVersion) bool {
			return o.Status.ObservedGeneration >= cv.Generation
		})
		assert.Equal(t, v1alpha1.PhaseFailed, got.Status.Phase, "a change of another field is no retry")
	}
	time.Sleep(500 * time.Millisecond) // a run started by mistake would have run components by now
	assert.Len(t, rn.Records(), n, "a failed run waits for spec.retry")
	assert.Equal(t, v1alpha1.PhaseFailed, got.Status.Phase)
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Retry++ })
	done := waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	f = meta.FindStatusCondition(done.Status.Conditions, v1alpha1.ConditionFailing)
	assert.Equal(t, "False", string(f.Status))
	for _, r := range rn.Records()[n:] {
		assert.False(t, succeeded[step{r.Hop, r.Component}], "hop %d %s ran again after it succeeded", r.Hop, r.Component)
	}
	assert.Equal(t, v1alpha1.HistoryCompleted, done.Status.History[0].State, "history: %+v", done.Status.History[0])
	assert.Len(t, done.Status.History, 1, "the retry resumed the upgrade, it did not start another")
	assert.Equal(t, int64(1), done.Status.ObservedRetry, "the retry acted on")
	waitReason(t, c, ns, "UpgradeRetried")
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

// stallingStore is a state.Store that, once, holds the checkpoint that
// records the run Failed (after storing it) until release closes: an
// operator stopped meanwhile has the failure in the run's record and not
// in the ClusterVersion's status. (The executor's final checkpoint does
// not end with its context.)
type stallingStore struct {
	state.Store
	stalled chan struct{} // closed when the failure is stored
	release chan struct{}
	once    *sync.Once
}

func (s stallingStore) stall(st *record.Status, err error) error {
	if err == nil && st.Phase == record.Failed {
		s.once.Do(func() {
			close(s.stalled)
			<-s.release
		})
	}
	return err
}

func (s stallingStore) Save(ctx context.Context, token uint64, st *record.Status) error {
	return s.stall(st, s.Store.Save(ctx, token, st))
}

func (s stallingStore) Commit(ctx context.Context, token uint64, st *record.Status, changed []record.Ref) error {
	return s.stall(st, s.Store.Commit(ctx, token, st, changed))
}

// TestRestartDoesNotRetry: an operator that stops after the run's record
// says Failed, before the status does, leaves the ClusterVersion
// Upgrading. The operator that takes over records the failure from the
// record, and does not run the failed component again (that would be a
// retry nobody asked for); spec.retry then retries it.
func TestRestartDoesNotRetry(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := runnertest.New().Script("etcd", runnertest.Script{FailAlways: true, Permanent: true})
	mem := memStores()
	stalled, release, once := make(chan struct{}), make(chan struct{}), &sync.Once{}
	stalling := func(k types.NamespacedName) (state.Store, state.Lock, error) {
		s, l, err := mem(k)
		return stallingStore{Store: s, stalled: stalled, release: release, once: once}, l, err
	}
	op := startOperator(t, opConfig{rn: rn, stores: stalling})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	select {
	case <-stalled:
	case <-time.After(60 * time.Second):
		close(release)
		t.Fatal("the run's record never said Failed")
	}
	op.cancel() // the operator stops: its run ends with the record written, not the status
	close(release)
	op.stop()
	var mid v1alpha1.ClusterVersion
	require.NoError(t, c.Get(ctx, key, &mid))
	require.Equal(t, v1alpha1.PhaseUpgrading, mid.Status.Phase, "the stopped operator did not write the failure")
	n := len(rn.Records())
	rn.Script("etcd", runnertest.Script{}) // a retry would now succeed

	startOperator(t, opConfig{rn: rn, stores: mem})
	got := waitFor(t, c, key, 30*time.Second, "failed", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseFailed })
	assert.Len(t, rn.Records(), n, "the restarted operator ran nothing")
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	require.NotNil(t, f)
	assert.Equal(t, "UpgradeFailed", f.Reason)
	assert.Contains(t, f.Message, "component etcd on hop 3")
	assert.Contains(t, f.Message, runnertest.ErrScripted.Error())
	assert.True(t, strings.HasSuffix(f.Message, "increment spec.retry to retry the failed component(s), set desiredVersion back to v26.06-rc.2 to abort, spec.rollback to roll back what the upgrade changed, or abandon (spec.abandon)"), "%q", f.Message)
	assert.Equal(t, v1alpha1.HistoryFailed, got.Status.History[0].State)
	time.Sleep(500 * time.Millisecond) // a run started by mistake would have run components by now
	assert.Len(t, rn.Records(), n, "the restarted operator ran nothing")

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Retry = 1 })
	done := waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	assert.Equal(t, v1alpha1.HistoryCompleted, done.Status.History[0].State)
	for _, r := range rn.Records()[n:] {
		assert.Equal(t, 2, r.Hop, "the retry ran only the failed hop, not %d/%s", r.Hop, r.Component)
	}
}

// TestPlanRefusedAtRun: a plan the executor refuses when it is about to
// run it (here a gate step of the executor options that the plan lacks:
// resolved against the run's record, as the run starts) fails the upgrade: phase
// Failed, Failing PlanInvalid saying what to do, and the history entry
// that the start opened ends Failed, with its completion time.
func TestPlanRefusedAtRun(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	op := startOperator(t, opConfig{opts: []controller.Option{controller.WithExecutorOptions(runner.WithGates("v99.0"))}})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.06")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 30*time.Second, "failed", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseFailed })
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	require.NotNil(t, f)
	assert.Equal(t, "PlanInvalid", f.Reason)
	assert.Contains(t, f.Message, "gate v99.0: the plan has no hop to v99.0")
	assert.True(t, strings.HasSuffix(f.Message, "; increment spec.retry to retry the failed component(s), set desiredVersion back to v26.06-rc.2 to abort, spec.rollback to roll back what the upgrade changed, or abandon (spec.abandon)"), "%q", f.Message)
	require.Len(t, got.Status.History, 1)
	h := got.Status.History[0]
	assert.Equal(t, v1alpha1.HistoryFailed, h.State, "history: %+v", h)
	require.NotNil(t, h.CompletionTime, "history: %+v", h)
	assert.False(t, h.CompletionTime.Before(&h.StartedTime))
	assert.Contains(t, h.Message, "the plan has no hop to v99.0")
	require.Eventually(t, func() bool { return len(eventNotes(t, c, ns, "UpgradeFailed")) > 0 }, 10*time.Second, 100*time.Millisecond, "an UpgradeFailed Event")
	assert.Empty(t, op.runner.Records(), "nothing ran")
	require.NoError(t, c.Delete(ctx, got))
}

// TestFailingWhileTheHopGoesOn: a component that fails for good sets
// Failing at once, with a ComponentFailed Warning Event, while the rest of
// its hop still runs (the failure policy lets independent components
// finish): an operator learns of the failure when it happens, not when
// the slowest sibling is done.
func TestFailingWhileTheHopGoesOn(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := runnertest.New().
		Script("bkeagent", runnertest.Script{FailAlways: true, Permanent: true}).
		Script("provider", runnertest.Script{Delay: 5 * time.Second}) // bkeagent's sibling on hop 1
	startOperator(t, opConfig{rn: rn})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 30*time.Second, "Failing while still upgrading", func(cv *v1alpha1.ClusterVersion) bool {
		f := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionFailing)
		return cv.Status.Phase == v1alpha1.PhaseUpgrading && f != nil && f.Status == "True"
	})
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	assert.Equal(t, "ComponentFailed", f.Reason)
	assert.Contains(t, f.Message, "component bkeagent failed on hop 1 (")
	assert.Contains(t, f.Message, runnertest.ErrScripted.Error())
	p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	require.NotNil(t, p)
	assert.Equal(t, "True", string(p.Status), "still progressing: the hop goes on")
	require.Eventually(t, func() bool { return len(eventNotes(t, c, ns, "ComponentFailed")) > 0 }, 10*time.Second, 100*time.Millisecond, "a ComponentFailed Event")
	assert.Equal(t, "Warning", eventType(t, c, ns, "ComponentFailed"))
	assert.Contains(t, eventNotes(t, c, ns, "ComponentFailed")[0], "component bkeagent failed on hop 1")

	got = waitFor(t, c, key, 30*time.Second, "failed", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseFailed })
	assert.Equal(t, "UpgradeFailed", meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing).Reason)
	abandonAndDelete(t, c, key)
}

// TestCatalogInvalid: a catalog of the namespace that does not load (here
// a Release naming a component version no ComponentVersion declares,
// applied after the ClusterVersion) runs nothing: Failing CatalogInvalid names the object and the field,
// Available is Unknown (the catalog cannot say whether it has the current
// version), and no upgrade starts. Fixing the catalog (the reconciler
// watches it) starts the upgrade.
func TestCatalogInvalid(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	ctx := context.Background()
	bad := &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken-v26.10"},
		Spec:       v1alpha1.ReleaseSpec{Version: "v26.10", Components: []v1alpha1.ComponentRef{{Name: "etcd", Version: "v9.9.9"}}},
	}
	// The webhook refuses a new ClusterVersion on a catalog that does not
	// load: the catalog breaks after the ClusterVersion was admitted,
	// before the operator first sees it.
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	require.NoError(t, c.Create(ctx, bad))
	op := startOperator(t, opConfig{})
	got := waitFor(t, c, key, 30*time.Second, "failing on the catalog", func(cv *v1alpha1.ClusterVersion) bool {
		f := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionFailing)
		return f != nil && f.Reason == "CatalogInvalid"
	})
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	assert.Contains(t, f.Message, "Release/broken-v26.10: spec.components[0]")
	assert.Contains(t, f.Message, "v9.9.9")
	a := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAvailable)
	require.NotNil(t, a, "Available is set even when the catalog does not load")
	assert.Equal(t, metav1.ConditionUnknown, a.Status)
	assert.Equal(t, "CatalogInvalid", a.Reason)
	assert.Equal(t, v1alpha1.PhaseIdle, got.Status.Phase)
	assert.Empty(t, got.Status.History)
	assert.Empty(t, op.runner.Records(), "nothing runs on a catalog that does not load")

	require.NoError(t, c.Delete(ctx, bad))
	got = waitFor(t, c, key, 60*time.Second, "upgraded once the catalog is fixed", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.09"
	})
	assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionAvailable))
	assert.True(t, meta.IsStatusConditionFalse(got.Status.Conditions, v1alpha1.ConditionFailing))
	require.NoError(t, c.Delete(ctx, got))
}
