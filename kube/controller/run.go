package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// stop says why a run stops at its next safe point.
type stop int

const (
	noStop stop = iota
	stopPause
	stopAbort
	stopAbandon
)

// run is one upgrade in flight in this process.
type run struct {
	r *Reconciler
	p *plan
	// from and to are where the run starts and ends, as the status
	// spells them (a version, or a state across tracks).
	from, to string

	mu      sync.Mutex
	why     stop
	reason  string // the abandon reason
	running int    // components inside the inner runner
	// hop is the furthest hop a component entered; an abort lets the
	// components of stopHop (the hop the abort came during) go on, so
	// that the system ends at a release of the catalog, not between two.
	hop, stopHop int
	// paused: spec.paused was seen, which stops every hop at once (also
	// after an abort).
	paused bool
	// deleted: the ClusterVersion is being deleted, which stops the run
	// as an abort does (deleting).
	deleted bool
	// blocked counts the components waiting at the gate for the run's
	// end.
	blocked int
	cancel  context.CancelFunc
	status  brief // the latest durable transition, in brief
	dirty   bool
	flush   chan struct{}
	// retrying are the components retried after a failed attempt
	// (observeRetry); retryEvents bounds their Events.
	retrying    retries
	retryEvents eventBudget
	// failEvents bounds the ComponentFailed Events as retryEvents does
	// ComponentRetrying's; failHeld are the components of the hop in
	// progress whose Event it held back (componentFailed).
	failEvents eventBudget
	failHeld   []string
}

// control reads the spec at a reconcile while the run goes.
func (ru *run) control(spec *v1alpha1.ClusterVersionSpec) {
	why, reason := noStop, ""
	switch {
	case spec.Abandon != nil:
		why, reason = stopAbandon, spec.Abandon.Reason
	case !samePosition(ru.p.target, string(spec.DesiredVersion)):
		why = stopAbort
	case spec.Paused:
		why = stopPause
	}
	ru.mu.Lock()
	defer ru.mu.Unlock()
	if why > ru.why { // a stop is never taken back by a later reconcile
		if why == stopAbort {
			ru.stopHop = ru.hop
		}
		ru.why, ru.reason = why, reason
	}
	ru.paused = ru.paused || spec.Paused
	if ru.cancelNow() && ru.cancel != nil {
		ru.cancel()
	}
}

// stops reports whether a component of hop waits at the gate for the
// run's end (ru.mu held): every one once a pause or an abandon is asked;
// after an abort, those of the hops after the one it came during.
func (ru *run) stops(hop int) bool {
	switch {
	case ru.why == noStop:
		return false
	case ru.why == stopAbort && !ru.paused:
		return hop > ru.stopHop
	}
	return true
}

// cancelNow reports whether the run is at its safe point (ru.mu held):
// a stop is asked and no component is inside the inner runner; an abort
// also waits until a component of a later hop is at the gate, so that
// the hop it came during finishes (its last components, its post-checks)
// rather than stopping partway.
func (ru *run) cancelNow() bool {
	if ru.why == noStop || ru.running > 0 {
		return false
	}
	return ru.why != stopAbort || ru.paused || ru.blocked > 0
}

// Run is the gate in front of the embedder's runner: once a stop is
// asked, a component that has not entered the inner runner waits for the
// run's end (and is Cancelled, to run again on resume); the run is
// cancelled when the last running component returns (see cancelNow).
// That is the safe point: nothing is interrupted inside a runner.
func (ru *run) Run(ctx context.Context, t runner.Task) error {
	return ru.through(ctx, t.HopIndex, func() error { return ru.p.runner.Run(ctx, t) })
}

// Rollback passes the same gate as Run: a stop asked during a rollback
// stops it between components, and the resumed run goes on with it.
func (ru *run) Rollback(ctx context.Context, t runner.Task) error {
	inner := ru.p.runner
	rb, ok := inner.(runner.Rollbacker)
	if !ok { // the plan was refused before (decide checks the abilities)
		return fmt.Errorf("controller: the runner (%T) cannot roll back %s", inner, t.Component)
	}
	return ru.through(ctx, t.HopIndex, func() error { return rb.Rollback(ctx, t) })
}

// through runs fn, one component's work on hop, at the gate.
func (ru *run) through(ctx context.Context, hop int, fn func() error) error {
	ru.mu.Lock()
	if ru.stops(hop) {
		ru.blocked++
		if ru.cancelNow() {
			ru.cancel()
		}
		ru.mu.Unlock()
		<-ctx.Done()
		return ctx.Err()
	}
	ru.running++
	ru.hop = max(ru.hop, hop)
	ru.mu.Unlock()
	defer func() {
		ru.mu.Lock()
		ru.running--
		if ru.cancelNow() {
			ru.cancel()
		}
		ru.mu.Unlock()
	}()
	return fn()
}

