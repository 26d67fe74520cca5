package controller

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/record"
)

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
