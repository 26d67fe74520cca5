package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// Finalizer is the finalizer the reconciler puts on every ClusterVersion
// before it starts anything for it. A ClusterVersion deleted goes only
// once its run has stopped, at the next safe point as an abort stops it
// (the hop in progress finishes, nothing after it starts), and its run's
// record and lock are removed (a store that is a Remover; another keeps
// them).
const Finalizer = "hopdag.io/run-record"

// Remover is a state.Store that can remove itself, its record and its
// lock, under the current lease's token (kube/store's Store is one). The
// reconciler removes a deleted ClusterVersion's store, so that a
// ClusterVersion created again under its name starts with no record, and
// stores do not pile up. A store that is not a Remover keeps the record:
// a ClusterVersion created again under the name resumes an upgrade of
// the same versions that its predecessor left unfinished (one that
// completed is never resumed by a new upgrade).
type Remover interface {
	Remove(ctx context.Context, token uint64) error
}

// addFinalizer puts Finalizer on cv (in place: cv is the object as
// written).
func (r *Reconciler) addFinalizer(ctx context.Context, cv *v1alpha1.ClusterVersion) error {
	if controllerutil.ContainsFinalizer(cv, Finalizer) {
		return nil
	}
	orig := cv.DeepCopy()
	controllerutil.AddFinalizer(cv, Finalizer)
	if err := r.client.Patch(ctx, cv, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("controller: adding the finalizer %s to ClusterVersion %s/%s (the operator needs patch on clusterversions): %w", Finalizer, cv.Namespace, cv.Name, err)
	}
	r.wrote(cv)
	return nil
}

// finalize acts on a ClusterVersion being deleted: a run in flight (ru)
// stops at its next safe point, and its end reconciles again; with none,
// the run's record and lock are removed and then the finalizer, and the
// ClusterVersion goes.
func (r *Reconciler) finalize(ctx context.Context, cv *v1alpha1.ClusterVersion, ru *run) error {
	if !controllerutil.ContainsFinalizer(cv, Finalizer) {
		return nil
	}
	if ru != nil {
		if ru.deleting() {
			note := fmt.Sprintf("ClusterVersion %s/%s is being deleted during the upgrade %s -> %s: the run stops at the next safe point, once the hop in progress finishes (as an abort does), and nothing after it starts; then its record and lock are removed and the ClusterVersion goes",
				cv.Namespace, cv.Name, ru.from, ru.to)
			if why := cv.Annotations[AllowDelete]; why != "" {
				note += " (" + AllowDelete + ": " + why + ")"
			}
			r.event(cv, "Normal", "ClusterVersionDeleted", "Delete", note)
		}
		return nil
	}
	if err := r.removeRecord(ctx, cv); err != nil {
		return err
	}
	if where, _, ok := midUpgrade(cv); ok {
		why := cv.Annotations[AllowDelete]
		if why == "" {
			why = "no reason given (" + AllowDelete + " not set: the webhook is not in use)"
		}
		r.event(cv, "Warning", "DeletedMidUpgrade", "Delete", fmt.Sprintf("ClusterVersion %s/%s deleted mid-upgrade (%s): %s; its status and its run's record, which said where the components are, are gone with it", cv.Namespace, cv.Name, why, where))
	}
	orig := cv.DeepCopy()
	controllerutil.RemoveFinalizer(cv, Finalizer)
	if err := r.client.Patch(ctx, cv, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("controller: removing the finalizer %s from ClusterVersion %s/%s: %w", Finalizer, cv.Namespace, cv.Name, err)
	}
	r.forget(keyOf(cv))
	forgetPhase(cv)
	return nil
}

// removeRecord removes the store of cv's runs, under its lock, when it is
// a Remover.
func (r *Reconciler) removeRecord(ctx context.Context, cv *v1alpha1.ClusterVersion) error {
	key := keyOf(cv)
	store, lock, err := r.stores(key)
	if err != nil {
		return fmt.Errorf("controller: removing the run's record of deleted ClusterVersion %s: opening it: %w", key, err)
	}
	rm, ok := store.(Remover)
	if !ok {
		return nil
	}
	lease, err := lock.Acquire(ctx, r.holder, r.ttl)
	if err != nil {
		return fmt.Errorf("controller: removing the run's record of deleted ClusterVersion %s: %w", key, err)
	}
	if err := rm.Remove(ctx, lease.Token); err != nil {
		_ = lock.Release(context.WithoutCancel(ctx), lease)
		return fmt.Errorf("controller: removing the run's record of deleted ClusterVersion %s: %w", key, err)
	}
	return nil
}

// deleting stops the run at its next safe point as an abort does (the
// hop in progress finishes), for a ClusterVersion being deleted. It
// reports whether the deletion is new to the run.
func (ru *run) deleting() bool {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	if ru.deleted {
		return false
	}
	ru.deleted = true
	if ru.why < stopAbort {
		ru.why, ru.stopHop = stopAbort, ru.hop
	}
	if ru.cancelNow() && ru.cancel != nil {
		ru.cancel()
	}
	return true
}