// start launches p in the background.
func (r *Reconciler) start(p *plan) {
	ru := &run{r: r, p: p, from: routeFrom(p.plan.Route).String(), to: routeTo(p.plan.Route).String(), flush: make(chan struct{}, 1),
		retryEvents: eventBudget{n: retryEventsPerWindow, window: retryEventWindow},
		failEvents:  eventBudget{n: retryEventsPerWindow, window: retryEventWindow}}
	ru.control(&p.cv.Spec)
	r.mu.Lock()
	base := r.base
	if r.runs[p.key] != nil || base == nil || base.Err() != nil {
		r.mu.Unlock()
		return
	}
	r.runs[p.key] = ru
	r.runsWG.Add(1)
	r.mu.Unlock()
	if p.fresh {
		r.event(p.cv, "Normal", "UpgradeStarted", "Upgrade", fmt.Sprintf("upgrading %s -> %s in %d %s", ru.from, ru.to, len(p.plan.Hops), plural(len(p.plan.Hops), "hop", "hops")))
	}
	go ru.execute(base)
}

func (ru *run) execute(ctx context.Context) {
	r, key := ru.r, ru.p.key
	defer func() {
		r.mu.Lock()
		delete(r.runs, key)
		r.mu.Unlock()
		r.runsWG.Done()
		select {
		case r.wake <- event.GenericEvent{Object: ru.p.cv}:
		case <-ctx.Done():
		}
	}()
	// wait lets the wake that re-queues a run that could not start come
	// not at once (for a lock, after the holder's lease had time to run
	// out).
	wait := func() {
		select {
		case <-time.After(r.ttl / 3):
		case <-ctx.Done():
		}
	}
	store, lock, err := r.stores(key)
	if err != nil {
		r.logger.Warn("controller: store lock", "clusterversion", key, "error", err)
		ru.storeError(ctx, "opening the run's record", err)
		wait()
		return
	}
	// The run is durable through state.Run: the lock taken and its lease
	// kept, the record loaded, every transition saved under the lease
	// (and noted for the status writer), the lock released at the end.
	taken := &acquiring{Lock: lock}
	began := false
	exec := runner.New(gated{ru}, append(r.executorOptions(ru.p.cv), runner.WithObserver(runner.ObserverFunc(ru.observe)), runner.WithObserver(newMetricsObserver(ru.p.plan)))...)
	_, err = state.Run(ctx, store, taken, exec, ru.p.plan,
		state.WithHolder(r.holder), state.WithTTL(r.ttl), state.WithLogger(r.logger),
		state.WithCheckpoints(func(cp runner.Checkpointer) runner.Checkpointer { return &noting{cp: timedCheckpointer{cp}, ru: ru} }),
		state.WithSession(func(kctx context.Context, s *state.Session) (*record.Status, error) {
			began = true
			return ru.session(ctx, kctx, s)
		}))
	switch {
	case taken.err != nil:
		r.logger.Warn("controller: store lock", "clusterversion", key, "error", err)
		ru.storeError(ctx, "locking the run's record", err)
		wait()
	case !began && err != nil:
		r.logger.Warn("controller: loading the stored run", "clusterversion", key, "error", err)
		ru.storeError(ctx, "loading the run's record", err)
		wait()
	}
}

// acquiring is a run's lock, keeping its Acquire's error, for execute to
// tell it from state.Run's other errors.
type acquiring struct {
	state.Lock
	err error
}

func (l *acquiring) Acquire(ctx context.Context, holder string, ttl time.Duration) (state.Lease, error) {
	lease, err := l.Lock.Acquire(ctx, holder, ttl)
	l.err = err
	return lease, err
}

// session is the run once state.Run holds the lock and has loaded the
// record (s.Prev), under kctx, the lease's context (ctx is the
// operator's): it decides what to resume, records the approvals and a
// failure the status does not show yet, executes, and records how the
// run ended, all under the lease.
func (ru *run) session(ctx, kctx context.Context, s *state.Session) (*record.Status, error) {
	r, key := ru.r, ru.p.key
	ru.storeError(kctx, "", nil)
	prev := s.Prev
	if prev != nil && (!recordOf(prev, ru.from, ru.to) || prev.Phase == record.Abandoned || prev.Phase == record.RolledBack || ru.p.fresh && prev.Phase == record.Succeeded) {
		// Another upgrade's record, or one that ended for good (a new
		// upgrade finds one that completed only when its ClusterVersion
		// was deleted and created again and the store kept the record):
		// this one starts afresh.
		prev = nil
	}
	if prev != nil && !ru.p.fresh && !ru.p.retry && (prev.Phase == record.Failed || prev.Phase == record.RollbackFailed) {
		// The record ended failed but the status does not say so yet:
		// the operator stopped between the two (a restart, a new
		// leader). Nothing asked for a retry: record the failure, and
		// leave its retry to spec.retry.
		ru.finish(kctx, s.Store, s.Lease(), prev, recordedFailure(prev))
		return prev, nil
	}
	if prev != nil {
		if err := ru.approve(kctx, s.Store, s.Lease(), prev); err != nil {
			r.logger.Warn("controller: recording approvals", "clusterversion", key, "error", err)
			ru.storeError(kctx, "recording the approvals", err)
			select { // the wake re-queues: not at once
			case <-time.After(r.ttl / 3):
			case <-ctx.Done():
			}
			return nil, err
		}
	}
	rctx, cancel := context.WithCancel(kctx)
	defer cancel()
	ru.mu.Lock()
	ru.cancel = cancel
	if prev != nil { // an abort asked before the record was read lets its hop finish
		ru.hop = max(ru.hop, prev.CurrentHop)
		ru.stopHop = max(ru.stopHop, prev.CurrentHop)
	}
	stopNow := ru.cancelNow()
	ru.mu.Unlock()
	if stopNow {
		cancel()
	}

	done := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() { ru.writeLoop(kctx, done) })
	st, err := s.Execute(rctx, prev)
	close(done)
	writer.Wait()
	if kctx.Err() != nil {
		r.logger.Warn("controller: stopped, or the store lease was lost; the next leader resumes", "clusterversion", key)
		return st, err
	}
	if errors.Is(err, state.ErrFenced) {
		// Another holder wrote the record under a greater token: the run
		// is theirs, and so is the ClusterVersion's status. Writing
		// Failed here would overwrite it; the wake re-queues, and the
		// next run takes the record when the lock is free.
		r.logger.Warn("controller: the run's record was written by another holder; stopping without touching the status", "clusterversion", key, "error", err)
		return st, err
	}
	ru.finish(kctx, s.Store, s.Lease(), st, err)
	return st, err
}

