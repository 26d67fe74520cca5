package controller_test

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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// heldRollback is a rollbackRunner whose first Rollback call waits for
// release (or its ctx): a test acts while a rollback is in flight.
type heldRollback struct {
	*rollbackRunner
	once     sync.Once
	entered  chan struct{}
	released chan struct{}
}

func newHeldRollback(rb *rollbackRunner) *heldRollback {
	return &heldRollback{rollbackRunner: rb, entered: make(chan struct{}), released: make(chan struct{})}
}

func (h *heldRollback) Rollback(ctx context.Context, t runner.Task) error {
	first := false
	h.once.Do(func() { first = true; close(h.entered) })
	if first {
		select {
		case <-h.released:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.rollbackRunner.Rollback(ctx, t)
}

// completedCV creates a ClusterVersion v26.06-rc.2 -> v26.09 and waits for
// its upgrade to end.
func completedCV(t *testing.T, c client.Client, ns string) (client.ObjectKey, *v1alpha1.ClusterVersion) {
	t.Helper()
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(context.Background(), cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 60*time.Second, "ended", func(cv *v1alpha1.ClusterVersion) bool {
		return len(cv.Status.History) > 0 && cv.Status.History[0].CompletionTime != nil
	})
	return key, got
}

func progressing(cv *v1alpha1.ClusterVersion) string {
	if p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing); p != nil {
		return p.Reason + ": " + p.Message
	}
	return ""
}

// spec.paused set while spec.rollback's rollback runs stops it at its
// next safe point, as a pause stops an upgrade: the API's doc says
// "spec.paused holds it", and run.control's own comment says "only a
// pause or an abandon stops it". The rollback in flight finishes; what
// is left (hop 0 at least) is not rolled back until spec.paused is
// cleared; the ClusterVersion is Paused, not RolledBack.
func TestRollbackPausedMidway(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := runnertest.New()
	rb := newHeldRollback(&rollbackRunner{Runner: rn})
	startOperator(t, opConfig{rn: rn, inner: rb})
	key, _ := completedCV(t, c, ns)

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Rollback = &v1alpha1.RollbackRequest{Reason: "canary"} })
	select {
	case <-rb.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("no rollback started within 60s of spec.rollback")
	}
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Paused = true })
	var gen int64
	waitFor(t, c, key, 30*time.Second, "spec.paused observed", func(cv *v1alpha1.ClusterVersion) bool {
		gen = cv.Generation
		return cv.Status.ObservedGeneration == cv.Generation
	})
	close(rb.released)
	got := waitFor(t, c, key, 60*time.Second, "the run ended", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhasePaused || cv.Status.Phase == v1alpha1.PhaseRolledBack || cv.Status.Phase == v1alpha1.PhaseFailed
	})
	assert.Equal(t, v1alpha1.PhasePaused, got.Status.Phase, "generation %d; Progressing %s", gen, progressing(got))
	assert.False(t, slices.ContainsFunc(rb.rolledBack(), func(r string) bool { return strings.HasPrefix(r, "0/") }), "hop 0 is not rolled back while spec.paused is set: %v", rb.rolledBack())
	if got.Status.Phase != v1alpha1.PhaseRolledBack {
		abandonAndDelete(t, c, key)
	}
}

// permFailRollback is a rollbackRunner whose Rollback of one component
// fails for good (runner.Permanent: not retried) while fail is set.
type permFailRollback struct {
	*rollbackRunner
	fail string
	on   bool
}

func (p *permFailRollback) Rollback(ctx context.Context, t runner.Task) error {
	err := p.rollbackRunner.Rollback(ctx, t)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on && t.Component == p.fail {
		return runner.Permanent(fmt.Errorf("rollback of %s: %w", t.Component, runnertest.ErrScripted))
	}
	return err
}

func (p *permFailRollback) set(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on = on
}

