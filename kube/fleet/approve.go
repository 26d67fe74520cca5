package fleet

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/rollout"
)

// recordApprovals records in st each gated wave's approval once the
// wave has started (a member of it left Pending, or starts now): the
// wave, who approved it (spec.approvals' by) and when, with a
// WaveApproved Event. It is derived from the fleet, so that it is
// recorded whether the status write of the reconcile that started the
// wave went through or not.
func (r *Reconciler) recordApprovals(ur *v1alpha1.UpgradeRollout, st *v1alpha1.UpgradeRolloutStatus, d rollout.Decision, now time.Time) {
	for i, w := range d.Waves {
		if !slices.Contains(ur.Spec.Gates, w.Name) || slices.ContainsFunc(st.Approvals, func(a v1alpha1.RecordedWaveApproval) bool { return a.Wave == w.Name }) {
			continue
		}
		started := slices.ContainsFunc(d.Members, func(m rollout.MemberStatus) bool {
			return m.Wave == i && (m.State != rollout.Pending || slices.Contains(d.Start, m.Key))
		})
		at := slices.IndexFunc(ur.Spec.Approvals, func(a v1alpha1.WaveApproval) bool { return a.Wave == w.Name })
		if !started || at < 0 {
			continue
		}
		by := ur.Spec.Approvals[at].By
		st.Approvals = append(st.Approvals, v1alpha1.RecordedWaveApproval{Wave: w.Name, By: by, At: metav1.NewTime(now)})
		r.eventf(ur, "", "Normal", "WaveApproved", "Wave "+w.Name, "wave %s approved by %s: it starts", w.Name, by)
	}
}