// approve records in prev each approval of the spec whose step waits
// and was not approved, and saves prev when it recorded one: the run
// that follows passes those gates. An approval is recorded only here,
// under the run's lock, once: prev.Approve refuses a step approved
// before, and a step that does not wait is not approved ahead.
func (ru *run) approve(ctx context.Context, store state.Store, lease state.Lease, prev *record.Status) error {
	var recorded []record.Approval
	for _, a := range ru.p.cv.Spec.Approvals {
		if !slices.Contains(prev.Waiting, a.Step) || prev.Approved(a.Step) {
			continue
		}
		if ps := ru.p.cv.Status.Plan; ps != nil && stale(ps, a) {
			continue // there before its step waited
		}
		if err := prev.Approve(a.Step, a.By, time.Now().UTC()); err != nil {
			return err
		}
		recorded = append(recorded, prev.Approvals[len(prev.Approvals)-1])
	}
	if len(recorded) == 0 {
		return nil
	}
	if err := store.Save(ctx, lease.Token, prev); err != nil {
		return err
	}
	for _, a := range recorded {
		ru.r.event(ru.p.cv, "Normal", "UpgradeApproved", "Approve "+a.Step, fmt.Sprintf("approved %s (by %s); the upgrade %s -> %s resumes", a.Step, a.By, ru.from, ru.to))
	}
	return nil
}

// noting is the run's checkpointer: the state store's (journal commits
// of what changed, through its runner.ChangeCheckpointer), noting each
// status written for the ClusterVersion's coalesced status updates. (A
// runner.CheckpointFunc would hide CheckpointChanges, and every
// checkpoint would rewrite the whole status.)
type noting struct {
	cp runner.Checkpointer
	ru *run
}

func (n *noting) Checkpoint(ctx context.Context, s *record.Status) error {
	if err := n.cp.Checkpoint(ctx, s); err != nil {
		return err
	}
	n.ru.note(s)
	return nil
}

func (n *noting) CheckpointChanges(ctx context.Context, s *record.Status, changed []record.Ref) error {
	cc, ok := n.cp.(runner.ChangeCheckpointer)
	if !ok {
		return n.Checkpoint(ctx, s)
	}
	if err := cc.CheckpointChanges(ctx, s, changed); err != nil {
		return err
	}
	n.ru.note(s)
	return nil
}

// gated is the run's gate as a runner.Runner (the plan was checked
// against the embedder's runner when it was made). It has the
// embedder's rollback abilities: Rollback, and ValidateRollback, which
// the executor asks again at Execute.
type gated struct{ ru *run }

func (g gated) Run(ctx context.Context, t runner.Task) error { return g.ru.Run(ctx, t) }

func (g gated) Rollback(ctx context.Context, t runner.Task) error { return g.ru.Rollback(ctx, t) }

func (g gated) ValidateRollback(cv *release.ComponentVersion) error {
	inner := g.ru.p.runner
	if _, ok := inner.(runner.Rollbacker); !ok {
		return fmt.Errorf("the runner (%T) has no Rollback method", inner)
	}
	if rv, ok := inner.(runner.RollbackValidator); ok {
		return rv.ValidateRollback(cv)
	}
	return nil
}

// brief is what the ClusterVersion's status shows of a run's Status: a
// copy whose cost does not grow with the number of components, taken on
// every transition.
type brief struct {
	s       record.Status // without Hops
	reached string
	// retrying and retries are the retried components as
	// status.plan.retrying lists them, and how many there are.
	retrying []v1alpha1.Retry
	retries  int
}

// note keeps the latest durable transition for the status writer.
func (ru *run) note(s *record.Status) {
	b := brief{s: *s, reached: reachedBy(ru.p.plan, s)}
	b.s.Hops = nil
	// The writer reads these while the executor goes on changing its own.
	b.s.Waiting, b.s.Approvals = slices.Clone(s.Waiting), slices.Clone(s.Approvals)
	if s.LastFailure != nil {
		f := *s.LastFailure
		b.s.LastFailure = &f
	}
	ru.mu.Lock()
	ru.status = b
	ru.dirty = true
	ru.mu.Unlock()
}

