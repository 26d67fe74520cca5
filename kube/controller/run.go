package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/internal/english"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// stop says why a run stops at its next safe point.
type stop int

// The stops, weakest first: a later reconcile may ask a stronger one,
// never take one back.
const (
	noStop stop = iota
	// stopWindow: the maintenance window closed; the hop in progress
	// finishes, the next waits for the next window.
	stopWindow
	stopPause
	stopAbort
	// stopRollback: spec.rollback asks to roll the upgrade back; the run
	// stops at once, as a pause stops it, and the rollback runs next.
	stopRollback
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
	// windowHop is the furthest hop a component entered while a
	// maintenance window was open (-1: none yet): its other components
	// go on after the window closes.
	windowHop int
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
	// waiting are the running components' latest waits (observeWaiting).
	waiting waits
	// failEvents bounds the ComponentFailed Events as retryEvents does
	// ComponentRetrying's; failHeld are the components of the hop in
	// progress whose Event it held back (componentFailed).
	failEvents eventBudget
	failHeld   []string
	// written is the ClusterVersion as the run last wrote its status
	// (update).
	written lastWritten
	// announced is closed once the run's first status write (announce)
	// is done, whether it went through or not.
	announced chan struct{}
	// startHop is the hop the status named in progress when the run
	// started (-1: none, or the run's first hop has started; see
	// shown).
	startHop int
}

// control reads the spec at a reconcile while the run goes.
func (ru *run) control(spec *v1alpha1.ClusterVersionSpec) {
	why, reason := noStop, ""
	switch {
	case spec.Abandon != nil:
		why, reason = stopAbandon, spec.Abandon.Reason
	case ru.p.revert:
		// Rolling back: only a pause (below) or an abandon stops it.
		if spec.Paused {
			why = stopPause
		}
	case spec.Rollback != nil:
		why = stopRollback
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
	case (ru.why == stopAbort || ru.why == stopWindow) && !ru.paused:
		return hop > ru.stopHop
	}
	return true
}

// cancelNow reports whether the run is at its safe point (ru.mu held):
// a stop is asked and no component is inside the inner runner; an abort
// (and the window's end) also waits until a component of a later hop is
// at the gate, so that the hop it came during finishes (its last
// components, its post-checks) rather than stopping partway.
func (ru *run) cancelNow() bool {
	if ru.why == noStop || ru.running > 0 {
		return false
	}
	return ru.why != stopAbort && ru.why != stopWindow || ru.paused || ru.blocked > 0
}

// Run is the gate in front of the embedder's runner: once a stop is
// asked, a component that has not entered the inner runner waits for the
// run's end (and is Cancelled, to run again on resume); the run is
// cancelled when the last running component returns (see cancelNow).
// That is the safe point: nothing is interrupted inside a runner.
func (ru *run) Run(ctx context.Context, t runner.Task) error {
	ru.inWindow(t.HopIndex)
	return ru.through(ctx, t.HopIndex, func() error { return ru.p.runner.Run(ctx, t) })
}