// A rollback asked by spec.rollback whose component rollback fails ends
// Failed (Failing RollbackFailed, "increment spec.retry to retry").
// Like any failed run, it must wait for spec.retry, but it runs again at
// once, and again: decide's held step skips its Failed check when
// reverting (decide.go: `&& !d.revert`), and reverting has no such
// check, so each reconcile (the failure's own status write is one)
// starts the rollback again. The Failing message must not quote "run was
// rolled back on request" (runner's ErrRolledBack, part of Execute's
// error for a requested rollback even when it failed) for a rollback
// that did not finish. spec.retry then retries it, and it ends RolledBack.
func TestRollbackFailedWaitsForRetry(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := runnertest.New()
	rb := &permFailRollback{rollbackRunner: &rollbackRunner{Runner: rn}, fail: "kubernetes-master", on: true}
	startOperator(t, opConfig{rn: rn, inner: rb})
	key, _ := completedCV(t, c, ns)
	masters := func() int {
		n := 0
		for _, r := range rb.rolledBack() {
			if strings.HasSuffix(r, "/kubernetes-master") {
				n++
			}
		}
		return n
	}

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Rollback = &v1alpha1.RollbackRequest{Reason: "canary"} })
	got := waitFor(t, c, key, 60*time.Second, "rollback failed", func(cv *v1alpha1.ClusterVersion) bool {
		return endedFor(cv, v1alpha1.ConditionFailing, "RollbackFailed")
	})
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	assert.Contains(t, f.Message, "increment spec.retry")
	assert.NotContains(t, f.Message, "run was rolled back on request", "Failing says the rollback failed, not that the run was rolled back")
	time.Sleep(2 * time.Second)
	assert.Equal(t, 1, masters(), "kubernetes-master's rollback, which fails for good, ran again without spec.retry: %v", rb.rolledBack())
	ev := 0
	for _, r := range eventReasons(t, c, ns) {
		if r == "UpgradeRollingBack" {
			ev++
		}
	}
	assert.LessOrEqual(t, ev, 1, "UpgradeRollingBack Events: one rollback was asked")

	rb.set(false)
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Retry++ })
	done := waitFor(t, c, key, 60*time.Second, "rolled back", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseRolledBack
	})
	assert.Equal(t, "v26.06-rc.2", done.Status.CurrentVersion)
	assert.True(t, meta.IsStatusConditionFalse(done.Status.Conditions, v1alpha1.ConditionFailing), "Failing cleared once rolled back")
}

// An upgrade whose failed hop was rolled back by its rule (onFailure:
// rollback) is RolledBack at v26.06: the hops before it stay completed.
// spec.rollback then asks to roll the last upgrade back to where it
// started (v26.06-rc.2), and an UpgradeRollout aborted with rollback
// Moved relies on it. The controller instead holds it as "rolled back to
// v26.06" (revert.go reverting: st.Phase == PhaseRolledBack), and
// runner.Revert refuses a RolledBack record the same way.
func TestRollbackAfterRuleRollback(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	setRule(t, c, ns, "v26.09", func(r *v1alpha1.Rule) { r.OnFailure = "rollback" })
	rn := runnertest.New()
	rb := &rollbackRunner{Runner: rn, failOn: "2/kubernetes-worker"}
	startOperator(t, opConfig{rn: rn, inner: rb})
	key, got := completedCV(t, c, ns)
	require.Equal(t, v1alpha1.PhaseRolledBack, got.Status.Phase)
	require.Equal(t, "v26.06", got.Status.CurrentVersion)

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Rollback = &v1alpha1.RollbackRequest{Reason: "fleet aborted"} })
	end := waitFor(t, c, key, 30*time.Second, "spec.rollback observed", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return cv.Status.CurrentVersion == "v26.06-rc.2" || p != nil && p.ObservedGeneration == cv.Generation && p.Reason == "RollbackRequested"
	})
	assert.Equal(t, "v26.06-rc.2", end.Status.CurrentVersion, "back where the upgrade started; Progressing %s", progressing(end))
	assert.True(t, slices.ContainsFunc(rb.rolledBack(), func(r string) bool { return strings.HasPrefix(r, "0/") }), "hop 0 rolled back: %v", rb.rolledBack())
}