// observe turns hop transitions into Events and immediate status writes,
// and keeps the components retried (observeRetry).
func (ru *run) observe(ev runner.Event) {
	r, cv := ru.r, ru.p.cv
	ru.observeRetry(ev)
	switch ev.Type {
	case runner.HopSucceeded:
		ru.failedSummary(ev)
		// The action names the hop: the events API merges Events of one
		// action and reason into a series, which would hide all but the
		// first hop.
		r.event(cv, "Normal", "HopCompleted", "Hop "+ev.HopName, fmt.Sprintf("hop %d of %d %s completed in %s", ev.Hop+1, len(ru.p.plan.Hops), ev.HopName, ev.Duration.Round(time.Millisecond)))
	case runner.ComponentFailed:
		ru.componentFailed(ev)
	case runner.HopFailed:
		ru.failedSummary(ev)
	case runner.HopStarted:
	default:
		return
	}
	select {
	case ru.flush <- struct{}{}:
	default:
	}
}

// writeLoop writes the latest transition at most once per interval, and
// at once after a hop event; it returns when done closes. Its writes are
// under ctx, the store lease's (state.Keep): once the lease is lost (or
// about to expire, on this holder's clock), no progress of this run is
// written over the status another holder may be writing.
func (ru *run) writeLoop(ctx context.Context, done <-chan struct{}) {
	t := time.NewTicker(ru.r.interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		case <-ru.flush:
		}
		ru.mu.Lock()
		s, dirty := ru.status, ru.dirty
		s.retrying, s.retries = ru.retrying.list()
		ru.dirty = false
		ru.mu.Unlock()
		if dirty {
			ru.writeProgress(ctx, s)
		}
	}
}

// writeProgress writes a transition of the run into the status.
func (ru *run) writeProgress(ctx context.Context, b brief) {
	ru.update(ctx, func(st *v1alpha1.ClusterVersionStatus) {
		st.Plan = summary(ru.p.plan, &b.s, ru.p.target)
		st.Plan.Retrying, st.Plan.Progress.Retrying = b.retrying, b.retries
		st.CurrentVersion = b.reached
		setCondition(st, ru.p.cv, v1alpha1.ConditionProgressing, metav1.ConditionTrue, "Upgrading", progressing(st.Plan))
		if f := b.s.LastFailure; f != nil {
			// Failing from the moment a component fails for good, while
			// the hop finishes what its failure policy lets it.
			setCondition(st, ru.p.cv, v1alpha1.ConditionFailing, metav1.ConditionTrue, "ComponentFailed", failedNow(f))
		}
	})
}

// failedNow says that a component failed for good while the run goes on.
func failedNow(f *record.Failure) string {
	return fmt.Sprintf("component %s failed on hop %d (%s: %s); the run goes on as its failure policy says until it ends (Failed, or RolledBack under a rollback policy)",
		cmpStr(f.Component, f.Check), f.Hop+1, f.Code, firstLine(f.Error))
}

// update re-reads the ClusterVersion and writes fn's change of its status.
// A conflict (another writer in between: the run's progress writer, a
// reconcile, finish) reads it again and applies fn again, so that no
// writer puts back what another wrote since its read.
func (ru *run) update(ctx context.Context, fn func(*v1alpha1.ClusterVersionStatus)) {
	ru.updateFor(ctx, func(_ *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) { fn(st) })
}

// updateFor is update for a change that depends on the ClusterVersion as
// read (its spec): the status written goes with the spec fn saw. It
// reports whether it wrote fn's change (false: nothing changed, or the
// write failed).
func (ru *run) updateFor(ctx context.Context, fn func(*v1alpha1.ClusterVersion, *v1alpha1.ClusterVersionStatus)) bool {
	r := ru.r
	wrote := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cv v1alpha1.ClusterVersion
		if err := r.reader.Get(ctx, ru.p.key, &cv); err != nil {
			return err
		}
		st := cv.Status.DeepCopy()
		fn(&cv, st)
		fitStatus(&cv, st)
		if equalStatus(&cv.Status, st) {
			return nil
		}
		cv.Status = *st
		if err := r.client.Status().Update(ctx, &cv); err != nil {
			return err
		}
		notePhase(&cv, &cv.Status)
		r.writes.Add(1)
		wrote = true
		return nil
	})
	if err != nil {
		r.logger.Warn("controller: status write", "clusterversion", ru.p.key, "error", err)
	}
	return wrote
}

// held is the reconciler as finish's status change sees it: its Events
// are held until the change is written (updateFor applies the change
// again after a conflict, and a change that writes nothing, because
// another writer recorded the outcome first, tells nothing).
type held struct {
	*Reconciler
	events *[]func()
}

func (h held) event(cv *v1alpha1.ClusterVersion, typ, reason, action, note string) {
	*h.events = append(*h.events, func() { h.Reconciler.event(cv, typ, reason, action, note) })
}

// storeError shows on the ClusterVersion why its run cannot start: the
// lock or the record of its state store failed (RBAC, an unreachable
// backend, a damaged record). A lock held by another holder is not a
// failure: Progressing says whom the run waits for. A nil err clears a
// store failure shown before.
func (ru *run) storeError(ctx context.Context, doing string, err error) {
	r, cv := ru.r, ru.p.cv
	if err == nil {
		ru.update(ctx, func(st *v1alpha1.ClusterVersionStatus) {
			if storeFailing(st) {
				setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
				if st.Plan != nil {
					setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionTrue, "Upgrading", progressing(st.Plan))
				}
			}
		})
		return
	}
	if _, ok := errors.AsType[*state.LockedError](err); ok {
		ru.update(ctx, func(st *v1alpha1.ClusterVersionStatus) {
			setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionTrue, "WaitingForLock", "waiting for the run's lock: "+err.Error())
		})
		return
	}
	reason := "StoreUnavailable"
	if errors.Is(err, state.ErrCorrupt) {
		reason = "StoreCorrupt"
	}
	msg := doing + ": " + err.Error()
	ru.update(ctx, func(st *v1alpha1.ClusterVersionStatus) {
		setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionTrue, reason, msg)
		setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, reason, "not upgrading: "+firstLine(msg)+"; retrying")
	})
	r.event(cv, "Warning", reason, "Upgrade", firstLine(msg))
}