// inWindow lets a component of hop start only while a maintenance window
// is open, or when its hop started inside one: the first component of a
// later hop that comes once the windows have closed stops the run there
// (stopWindow), at the safe point after the hop in progress. A rollback
// is not held: it restores what the run changed.
func (ru *run) inWindow(hop int) {
	if ru.p.window.Always() {
		return
	}
	ru.mu.Lock()
	defer ru.mu.Unlock()
	if hop <= ru.windowHop {
		return
	}
	if open, _ := ru.p.window.Open(ru.r.now()); open {
		ru.windowHop = hop
		return
	}
	if ru.why < stopWindow {
		ru.why, ru.stopHop = stopWindow, ru.windowHop
	}
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

// start launches p in the background, and reports whether it did (not
// once the runs' context has ended, or before it is set). read is the
// ClusterVersion as the reconcile that decided p read it, and st the
// status it decided: the run writes st first, even when it changes
// nothing (the API server checks read's resourceVersion), and starts
// only once that write went through; otherwise (a conflict: another
// writer in between) the ClusterVersion is reconciled again and decided
// from the object as it is then. The run's later writes start from the
// object that write returned, without a read (update).
func (r *Reconciler) start(p *plan, read *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) bool {
	ru := &run{r: r, p: p, from: routeFrom(p.plan.Route).String(), to: routeTo(p.plan.Route).String(), flush: make(chan struct{}, 1), windowHop: -1,
		retryEvents: eventBudget{n: retryEventsPerWindow, window: retryEventWindow},
		failEvents:  eventBudget{n: retryEventsPerWindow, window: retryEventWindow}}
	ru.control(&p.cv.Spec)
	ru.startHop = -1
	ru.announced = make(chan struct{})
	r.mu.Lock()
	base := r.base
	if r.runs[p.key] != nil || base == nil || base.Err() != nil {
		r.mu.Unlock()
		return false
	}
	r.runs[p.key] = ru
	r.runsWG.Add(1)
	r.mu.Unlock()
	go ru.execute(base, read, st)
	return true
}

// announce writes the status the reconcile decided (see start) and
// records the upgrade's start; it reports whether the run may go on, and
// when not, how long to wait before the ClusterVersion is reconciled
// again (none after a conflict).
func (ru *run) announce(ctx context.Context, read *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) (bool, time.Duration) {
	r, p := ru.r, ru.p
	fitStatus(read, st)
	if err := r.putStatus(ctx, read, st); err != nil {
		if apierrors.IsConflict(err) {
			// Another writer came in between: the ordinary race,
			// decided again at once; a warning only when it persists.
			r.logger.Log(ctx, r.conflictLevel(p.key), "controller: the ClusterVersion changed before the upgrade started; deciding again", "clusterversion", p.key, "error", err)
			return false, 0
		}
		r.logger.Warn("controller: the status write that starts an upgrade failed; deciding again", "clusterversion", p.key, "error", err)
		return false, r.backoff.When(p.key)
	}
	r.backoff.Forget(p.key)
	ru.written.keep(read)
	ru.mu.Lock()
	if ps := read.Status.Plan; ps != nil && read.Status.Phase == v1alpha1.PhaseUpgrading {
		ru.startHop = ps.CurrentHop
	}
	ru.mu.Unlock()
	if p.fresh {
		r.event(p.cv, "Normal", "UpgradeStarted", "Upgrade", fmt.Sprintf("upgrading %s -> %s in %s", ru.from, ru.to, english.Count(len(p.plan.Hops), "hop")))
	}
	return true, 0
}

func (ru *run) execute(ctx context.Context, read *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) {
	r, key := ru.r, ru.p.key
	if ok, after := ru.announce(ctx, read, st); !ok {
		// Not started: gone from the runs before the reconciles waiting
		// on announced look, and reconciled again after the backoff.
		r.mu.Lock()
		delete(r.runs, key)
		r.mu.Unlock()
		close(ru.announced)
		r.runsWG.Done()
		go func() {
			select {
			case <-time.After(after):
			case <-ctx.Done():
				return
			}
			select {
			case r.wake <- event.GenericEvent{Object: ru.p.cv}:
			case <-ctx.Done():
			}
		}()
		return
	}
	close(ru.announced)
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
	if ru.p.revert {
		var done bool
		if prev, done = ru.revert(kctx, s); done {
			return prev, nil
		}
	}
	if prev != nil && (!recordOf(prev, ru.from, ru.to) || prev.Phase == record.Abandoned || prev.Phase == record.RolledBack || ru.p.fresh && prev.Phase == record.Succeeded) {
		// Another upgrade's record, or one that ended for good (a new
		// upgrade finds one that completed only when its ClusterVersion
		// was deleted and created again and the store kept the record):
		// this one starts afresh.
		prev = nil
	}
	if prev != nil && !ru.p.fresh && !ru.p.retry && !ru.p.revert && (prev.Phase == record.Failed || prev.Phase == record.RollbackFailed) {
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

func keyOf(cv *v1alpha1.ClusterVersion) types.NamespacedName {
	return types.NamespacedName{Namespace: cv.Namespace, Name: cv.Name}
}