// An operator whose executor options carry a failure policy
// (WithExecutorOptions(runner.WithFailurePolicy(runner.Rollback))) rolls
// back only the last hop of a spec.rollback, yet reports the upgrade
// RolledBack, "the system runs v26.06-rc.2", while hops 0 and 1 stay at
// their targets. executorOptions drops spec.onFailure for a revert but
// keeps the operator's own options, and runner.Revert's doc says an
// executor given a failure policy overrides it.
func TestRollbackOperatorPolicy(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := runnertest.New()
	rb := &rollbackRunner{Runner: rn}
	startOperator(t, opConfig{rn: rn, inner: rb, opts: []controller.Option{controller.WithExecutorOptions(runner.WithFailurePolicy(runner.Rollback))}})
	key, _ := completedCV(t, c, ns)

	got := rollBack(t, c, key, "canary")
	require.Equal(t, v1alpha1.PhaseRolledBack, got.Status.Phase, "Progressing %s", progressing(got))
	rolled := fmt.Sprint(rb.rolledBack())
	assert.Contains(t, rolled, "0/", "a ClusterVersion RolledBack on request has hop 0 rolled back too: %s; history %q", rolled, got.Status.History[0].Message)
}

// spec.rollback set while the upgrade waits for approval at the gate of
// its last hop (v26.09): the run waits for no approval once rolled back;
// hops 1 and 0 are rolled back, the gated hop's components (never
// started) are not, and nothing runs forward. The ClusterVersion ends
// RolledBack at v26.06-rc.2 with nothing waiting.
func TestRollbackWhileWaitingForApproval(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	setRule(t, c, ns, "v26.09", func(r *v1alpha1.Rule) { r.Gate = &v1alpha1.Gate{Reason: "look first"} })
	rn := runnertest.New()
	rb := &rollbackRunner{Runner: rn}
	startOperator(t, opConfig{rn: rn, inner: rb})
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(context.Background(), cv))
	key := client.ObjectKeyFromObject(cv)
	waitFor(t, c, key, 60*time.Second, "waiting for approval", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseWaitingForApproval
	})
	ran := len(rn.Records())

	got := rollBack(t, c, key, "canary")
	require.Equal(t, v1alpha1.PhaseRolledBack, got.Status.Phase, "Progressing %s", progressing(got))
	assert.Equal(t, "v26.06-rc.2", got.Status.CurrentVersion)
	assert.Empty(t, got.Status.Plan.Waiting, "nothing waits once rolled back")
	assert.Len(t, rn.Records(), ran, "nothing ran forward")
	for _, r := range rb.rolledBack() {
		assert.NotRegexp(t, `^2/`, r, "the gated hop never started")
	}
	assert.True(t, slices.ContainsFunc(rb.rolledBack(), func(r string) bool { return strings.HasPrefix(r, "0/") }), "hop 0 rolled back: %v", rb.rolledBack())
}

// An operator stopped while spec.rollback's rollback runs: the operator
// started next on the same store resumes the rollback (it does not start
// it over, nor take the record for a failure) and ends RolledBack at
// v26.06-rc.2, the history's entry RolledBack with the request's
// reason; a component rolled back before the stop is not rolled back
// again.
func TestRollbackRestart(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := runnertest.New()
	stores := memStores()
	held := newHeldRollback(&rollbackRunner{Runner: rn})
	op := startOperator(t, opConfig{rn: rn, inner: held, stores: stores})
	key, _ := completedCV(t, c, ns)

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Rollback = &v1alpha1.RollbackRequest{Reason: "canary"} })
	select {
	case <-held.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("no rollback started within 60s of spec.rollback")
	}
	op.stop() // the held rollback returns with its ctx
	first := held.rolledBack()

	rb := &rollbackRunner{Runner: rn}
	startOperator(t, opConfig{rn: rn, inner: rb, stores: stores})
	got := rollbackEnded(t, c, key)
	require.Equal(t, v1alpha1.PhaseRolledBack, got.Status.Phase, "Progressing %s", progressing(got))
	assert.Equal(t, "v26.06-rc.2", got.Status.CurrentVersion)
	require.Len(t, got.Status.History, 1)
	assert.Equal(t, v1alpha1.HistoryRolledBack, got.Status.History[0].State)
	assert.Equal(t, "the upgrade v26.06-rc.2 -> v26.09 was rolled back on request (rollback requested: canary); the system runs v26.06-rc.2", got.Status.History[0].Message)
	for _, r := range first {
		assert.NotContains(t, rb.rolledBack(), r, "rolled back before the stop, and again after")
	}
	assert.True(t, meta.IsStatusConditionFalse(got.Status.Conditions, v1alpha1.ConditionFailing))
}

