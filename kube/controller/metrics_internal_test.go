package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
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

// histogramCount is how many observations h's series of label has.
func histogramCount(t *testing.T, h *prometheus.HistogramVec, label string) uint64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, h.WithLabelValues(label).(prometheus.Histogram).Write(&m))
	return m.GetHistogram().GetSampleCount()
}

// A hop's rollback is not a failed hop: the HopFailed event that ends it
// (Phase RolledBack or RollbackFailed) goes to outcome rolled_back or
// rollback_failed of hopdag_hop_duration_seconds, with the rollback's
// duration; component rollbacks count in
// hopdag_component_rollbacks_total by type and outcome.
func TestMetricsOfRollbacks(t *testing.T) {
	o := metricsObserver{types: map[int]map[string]string{0: {"web": "manifest", "db": "exec"}}}
	tests := []struct {
		event   runner.Event
		hop     string // the hop outcome observed, if any
		typ, rb string // the component rollback counted, if any
	}{
		{runner.Event{Type: runner.HopFailed, Hop: 0, Phase: record.Failed, Duration: time.Second}, "failed", "", ""},
		{runner.Event{Type: runner.HopFailed, Hop: 0, Phase: record.Cancelled}, "failed", "", ""},
		{runner.Event{Type: runner.HopFailed, Hop: 0, Phase: record.RolledBack, Duration: 3 * time.Second}, "rolled_back", "", ""},
		{runner.Event{Type: runner.HopFailed, Hop: 0, Phase: record.RollbackFailed}, "rollback_failed", "", ""},
		{runner.Event{Type: runner.ComponentRolledBack, Hop: 0, Component: "web"}, "", "manifest", "rolled_back"},
		{runner.Event{Type: runner.ComponentRollbackFailed, Hop: 0, Component: "db"}, "", "exec", "rollback_failed"},
	}
	for _, tt := range tests {
		outcomes := []string{"succeeded", "failed", "rolled_back", "rollback_failed"}
		before := map[string]uint64{}
		for _, k := range outcomes {
			before[k] = histogramCount(t, hopDuration, k)
		}
		var rb float64
		if tt.rb != "" {
			rb = testutil.ToFloat64(componentRollbacks.WithLabelValues(tt.typ, tt.rb))
		}
		o.Observe(tt.event)
		for _, k := range outcomes {
			want := before[k]
			if k == tt.hop {
				want++
			}
			assert.Equal(t, want, histogramCount(t, hopDuration, k), "%s %s: hop outcome %s", tt.event.Type, tt.event.Phase, k)
		}
		if tt.rb != "" {
			assert.Equal(t, rb+1, testutil.ToFloat64(componentRollbacks.WithLabelValues(tt.typ, tt.rb)), "%s %s", tt.event.Type, tt.event.Component)
		}
	}
}
