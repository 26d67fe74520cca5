package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

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
	// waitingFor is status.plan.waitingFor (waits.text).
	waitingFor string
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
	ru.observeWaiting(ev)
	switch ev.Type {
	case runner.HopSucceeded:
		ru.failedSummary(ev)
		// The action names the hop: the events API merges Events of one
		// action and reason into a series, which would hide all but the
		// first hop.
		r.event(cv, "Normal", "HopCompleted", "Hop "+ev.HopName, fmt.Sprintf("hop %d of %d %s completed in %s", ev.Hop+1, len(ru.p.plan.Hops), ev.HopName, ev.Duration.Round(time.Millisecond)))
		if ev.Hop == len(ru.p.plan.Hops)-1 {
			// The run ends now (nothing runs after its last hop), and
			// its end's write (finish) says the hop completed.
			return
		}
	case runner.ComponentFailed:
		ru.componentFailed(ev)
	case runner.HopFailed:
		ru.failedSummary(ev)
	case runner.HopStarted:
		if ru.shown(ev.Hop) {
			return
		}
	default:
		return
	}
	select {
	case ru.flush <- struct{}{}:
	default:
	}
}

// shown reports whether the status already names hop as the one in
// progress, as the run's first write (announce) wrote what the reconcile
// that started it decided (status.plan.currentHop, phase Upgrading): the start of the run's
// first hop has nothing new to say at once, and the next interval's
// write carries its plan phase (Running). Only the first hop the run
// starts is looked at.
func (ru *run) shown(hop int) bool {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	first := ru.startHop
	ru.startHop = -1
	return hop == first
}

// writeLoop writes the latest transition at most once per interval, and
// at once after a hop event that observe flushes; it returns when done closes. Its writes are
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
		s.waitingFor = ru.waiting.text()
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
		st.Plan.WaitingFor = b.waitingFor
		st.CurrentVersion = b.reached
		setCondition(st, ru.p.cv, v1alpha1.ConditionProgressing, metav1.ConditionTrue, "Upgrading", progressing(st.Plan))
		if f := b.s.LastFailure; f != nil && f.Code != record.CodeRollbackRequested {
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

// update writes fn's change of the ClusterVersion's status. It starts
// from the object this run last wrote (its resourceVersion included), not
// a new read: a conflict (another writer in between: a reconcile, a spec
// change) reads it again and applies fn again, so that no writer puts
// back what another wrote since; a change that writes nothing on the
// object last written is looked at again on a new read, which may differ.
func (ru *run) update(ctx context.Context, fn func(*v1alpha1.ClusterVersionStatus)) {
	ru.updateFor(ctx, func(_ *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) { fn(st) })
}

// updateFor is update for a change that depends on the ClusterVersion as
// read (its spec): the status written goes with the spec fn saw (a spec
// changed since the object last written fails the write with a conflict).
// It reports whether it wrote fn's change (false: nothing changed, or the
// write failed).
func (ru *run) updateFor(ctx context.Context, fn func(*v1alpha1.ClusterVersion, *v1alpha1.ClusterVersionStatus)) bool {
	r := ru.r
	wrote := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cv := ru.written.take()
		for {
			cached := cv != nil
			if !cached {
				cv = &v1alpha1.ClusterVersion{}
				if err := r.reader.Get(ctx, ru.p.key, cv); err != nil {
					return err
				}
			}
			st := cv.Status.DeepCopy()
			fn(cv, st)
			fitStatus(cv, st)
			if !equalStatus(&cv.Status, st) {
				cv.Status = *st
				break
			}
			if !cached {
				return nil
			}
			cv = nil // nothing to write on the object last written: read
		}
		if err := r.client.Status().Update(ctx, cv); err != nil {
			return err
		}
		ru.written.keep(cv)
		r.wrote(cv)
		notePhase(cv, &cv.Status)
		r.writes.Add(1)
		wrote = true
		return nil
	})
	if err != nil {
		r.logger.Warn("controller: status write", "clusterversion", ru.p.key, "error", err)
	}
	return wrote
}

// lastWritten is the ClusterVersion as a run last wrote it, which its
// next status write starts from.
type lastWritten struct {
	mu sync.Mutex
	cv *v1alpha1.ClusterVersion
}

// take returns the object last written (nil: none) for one write
// attempt, and forgets it: a conflict's retry, and a write on another
// goroutine meanwhile, read (take returns nil until the next keep).
func (w *lastWritten) take() *v1alpha1.ClusterVersion {
	w.mu.Lock()
	defer w.mu.Unlock()
	cv := w.cv
	w.cv = nil
	return cv
}

// shows reports whether there is an object last written and it
// satisfies ok (which must not keep it or change it).
func (w *lastWritten) shows(ok func(*v1alpha1.ClusterVersion) bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cv != nil && ok(w.cv)
}

// keep records cv, just written.
func (w *lastWritten) keep(cv *v1alpha1.ClusterVersion) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cv = cv.DeepCopy()
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
// store failure shown before; when the object the run last wrote (for
// a run that starts: its first write, announce) shows none, there is
// none to clear, and nothing is read.
func (ru *run) storeError(ctx context.Context, doing string, err error) {
	r, cv := ru.r, ru.p.cv
	if err == nil {
		if ru.written.shows(func(cv *v1alpha1.ClusterVersion) bool { return !storeFailing(&cv.Status) }) {
			return
		}
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

func equalStatus(a, b *v1alpha1.ClusterVersionStatus) bool { return equality.Semantic.DeepEqual(a, b) }