// spec.abandon set while spec.rollback's rollback runs stops it at its
// next safe point: the ClusterVersion is Abandoned, and, with
// spec.rollback still set, nothing more is rolled back (an abandoned run
// is not rolled back, says reverting's status).
func TestRollbackAbandoned(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := runnertest.New()
	held := newHeldRollback(&rollbackRunner{Runner: rn})
	startOperator(t, opConfig{rn: rn, inner: held})
	key, _ := completedCV(t, c, ns)

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Rollback = &v1alpha1.RollbackRequest{Reason: "canary"} })
	select {
	case <-held.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("no rollback started within 60s of spec.rollback")
	}
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Abandon = &v1alpha1.AbandonRequest{Reason: "by hand"} })
	waitFor(t, c, key, 30*time.Second, "spec.abandon observed", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.ObservedGeneration == cv.Generation
	})
	close(held.released)
	got := waitFor(t, c, key, 60*time.Second, "ended", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseAbandoned || cv.Status.Phase == v1alpha1.PhaseRolledBack || cv.Status.Phase == v1alpha1.PhaseFailed
	})
	require.Equal(t, v1alpha1.PhaseAbandoned, got.Status.Phase, "Progressing %s", progressing(got))
	assert.False(t, slices.ContainsFunc(held.rolledBack(), func(r string) bool { return strings.HasPrefix(r, "0/") }), "hop 0 not rolled back after the abandon: %v", held.rolledBack())
	m := len(held.rolledBack())
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.AcceptRisks = append(s.AcceptRisks, "nudge") })
	after := waitFor(t, c, key, 30*time.Second, "nudge observed", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return p != nil && p.ObservedGeneration == cv.Generation
	})
	time.Sleep(time.Second)
	assert.Len(t, held.rolledBack(), m, "nothing rolled back once abandoned")
	assert.Equal(t, v1alpha1.PhaseAbandoned, after.Status.Phase)
	assert.Contains(t, progressing(after), "abandoned")
}

// spec.rollback of a multi-track ClusterVersion (states, not versions):
// its upgrade across both tracks is rolled back, last hop first, to the
// state it started from, which the status then names.
func TestRollbackMultiTrack(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, "../../testdata/two-track")
	ok := func(context.Context, runner.CheckTask) error { return nil }
	rn := runnertest.New()
	rb := &rollbackRunner{Runner: rn}
	startOperator(t, opConfig{rn: rn, inner: rb, opts: []controller.Option{controller.WithExecutorOptions(runner.WithCheck("iso-uploaded", ok))}})
	cv := newCV(ns, "platform=13.01.0,kubernetes=v1.32.0", "platform=27.03.0")
	require.NoError(t, c.Create(context.Background(), cv))
	key := client.ObjectKeyFromObject(cv)
	waitFor(t, c, key, 60*time.Second, "upgraded", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "kubernetes=v1.33.1,platform=27.03.0"
	})

	got := rollBack(t, c, key, "canary")
	require.Equal(t, v1alpha1.PhaseRolledBack, got.Status.Phase, "Progressing %s; conditions %+v", progressing(got), got.Status.Conditions)
	assert.Equal(t, "kubernetes=v1.32.0,platform=13.01.0", got.Status.CurrentVersion)
	require.Len(t, got.Status.History, 1)
	assert.Equal(t, v1alpha1.HistoryRolledBack, got.Status.History[0].State)
	assert.Contains(t, got.Status.History[0].Message, "the system runs kubernetes=v1.32.0,platform=13.01.0")
	var hops []string
	for _, r := range rb.rolledBack() {
		if h, _, _ := strings.Cut(r, "/"); len(hops) == 0 || hops[len(hops)-1] != h {
			hops = append(hops, h)
		}
	}
	assert.Equal(t, []string{"2", "1", "0"}, hops, "last hop first: %v", rb.rolledBack())
}

