package controller

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// TestPhaseGauge checks what hopdag_upgrade_phase exposes from the one
// phase it keeps per ClusterVersion: a series per phase, 1 for the
// ClusterVersion's and 0 for the others, the latest phase set winning,
// and none once the ClusterVersion is forgotten.
func TestPhaseGauge(t *testing.T) {
	g := &phaseGauge{desc: prometheus.NewDesc("hopdag_upgrade_phase", "help", []string{"namespace", "name", "phase"}, nil)}
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	g.set(a, v1alpha1.PhaseUpgrading)
	g.set(b, v1alpha1.PhaseUpgrading)
	g.set(b, v1alpha1.PhaseFailed)
	g.set(a, v1alpha1.PhaseIdle)
	g.forget(types.NamespacedName{Namespace: "ns", Name: "never-set"})

	series := func(name string, one v1alpha1.Phase) string {
		var sb strings.Builder
		for _, p := range phases {
			v := "0"
			if p == one {
				v = "1"
			}
			sb.WriteString(`hopdag_upgrade_phase{name="` + name + `",namespace="ns",phase="` + string(p) + `"} ` + v + "\n")
		}
		return sb.String()
	}
	const head = "# HELP hopdag_upgrade_phase help\n# TYPE hopdag_upgrade_phase gauge\n"
	assert.NoError(t, testutil.CollectAndCompare(g, strings.NewReader(head+series("a", v1alpha1.PhaseIdle)+series("b", v1alpha1.PhaseFailed))))
	assert.Equal(t, 2*len(phases), testutil.CollectAndCount(g), "CollectAndCount(g): seven series per ClusterVersion")

	g.forget(a)
	assert.NoError(t, testutil.CollectAndCompare(g, strings.NewReader(head+series("b", v1alpha1.PhaseFailed))), "after forget(a)")
	g.forget(b)
	assert.Equal(t, 0, testutil.CollectAndCount(g), "CollectAndCount(g) after forgetting both")
}
