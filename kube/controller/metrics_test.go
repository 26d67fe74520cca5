package controller_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// scrape reads /metrics as the manager serves it (controller-runtime's
// registry) from an HTTP server, and parses it.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// sample sums the values (counters, gauges) or the sample counts
// (histograms) of the family's series whose labels include want.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	sum := 0.0
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// TestMetrics scrapes /metrics during and after an upgrade of three hops
// (19 components, one of which fails once: the upgrade is Failed until
// spec.retry runs it again): the phase gauge follows status.phase, and
// the counters and histograms grew by what the runs did.
func TestMetrics(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	rn := slowRunner(t, 50*time.Millisecond)
	rn.Script("calico", runnertest.Script{Delay: 50 * time.Millisecond, FailFirst: 1})
	before := scrape(t)
	startOperator(t, opConfig{rn: rn, opts: nil})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	phase := func(fams map[string]*dto.MetricFamily, p v1alpha1.Phase) float64 {
		return sample(fams, "hopdag_upgrade_phase", map[string]string{"namespace": ns, "name": "cluster", "phase": string(p)})
	}
	require.Eventually(t, func() bool { return phase(scrape(t), v1alpha1.PhaseUpgrading) == 1 }, 30*time.Second, 50*time.Millisecond,
		"hopdag_upgrade_phase{phase=Upgrading} 1 during the upgrade")
	waitFor(t, c, key, 60*time.Second, "failed", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseFailed })
	// The gauge is set once the status write has returned, a moment
	// after watchers (this test) may already see the new status.
	settled := func(p v1alpha1.Phase) map[string]*dto.MetricFamily {
		t.Helper()
		var fams map[string]*dto.MetricFamily
		require.Eventually(t, func() bool { fams = scrape(t); return phase(fams, p) == 1 }, 5*time.Second, 20*time.Millisecond,
			"hopdag_upgrade_phase{phase=%s} 1 once status.phase is %s", p, p)
		return fams
	}
	failed := settled(v1alpha1.PhaseFailed)
	assert.Equal(t, 0.0, phase(failed, v1alpha1.PhaseUpgrading))
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Retry++ })
	waitFor(t, c, key, 90*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	after := settled(v1alpha1.PhaseIdle)
	assert.Equal(t, 0.0, phase(after, v1alpha1.PhaseUpgrading))
	delta := func(name string, labels map[string]string) float64 {
		return sample(after, name, labels) - sample(before, name, labels)
	}
	assert.Equal(t, 20.0, delta("hopdag_component_attempts_total", nil), "19 components, one retried")
	assert.Equal(t, 1.0, delta("hopdag_component_failures_total", map[string]string{"code": "COMPONENT_FAILED"}))
	assert.Equal(t, 1.0, delta("hopdag_component_duration_seconds", map[string]string{"outcome": "failed"}))
	assert.Equal(t, 1.0, delta("hopdag_hop_duration_seconds", map[string]string{"outcome": "failed"}))
	assert.Equal(t, 19.0, delta("hopdag_component_duration_seconds", map[string]string{"outcome": "succeeded"}))
	assert.Equal(t, 3.0, delta("hopdag_hop_duration_seconds", map[string]string{"outcome": "succeeded"}))
	assert.Positive(t, delta("hopdag_component_duration_seconds", map[string]string{"type": "manifest"}), "labelled by component type")
	assert.GreaterOrEqual(t, delta("hopdag_checkpoint_duration_seconds", nil), 19.0, "a checkpoint at least per component")
}