// storeFailing reports whether st shows a store failure (storeError).
func storeFailing(st *v1alpha1.ClusterVersionStatus) bool {
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionFailing)
	return c != nil && c.Status == metav1.ConditionTrue && (c.Reason == "StoreUnavailable" || c.Reason == "StoreCorrupt")
}

// finish records how the run ended.
func (ru *run) finish(ctx context.Context, store state.Store, lease state.Lease, s *record.Status, err error) {
	r, cv := ru.r, ru.p.cv
	ru.mu.Lock()
	why, reason := ru.why, ru.reason
	deleted := ru.deleted
	ru.mu.Unlock()
	if s == nil { // the plan was refused before it ran
		now := metav1.Now()
		msg := withNext(err.Error(), failedNext(ru.from))
		ru.updateFor(ctx, func(latest *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) {
			// The history entry decide opened ends here, Failed: the
			// upgrade was shown Upgrading (and, when resumed, may have
			// completed hops before), so it is not dropped.
			endHistory(st, v1alpha1.HistoryFailed, firstLine(err.Error()), now)
			r.failing(cv, st, "PlanInvalid", msg)
			st.Phase, st.ObservedRetry = v1alpha1.PhaseFailed, latest.Spec.Retry
		})
		r.event(cv, "Warning", "UpgradeFailed", "Upgrade", fmt.Sprintf("upgrade %s -> %s failed: the plan was refused: %s; %s", ru.from, ru.to, firstLine(err.Error()), failedNext(ru.from)))
		return
	}
	if errors.Is(err, runner.ErrPlanMismatch) {
		ru.mismatched(ctx, s, err)
		return
	}
	now := metav1.Now()
	if s.Phase == record.Cancelled && why == stopAbandon {
		if aerr := s.Abandon(reason, now.Time); aerr == nil {
			if serr := store.Save(ctx, lease.Token, s); serr != nil {
				r.logger.Warn("controller: saving the abandoned run", "clusterversion", ru.p.key, "error", serr)
				return
			}
		}
	}
	var events []func()
	wrote := ru.updateFor(ctx, func(latest *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) {
		events = nil
		if !openHistory(st) {
			// Another writer (a replica without leader election, a run
			// of this record resumed elsewhere) recorded how the upgrade
			// ended: it is not recorded, nor announced, again.
			return
		}
		r := held{r, &events}
		st.Plan = summary(ru.p.plan, s, ru.p.target)
		st.CurrentVersion = reachedBy(ru.p.plan, s)
		switch {
		case s.Phase == record.Succeeded:
			st.Phase = v1alpha1.PhaseIdle
			setCondition(st, cv, v1alpha1.ConditionAvailable, metav1.ConditionTrue, "AsExpected", "the system runs "+st.CurrentVersion)
			msg := ""
			if why == stopAbort && !deleted && setsBack(ru.from, string(latest.Spec.DesiredVersion)) { // it came during the last hop, which an abort lets finish
				msg = abortedLate + ru.from + " came during the last hop, and an abort lets the hop in progress finish"
			} else if why == stopAbort && !deleted {
				msg = redirectedLate(ru.to, latest.Spec.DesiredVersion)
			}
			endHistory(st, v1alpha1.HistoryCompleted, msg, now)
			setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "AsExpected", "the system runs "+st.CurrentVersion)
			setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
			r.event(cv, "Normal", "UpgradeCompleted", "Upgrade", fmt.Sprintf("upgraded %s -> %s in %s", ru.from, ru.to, s.FinishedAt.Sub(s.StartedAt).Round(time.Millisecond)))
		case s.Phase == record.Abandoned:
			st.Phase = v1alpha1.PhaseAbandoned
			endHistory(st, v1alpha1.HistoryFailed, "abandoned: "+reason, now)
			setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "Abandoned", "abandoned at "+st.Plan.Progress.Summary+": "+reason)
			r.event(cv, "Warning", "UpgradeAbandoned", "Abandon", "abandoned: "+reason)
		case s.Phase == record.WaitingForApproval:
			st.Phase = v1alpha1.PhaseWaitingForApproval
			markStale(latest, st.Plan)
			msg := waitingMessage(st.Plan.Waiting)
			setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "WaitingForApproval", msg)
			setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
			r.event(cv, "Normal", "UpgradeWaitingForApproval", "Gate", msg)
		case s.Phase == record.Paused: // at the until step (spec.until, or runner.WithUntil in the operator's executor options)
			st.Phase = v1alpha1.PhasePaused
			setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "UntilReached", untilMessage(ru.p.cv, s, st.Plan.Progress.Summary))
			setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
			r.event(cv, "Normal", "UpgradePaused", "Pause", s.Message)
		case s.Phase == record.RolledBack:
			st.Phase = v1alpha1.PhaseRolledBack
			msg := fmt.Sprintf("the upgrade %s -> %s failed and was rolled back; the system runs %s", ru.from, ru.to, st.CurrentVersion)
			if f := s.LastFailure; f != nil {
				msg = fmt.Sprintf("the upgrade %s -> %s failed at component %s on hop %d (%s: %s) and was rolled back; the system runs %s", ru.from, ru.to, cmpStr(f.Component, f.Check), f.Hop+1, f.Code, firstLine(f.Error), st.CurrentVersion)
			}
			endHistory(st, v1alpha1.HistoryRolledBack, msg, now)
			setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionTrue, "UpgradeRolledBack", msg+"; change the spec to try again")
			setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "UpgradeRolledBack", "not upgrading: rolled back to "+st.CurrentVersion)
			r.event(cv, "Warning", "UpgradeRolledBack", "Rollback", msg)
		case s.Phase == record.RollbackFailed:
			st.Phase = v1alpha1.PhaseFailed
			msg := fmt.Sprintf("%s: the upgrade %s -> %s failed and its rollback did not finish: the system is between versions", s.Code, ru.from, ru.to)
			if f := s.LastFailure; f != nil {
				msg += fmt.Sprintf(" (the upgrade failed at component %s on hop %d: %s)", cmpStr(f.Component, f.Check), f.Hop+1, f.Code)
			}
			if err != nil {
				msg += ": " + err.Error()
			}
			endHistory(st, v1alpha1.HistoryFailed, firstLine(msg), now)
			msg = withNext(msg, rollbackNext(s))
			r.failing(cv, st, "RollbackFailed", msg)
			st.ObservedRetry = latest.Spec.Retry // a failure: only a later spec.retry resumes it
			r.event(cv, "Warning", "UpgradeRollbackFailed", "Rollback", firstLine(msg))
		case s.Phase == record.Cancelled && why == stopPause:
			st.Phase = v1alpha1.PhasePaused
			setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "Paused", pausedMessage(st, ru.to))
			r.event(cv, "Normal", "UpgradePaused", "Pause", "paused at "+st.Plan.Progress.Summary)
		case s.Phase == record.Cancelled && deleted:
			st.Phase = v1alpha1.PhaseIdle
			msg := fmt.Sprintf("stopped at %s: the ClusterVersion is being deleted; the system runs %s", st.Plan.Progress.Summary, st.CurrentVersion)
			if ph := st.Plan.Partial; ph != nil { // paused partway through a hop before the deletion
				msg = fmt.Sprintf("stopped at %s: the ClusterVersion is being deleted; %s", st.Plan.Progress.Summary, between(st.CurrentVersion, ph))
			}
			endHistory(st, v1alpha1.HistoryPartial, msg, now)
			setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "Deleting", msg)
			r.event(cv, "Normal", "UpgradeStopped", "Delete", msg)
		case s.Phase == record.Cancelled && why == stopAbort && !setsBack(ru.from, string(latest.Spec.DesiredVersion)):
			st.Phase = v1alpha1.PhaseIdle
			msg := redirected(st, ru.p.target, latest.Spec.DesiredVersion)
			endHistory(st, v1alpha1.HistoryPartial, msg, now)
			setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "UpgradeRedirected", msg)
			r.event(cv, "Normal", "UpgradeRedirected", "Redirect", msg)
		case s.Phase == record.Cancelled && why == stopAbort:
			st.Phase = v1alpha1.PhaseIdle
			msg := fmt.Sprintf("aborted at %s: desiredVersion set back to %s; the system runs %s", st.Plan.Progress.Summary, ru.from, st.CurrentVersion)
			if ph := st.Plan.Partial; ph != nil { // paused partway through a hop before the abort
				msg = fmt.Sprintf("aborted at %s: desiredVersion set back to %s; %s", st.Plan.Progress.Summary, ru.from, between(st.CurrentVersion, ph))
			}
			endHistory(st, v1alpha1.HistoryPartial, msg, now)
			setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "UpgradeAborted", msg)
			r.event(cv, "Normal", "UpgradeAborted", "Abort", msg)
		default:
			st.Phase = v1alpha1.PhaseFailed
			msg := "the upgrade failed"
			if err != nil {
				msg = err.Error()
			}
			endHistory(st, v1alpha1.HistoryFailed, firstLine(msg), now)
			next := failedNext(ru.from)
			r.failing(cv, st, "UpgradeFailed", withNext(msg, next))
			// Recorded with the spec.retry of the object the failure is
			// written to: only a later change of spec.retry retries it.
			st.ObservedRetry = latest.Spec.Retry
			note := fmt.Sprintf("upgrade %s -> %s failed: %s", ru.from, ru.to, s.Code)
			if f := s.LastFailure; f != nil {
				note = fmt.Sprintf("upgrade %s -> %s failed: component %s on hop %d: %s", ru.from, ru.to, cmpStr(f.Component, f.Check), f.Hop+1, f.Code)
			}
			r.event(cv, "Warning", "UpgradeFailed", "Upgrade", note+"; "+next)
		}
	})
	if wrote {
		for _, tell := range events {
			tell()
		}
	}
}

