package controller

import (
	"slices"
	"strings"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/runner"
)

// The approvals of gated steps: which of spec.approvals approve a step
// the plan waits at, and which are stale or stray.

// gateReason is the reason of the catalog's gate on step
// (HOP[/COMPONENT[/PHASE]], runner.StepName) in p, or "".
func gateReason(p *runner.Plan, step string) string {
	parts := strings.SplitN(step, "/", 3)
	for _, h := range p.Hops {
		if runner.StepName(h, "", "") != parts[0] {
			continue
		}
		g := h.Rule.Gate
		if len(parts) > 1 {
			i, ok := h.Graph.Index(parts[1])
			if !ok || h.Graph.Node(i).To == nil {
				return ""
			}
			to := h.Graph.Node(i).To
			g = to.Gate
			if len(parts) > 2 {
				ph, ok := to.Phase(parts[2])
				if !ok {
					return ""
				}
				g = ph.Gate
			}
		}
		if g == nil {
			return ""
		}
		return g.Reason
	}
	return ""
}

// approvable reports whether spec.approvals names a step the plan waits
// at that was not approved yet.
func approvable(cv *v1alpha1.ClusterVersion, ps *v1alpha1.PlanSummary) bool {
	for _, a := range cv.Spec.Approvals {
		if approves(ps, a) {
			return true
		}
	}
	return false
}

// approves reports whether a approves a step of ps: the step waits, is
// not approved yet, and a was not there before it began waiting.
func approves(ps *v1alpha1.PlanSummary, a v1alpha1.ApprovalRequest) bool {
	waits := slices.ContainsFunc(ps.Waiting, func(w v1alpha1.WaitingStep) bool { return w.Step == a.Step })
	done := slices.ContainsFunc(ps.Approvals, func(d v1alpha1.Approval) bool { return d.Step == a.Step })
	return waits && !done && !stale(ps, a)
}

// stale reports whether ps lists a as there before its step began
// waiting (status.plan.waiting[].stale).
func stale(ps *v1alpha1.PlanSummary, a v1alpha1.ApprovalRequest) bool {
	return slices.ContainsFunc(ps.Waiting, func(w v1alpha1.WaitingStep) bool { return w.Step == a.Step && slices.Contains(w.Stale, a.By) })
}

// markStale records in ps, whose steps have just begun waiting, the
// entries of cv's spec.approvals already there for them: they approve
// nothing (approves).
func markStale(cv *v1alpha1.ClusterVersion, ps *v1alpha1.PlanSummary) {
	for i := range ps.Waiting {
		w := &ps.Waiting[i]
		w.Stale = nil
		for _, a := range cv.Spec.Approvals {
			if a.Step == w.Step {
				w.Stale = append(w.Stale, a.By)
			}
		}
	}
}

// dropGoneStale forgets the stale approvers whose entries cv's spec no
// longer has: an entry added again afterwards approves.
func dropGoneStale(cv *v1alpha1.ClusterVersion, ps *v1alpha1.PlanSummary) {
	for i := range ps.Waiting {
		w := &ps.Waiting[i]
		w.Stale = slices.DeleteFunc(w.Stale, func(by string) bool {
			return !slices.ContainsFunc(cv.Spec.Approvals, func(a v1alpha1.ApprovalRequest) bool { return a.Step == w.Step && a.By == by })
		})
		if len(w.Stale) == 0 {
			w.Stale = nil
		}
	}
}

// staleApprovals are the entries ps lists as stale, as "STEP (by BY)".
func staleApprovals(ps *v1alpha1.PlanSummary) []string {
	var out []string
	for _, w := range ps.Waiting {
		for _, by := range w.Stale {
			out = append(out, w.Step+" (by "+by+")")
		}
	}
	return out
}

// strayApprovals are the steps of cv's spec.approvals that neither wait
// nor were approved already, in spec order.
func strayApprovals(cv *v1alpha1.ClusterVersion, ps *v1alpha1.PlanSummary) []string {
	var out []string
	for _, a := range cv.Spec.Approvals {
		waits := slices.ContainsFunc(ps.Waiting, func(w v1alpha1.WaitingStep) bool { return w.Step == a.Step })
		done := slices.ContainsFunc(ps.Approvals, func(d v1alpha1.Approval) bool { return d.Step == a.Step })
		if !waits && !done {
			out = append(out, a.Step)
		}
	}
	return out
}
