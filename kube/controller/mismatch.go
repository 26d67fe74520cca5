package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/internal/english"
	"github.com/hopdag/hopdag/record"
)

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
	return fmt.Sprintf("%s (%s)", english.Count(len(hops), "hop"), strings.Join(hops, ", "))
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
