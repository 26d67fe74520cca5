package controller

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// statusBudget is the most bytes of JSON the reconciler writes as a
// ClusterVersion's status: well under the API server's limit for a whole
// object (about 1.5 MiB, etcd's request limit), which also holds the spec
// and the metadata. A status write the API server refuses would stop the
// upgrade it was to start.
const statusBudget = 512 << 10

// fitStatus keeps st within statusBudget: past it, the lists of updates
// (the only parts whose size follows the catalog's spellings: risk URLs
// and messages, versions) are left out, counted in their omitted
// fields, and the StatusTrimmed condition says so; within it, the
// condition is removed. Every status write goes through it, so that a
// status-size problem never stops an upgrade.
func fitStatus(cv *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) {
	size := statusSize(st)
	if size <= statusBudget {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStatusTrimmed)
		return
	}
	av, cu := len(st.AvailableUpdates), len(st.ConditionalUpdates)
	if av+cu == 0 {
		return // nothing of the catalog's to leave out: the rest is bounded
	}
	st.AvailableUpdatesOmitted += av
	st.ConditionalUpdatesOmitted += cu
	st.AvailableUpdates, st.ConditionalUpdates = nil, nil
	msg := fmt.Sprintf("status.availableUpdates (%d) and status.conditionalUpdates (%d) are left out: with them the status is %d bytes, more than the %d this reconciler writes (the API server refuses an object over about 1.5 MiB); "+
		"the catalog's risks or versions are spelled too long for a status (shorten the risks' urls and messages); list the targets with hopdag targets on the catalog",
		st.AvailableUpdatesOmitted, st.ConditionalUpdatesOmitted, size, statusBudget)
	setCondition(st, cv, v1alpha1.ConditionStatusTrimmed, metav1.ConditionTrue, "TooLarge", msg)
}

// statusSize is the length of st's JSON.
func statusSize(st *v1alpha1.ClusterVersionStatus) int {
	b, err := json.Marshal(st)
	if err != nil {
		return 0
	}
	return len(b)
}