// abortedLate starts the history message of an upgrade that completed
// although an abort was asked: it came during the last hop.
const abortedLate = "completed: the abort to "

// redirected says how an upgrade toward target ended that a new target,
// desired, stopped once the hop in progress had finished (st is the
// status that records the stop): where the system is, and that the
// upgrade to desired goes on from there (or that it is there). Whether
// that upgrade can start is decide's to say (a Failing condition when it
// cannot).
func redirected(st *v1alpha1.ClusterVersionStatus, target string, desired v1alpha1.Target) string {
	msg := fmt.Sprintf("redirected at %s: desiredVersion changed from %s to %s; the upgrade to %s stopped once the hop in progress finished, and ", st.Plan.Progress.Summary, target, desired, target)
	switch {
	case st.Plan.Partial != nil: // paused partway through a hop before the new target came
		return msg + "the upgrade to " + string(desired) + " goes on from there if its route finishes that hop: " + between(st.CurrentVersion, st.Plan.Partial)
	case samePosition(st.CurrentVersion, string(desired)):
		return msg + "the system runs " + st.CurrentVersion + ", the new target"
	}
	return msg + "the upgrade to " + string(desired) + " starts from " + st.CurrentVersion + ", which the system runs"
}

// redirectedLate is the history message of an upgrade to to that
// completed although a new target, desired, was set: it came during the
// last hop, which finishes as for an abort.
func redirectedLate(to string, desired v1alpha1.Target) string {
	return fmt.Sprintf("completed: desiredVersion changed to %s during the last hop, which finished; the upgrade to %s starts from %s", desired, desired, to)
}