// spec.rollback on an upgrade stopped at its until step (after hop 1,
// v26.06-rc.3): the hop it completed is rolled back, nothing runs
// forward (until does not apply to a rollback), and the ClusterVersion
// ends RolledBack at v26.06-rc.2.
func TestRollbackAtUntil(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := runnertest.New()
	rb := &rollbackRunner{Runner: rn}
	startOperator(t, opConfig{rn: rn, inner: rb})
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	cv.Spec.Until = "v26.06-rc.3"
	require.NoError(t, c.Create(context.Background(), cv))
	key := client.ObjectKeyFromObject(cv)
	waitFor(t, c, key, 60*time.Second, "at the until step", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return cv.Status.Phase == v1alpha1.PhasePaused && p != nil && p.Reason == "UntilReached"
	})
	ran := len(rn.Records())

	got := rollBack(t, c, key, "canary")
	require.Equal(t, v1alpha1.PhaseRolledBack, got.Status.Phase, "Progressing %s", progressing(got))
	assert.Equal(t, "v26.06-rc.2", got.Status.CurrentVersion)
	assert.Len(t, rn.Records(), ran, "nothing ran forward")
	for _, r := range rb.rolledBack() {
		assert.Regexp(t, `^0/`, r, "only hop 0 ran")
	}
	assert.NotEmpty(t, rb.rolledBack())
}

// spec.rollback and spec.paused set together on a completed upgrade:
// spec.paused holds the rollback (the API's doc), and the status says
// that a rollback waits, not that the upgrade to v26.09 does ("clear
// spec.paused to resume" the upgrade, which completed). Clearing
// spec.paused starts the rollback.
func TestRollbackPausedBefore(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := runnertest.New()
	rb := &rollbackRunner{Runner: rn}
	startOperator(t, opConfig{rn: rn, inner: rb})
	key, _ := completedCV(t, c, ns)

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) {
		s.Paused, s.Rollback = true, &v1alpha1.RollbackRequest{Reason: "canary"}
	})
	held := waitFor(t, c, key, 30*time.Second, "held", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return p != nil && p.ObservedGeneration == cv.Generation
	})
	time.Sleep(time.Second)
	assert.Empty(t, rb.rolledBack(), "spec.paused holds the rollback")
	assert.Equal(t, v1alpha1.PhasePaused, held.Status.Phase)
	assert.Contains(t, progressing(held), "rollback", "the status says what is held")
	assert.NotContains(t, progressing(held), "to resume (what succeeded does not run again)", "no upgrade is paused: it completed")
	assert.Equal(t, v1alpha1.HistoryCompleted, held.Status.History[0].State, "nothing was rolled back yet")

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Paused = false })
	got := waitFor(t, c, key, 60*time.Second, "rolled back", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseRolledBack
	})
	assert.Equal(t, "v26.06-rc.2", got.Status.CurrentVersion)
}

// While spec.rollback's rollback runs, the status says so: the
// Progressing condition (True) speaks of a rollback to v26.06-rc.2, not
// of an upgrade toward v26.09, and the history entry is open
// ("rolling back on request"). Nothing failed: Failing is not True. The
// run's progress writes (progress.go writeProgress) take the record's
// LastFailure, which runner.Revert sets to the request (code
// ROLLBACK_REQUESTED), for a component failure: Failing True,
// ComponentFailed, "component  failed on hop 3 (ROLLBACK_REQUESTED: ...)".
func TestRollbackInProgressStatus(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := runnertest.New()
	held := newHeldRollback(&rollbackRunner{Runner: rn})
	startOperator(t, opConfig{rn: rn, inner: held})
	key, _ := completedCV(t, c, ns)

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Rollback = &v1alpha1.RollbackRequest{Reason: "canary"} })
	select {
	case <-held.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("no rollback started within 60s of spec.rollback")
	}
	defer close(held.released)
	mid := waitFor(t, c, key, 30*time.Second, "the rollback's progress", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Plan != nil && cv.Status.Plan.Phase == "RollingBack"
	})
	p := meta.FindStatusCondition(mid.Status.Conditions, v1alpha1.ConditionProgressing)
	require.NotNil(t, p)
	assert.Equal(t, "rolling back on request: canary", mid.Status.History[0].Message)
	assert.Nil(t, mid.Status.History[0].CompletionTime)
	assert.Contains(t, p.Reason+": "+p.Message, "roll", "Progressing says a rollback runs")
	assert.NotContains(t, p.Message, "toward v26.09", "nothing moves toward v26.09")
	if f := meta.FindStatusCondition(mid.Status.Conditions, v1alpha1.ConditionFailing); f != nil {
		assert.NotEqual(t, metav1.ConditionTrue, f.Status, "a rollback asked for is not a failure: Failing %s: %s", f.Reason, f.Message)
	}
}