// rollbackNext says what to do about a rollback that did not finish: a
// retry retries the component rollbacks that failed; one that stopped
// only at irreversible components changes nothing.
func rollbackNext(s *record.Status) string {
	var irreversible []string
	for i, h := range s.Hops {
		for _, c := range h.Components {
			switch {
			case c.Phase == record.RollbackFailed && c.Code == record.CodeRollbackFailed:
				return "increment spec.retry to retry the rollbacks that failed, or abandon the upgrade (spec.abandon)"
			case c.Phase == record.RollbackFailed:
				irreversible = append(irreversible, fmt.Sprintf("%s %s on hop %d", c.Name, c.ToVersion, i+1))
			}
		}
	}
	return "the rollback stopped at irreversible components, which stay at their target (" + strings.Join(irreversible, ", ") +
		"), so a retry changes nothing: bring the system to one release by hand, then abandon the upgrade (spec.abandon)"
}

// recordedFailure is the error of a run record that ended failed, for
// finish, when the Execute call that failed is gone.
func recordedFailure(s *record.Status) error {
	msg := s.Message
	if f := s.LastFailure; f != nil && f.Error != "" {
		msg = fmt.Sprintf("component %s on hop %d: %s: %s", cmpStr(f.Component, f.Check), f.Hop+1, f.Code, f.Error)
	}
	if msg == "" {
		msg = "hop " + fmt.Sprint(s.CurrentHop+1) + " did not succeed"
	}
	return fmt.Errorf("%w: %s (recorded in the run's record)", runner.ErrRunFailed, msg)
}

// withNext ends msg with next, keeping next whole when msg is truncated.
func withNext(msg, next string) string {
	const limit = 4096 - 2
	if room := limit - len(next); len(msg) > room {
		msg = msg[:max(room-3, 0)] + "..."
	}
	return msg + "; " + next
}

// failedNext says what the user may do about a Failed upgrade that
// started from from; the Failing condition and the Event end with it.
func failedNext(from string) string {
	return "increment spec.retry to retry the failed component(s), set desiredVersion back to " + from + " to abort, or abandon (spec.abandon)"
}

// mismatched records that the run's record, s, cannot resume with the
// plan made now (err matches runner.ErrPlanMismatch: the catalog, or the
// spec's route options, changed while the upgrade was stopped). The
// library's advice (start over with no previous status, a new state
// store) names what the operator's user has no hand on: the status says
// what the user can do instead, in the ClusterVersion's terms. A retry
// alone fails the same way. s, the record, is shown by the hops it was
// written for; the status's plan (the record's, as its runs wrote it) and
// current version stay.
func (ru *run) mismatched(ctx context.Context, s *record.Status, err error) {
	r, cv := ru.r, ru.p.cv
	was, now := ru.mismatch(s)
	msg := fmt.Sprintf("ClusterVersion %s: the record of the upgrade %s -> %s in its state store was written for %s, %s, so it cannot resume (%s)",
		ru.p.key, ru.from, ru.to, was, now, mismatchDetail(err))
	next := mismatchNext(ru.p.key.Namespace, ru.from, ru.p.target)
	at := metav1.Now()
	ru.updateFor(ctx, func(latest *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) {
		st.Phase = v1alpha1.PhaseFailed
		if st.Plan != nil {
			st.Plan.Retrying, st.Plan.Progress.Retrying = nil, 0
		}
		endHistory(st, v1alpha1.HistoryFailed, msg, at)
		r.failing(cv, st, "UpgradeFailed", withNext(msg, next))
		st.ObservedRetry = latest.Spec.Retry // only a later spec.retry tries again
	})
	r.event(cv, "Warning", "UpgradeFailed", "Upgrade", fmt.Sprintf("upgrade %s -> %s cannot resume: its record was written for %s, %s; %s", ru.from, ru.to, was, now, next))
}