// spec.rollback on a completed upgrade whose run's record is no longer
// in the store (an operator started on an empty store): it cannot be
// rolled back, and the status says so (Failing RollbackRefused). The
// upgrade itself completed: its history entry stays Completed (what
// failed is the request, not the upgrade), and once spec.rollback is
// cleared the ClusterVersion is Idle at v26.09, not failing.
func TestRollbackRefusedKeepsHistory(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := runnertest.New()
	op := startOperator(t, opConfig{rn: rn, inner: &rollbackRunner{Runner: rn}})
	key, done := completedCV(t, c, ns)
	require.Equal(t, v1alpha1.HistoryCompleted, done.Status.History[0].State)
	op.stop()
	startOperator(t, opConfig{rn: rn, inner: &rollbackRunner{Runner: rn}, stores: memStores()}) // an empty store

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Rollback = &v1alpha1.RollbackRequest{Reason: "canary"} })
	got := waitFor(t, c, key, 30*time.Second, "refused", func(cv *v1alpha1.ClusterVersion) bool {
		return endedFor(cv, v1alpha1.ConditionFailing, "RollbackRefused")
	})
	f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
	assert.Contains(t, f.Message, "is not in the store")
	assert.Equal(t, "v26.09", got.Status.CurrentVersion)
	require.Len(t, got.Status.History, 1)
	assert.Equal(t, v1alpha1.HistoryCompleted, got.Status.History[0].State, "the upgrade completed; only the request failed: %q", got.Status.History[0].Message)

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Rollback = nil })
	cleared := waitFor(t, c, key, 30*time.Second, "spec.rollback cleared, observed", func(cv *v1alpha1.ClusterVersion) bool {
		p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
		return p != nil && p.ObservedGeneration == cv.Generation
	})
	assert.Equal(t, v1alpha1.PhaseIdle, cleared.Status.Phase, "Progressing %s", progressing(cleared))
	assert.True(t, meta.IsStatusConditionFalse(cleared.Status.Conditions, v1alpha1.ConditionFailing), "not failing once the request is gone")
}

func endedFor(cv *v1alpha1.ClusterVersion, typ, reason string) bool {
	c := meta.FindStatusCondition(cv.Status.Conditions, typ)
	return c != nil && c.Reason == reason && c.ObservedGeneration == cv.Generation
}

// rollBack sets key's spec.rollback with reason and returns the
// ClusterVersion once its rollback has ended (rollbackEnded).
func rollBack(t *testing.T, c client.Client, key client.ObjectKey, reason string) *v1alpha1.ClusterVersion {
	t.Helper()
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Rollback = &v1alpha1.RollbackRequest{Reason: reason} })
	return rollbackEnded(t, c, key)
}

// rollbackEnded waits until key's rollback has ended, RolledBack or
// Failed, and returns the ClusterVersion.
func rollbackEnded(t *testing.T, c client.Client, key client.ObjectKey) *v1alpha1.ClusterVersion {
	t.Helper()
	return waitFor(t, c, key, 60*time.Second, "rollback ended", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseRolledBack || cv.Status.Phase == v1alpha1.PhaseFailed
	})
}