// mismatch says which hops the record s was written for, and how the
// plan made now differs: its hops, or that it plans those hops
// otherwise (other components or versions).
func (ru *run) mismatch(s *record.Status) (was, now string) {
	var stored []string
	if s != nil {
		for _, h := range s.Hops {
			name := h.From + " -> " + h.To
			if h.Track != "" { // as summary names them
				name = h.Track + " " + name
			}
			stored = append(stored, name)
		}
	}
	planned := summary(ru.p.plan, nil, "").Hops
	if slices.Equal(stored, planned) {
		return hopList(stored), "which the catalog and the spec now plan otherwise"
	}
	return hopList(stored), "and the catalog and the spec now plan " + hopList(planned)
}

// hopList is "N hops (A -> B, B -> C)".
func hopList(hops []string) string {
	return fmt.Sprintf("%d %s (%s)", len(hops), plural(len(hops), "hop", "hops"), strings.Join(hops, ", "))
}

// mismatchDetail is what err (runner.ErrPlanMismatch) says differs,
// without the runner's advice, which starts "; resume with".
func mismatchDetail(err error) string {
	msg := firstLine(err.Error())
	if i := strings.LastIndex(msg, "; resume with "); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// mismatchNext says what to do about an upgrade from -> to of a
// ClusterVersion of namespace ns whose record was written for another
// plan: resume it as it was planned, or start it over as planned now
// (spec.abandon: the record is never resumed, and the next run starts
// with none). An abort ends the upgrade but not the record, which the
// same upgrade started again resumes (that is how a hop left partway is
// finished), so it is no way to start over.
func mismatchNext(ns, from, to string) string {
	return "to resume it, put the catalog objects of namespace " + ns + " and spec.channel, spec.allowPrereleases and spec.acceptRisks back as they were when the upgrade started, then increment spec.retry; " +
		"to start it over as the catalog and the spec plan it now, set spec.abandon (the record is marked Abandoned and never resumed), then clear it: the upgrade to " + to + " starts afresh from status.currentVersion (the components of a hop the record left partway run again); " +
		"setting desiredVersion back to " + from + " aborts the upgrade but keeps the record, which a later upgrade " + from + " -> " + to + " would resume, and be refused again"
}

// waitingMessage says what waits for approval and what to set.
func waitingMessage(ws []v1alpha1.WaitingStep) string {
	var waits, adds []string
	for _, w := range ws {
		wait := w.Step
		if w.Reason != "" {
			wait += " (" + w.Reason + ")"
		}
		waits = append(waits, wait)
		adds = append(adds, "{step: "+w.Step+", by: <who approves>}")
	}
	if len(ws) == 0 {
		return "waiting for approval"
	}
	return "waiting for approval of " + strings.Join(waits, ", ") + "; to approve, add " + strings.Join(adds, " or ") + " to spec.approvals"
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// abandon marks the stored run of the status's plan Abandoned while no run
// is in flight.
func (r *Reconciler) abandon(ctx context.Context, cv *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus, reason string) error {
	key := keyOf(cv)
	store, lock, err := r.stores(key)
	if err != nil {
		return fmt.Errorf("controller: abandoning ClusterVersion %s: opening its run's record: %w", key, err)
	}
	lease, err := lock.Acquire(ctx, r.holder, r.ttl)
	if err != nil {
		return fmt.Errorf("controller: abandoning ClusterVersion %s: %w", key, err)
	}
	defer func() { _ = lock.Release(context.WithoutCancel(ctx), lease) }()
	s, err := store.Load(ctx)
	if err != nil {
		return fmt.Errorf("controller: abandoning ClusterVersion %s: %w", key, err)
	}
	now := metav1.Now()
	if s != nil && recordOf(s, st.Plan.From, st.Plan.To) && s.Phase != record.Abandoned {
		if err := s.Abandon(reason, now.Time); err == nil {
			if err := store.Save(ctx, lease.Token, s); err != nil {
				return fmt.Errorf("controller: abandoning ClusterVersion %s: %w", key, err)
			}
		}
	}
	st.Phase = v1alpha1.PhaseAbandoned
	st.Plan.Phase = string(record.Abandoned)
	endHistory(st, v1alpha1.HistoryFailed, "abandoned: "+reason, now)
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, "Abandoned", "abandoned: "+reason)
	r.event(cv, "Warning", "UpgradeAbandoned", "Abandon", "abandoned: "+reason)
	return nil
}

func equalStatus(a, b *v1alpha1.ClusterVersionStatus) bool { return equality.Semantic.DeepEqual(a, b) }

func keyOf(cv *v1alpha1.ClusterVersion) types.NamespacedName {
	return types.NamespacedName{Namespace: cv.Namespace, Name: cv.Name}
}

// untilMessage says where a run stopped at its until step and what goes
// on from there: clearing or moving spec.until, or, for an until step of
// the operator's executor options, restarting the operator without it.
func untilMessage(cv *v1alpha1.ClusterVersion, s *record.Status, progress string) string {
	if cv.Spec.Until != "" {
		return fmt.Sprintf("stopped after %s as spec.until asks, at %s components: clear spec.until, or set it to a later step, to go on", cv.Spec.Until, progress)
	}
	msg, _, _ := strings.Cut(s.Message, ";")
	return fmt.Sprintf("%s, at %s components: the step is the operator's (runner.WithUntil in its executor options); restart the operator without it to go on", msg, progress)
}
