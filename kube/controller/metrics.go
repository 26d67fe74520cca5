package controller

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// The reconciler's metrics, in controller-runtime's registry: the
// manager serves them on /metrics (ctrl.Options.Metrics) beside the
// controller's own (reconcile counts and durations, work queue depth).
var (
	upgradePhase = &phaseGauge{desc: prometheus.NewDesc("hopdag_upgrade_phase",
		"1 for the phase each ClusterVersion is in (status.phase), 0 for the other phases.",
		[]string{"namespace", "name", "phase"}, nil)}
	hopDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "hopdag_hop_duration_seconds",
		Help:    "How long each hop took, by outcome (succeeded, failed), in the run that ended it; and how long each hop's rollback took (rolled_back, rollback_failed).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14), // 1 s to 2.3 h
	}, []string{"outcome"})
	componentDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "hopdag_component_duration_seconds",
		Help:    "How long each component took, retries included, by its type (manifest, helm, exec, inline, ...) and outcome (succeeded, failed, skipped, cancelled).",
		Buckets: prometheus.ExponentialBuckets(0.1, 2, 16), // 100 ms to 55 min
	}, []string{"type", "outcome"})
	componentAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hopdag_component_attempts_total",
		Help: "Attempts started to upgrade a component (the first and every retry), by component type.",
	}, []string{"type"})
	componentFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hopdag_component_failures_total",
		Help: "Failed attempts to upgrade a component (retried or final), by code of runner's code catalog (COMPONENT_FAILED, COMPONENT_TIMEOUT, ...).",
	}, []string{"code"})
	componentRollbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hopdag_component_rollbacks_total",
		Help: "Components rolled back, by component type and outcome (rolled_back, rollback_failed), whether a failure policy or a request (spec.rollback) asked.",
	}, []string{"type", "outcome"})
	checkpointDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "hopdag_checkpoint_duration_seconds",
		Help:    "How long each durable checkpoint of a run's record took (a write to its state store).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15), // 1 ms to 16 s
	})
)

func init() {
	metrics.Registry.MustRegister(upgradePhase, hopDuration, componentDuration, componentAttempts, componentFailures, componentRollbacks, checkpointDuration)
}

// phases are the values of status.phase, each a series of
// hopdag_upgrade_phase.
var phases = []v1alpha1.Phase{v1alpha1.PhaseIdle, v1alpha1.PhaseUpgrading, v1alpha1.PhasePaused, v1alpha1.PhaseWaitingForApproval,
	v1alpha1.PhaseFailed, v1alpha1.PhaseRolledBack, v1alpha1.PhaseAbandoned}

// notePhase sets hopdag_upgrade_phase for cv as its status st says.
func notePhase(cv *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) {
	if st.Phase == "" {
		return
	}
	upgradePhase.set(types.NamespacedName{Namespace: cv.Namespace, Name: cv.Name}, st.Phase)
}

// forgetPhase removes cv's series of hopdag_upgrade_phase (it is gone).
func forgetPhase(cv *v1alpha1.ClusterVersion) {
	upgradePhase.forget(types.NamespacedName{Namespace: cv.Namespace, Name: cv.Name})
}

// phaseGauge is hopdag_upgrade_phase: the series of each ClusterVersion,
// one per phase (1 for its phase, 0 for the others), made when the
// metrics are gathered from the one phase it keeps per ClusterVersion.
// (A GaugeVec would keep the seven series of each, some 2.7 KB per
// ClusterVersion: 27 MB of a fleet of 10,000.) It is safe for
// concurrent use.
type phaseGauge struct {
	desc *prometheus.Desc

	mu sync.Mutex
	m  map[types.NamespacedName]v1alpha1.Phase
}

func (g *phaseGauge) set(cv types.NamespacedName, p v1alpha1.Phase) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[types.NamespacedName]v1alpha1.Phase{}
	}
	g.m[cv] = p
}

func (g *phaseGauge) forget(cv types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.m, cv)
}

// Describe is prometheus.Collector's.
func (g *phaseGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect is prometheus.Collector's: the series of a copy of the phases
// (the lock is not held while ch takes them).
func (g *phaseGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	m := maps.Clone(g.m)
	g.mu.Unlock()
	for cv, phase := range m {
		for _, p := range phases {
			v := 0.0
			if p == phase {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, cv.Namespace, cv.Name, string(p))
		}
	}
}

// metricsObserver counts a run's events into the metrics; types names
// each component's type (release.ComponentVersion.Type, "inline" when
// empty) by its name on each hop.
type metricsObserver struct {
	types map[int]map[string]string
}

// newMetricsObserver is the observer of a run of p.
func newMetricsObserver(p *runner.Plan) metricsObserver {
	types := map[int]map[string]string{}
	for i, h := range p.Hops {
		m := map[string]string{}
		for j := range h.Graph.Len() {
			n := h.Graph.Node(j)
			t := "inline"
			if n.To != nil && n.To.Type != "" {
				t = n.To.Type
			}
			m[n.Name] = t
		}
		types[i] = m
	}
	return metricsObserver{types: types}
}

func (o metricsObserver) typeOf(e runner.Event) string {
	if t := o.types[e.Hop][e.Component]; t != "" {
		return t
	}
	return "unknown"
}

// Observe implements runner.Observer.
func (o metricsObserver) Observe(e runner.Event) {
	switch e.Type {
	case runner.ComponentStarted:
		componentAttempts.WithLabelValues(o.typeOf(e)).Inc()
	case runner.ComponentRetrying:
		componentFailures.WithLabelValues(string(e.Code)).Inc()
		componentAttempts.WithLabelValues(o.typeOf(e)).Inc()
	case runner.ComponentFailed:
		componentFailures.WithLabelValues(string(e.Code)).Inc()
		componentDuration.WithLabelValues(o.typeOf(e), "failed").Observe(e.Duration.Seconds())
	case runner.ComponentSucceeded:
		componentDuration.WithLabelValues(o.typeOf(e), "succeeded").Observe(e.Duration.Seconds())
	case runner.ComponentSkipped:
		componentDuration.WithLabelValues(o.typeOf(e), "skipped").Observe(e.Duration.Seconds())
	case runner.ComponentCancelled:
		componentDuration.WithLabelValues(o.typeOf(e), "cancelled").Observe(e.Duration.Seconds())
	case runner.ComponentRolledBack:
		componentRollbacks.WithLabelValues(o.typeOf(e), "rolled_back").Inc()
	case runner.ComponentRollbackFailed:
		componentRollbacks.WithLabelValues(o.typeOf(e), "rollback_failed").Inc()
	case runner.HopSucceeded:
		hopDuration.WithLabelValues("succeeded").Observe(e.Duration.Seconds())
	case runner.HopFailed:
		hopDuration.WithLabelValues(hopOutcome(e.Phase)).Observe(e.Duration.Seconds())
	}
}

// hopOutcome is the outcome label of a hop that ended in phase p: a
// hop's rollback ends RolledBack or RollbackFailed (runner.HopFailed of
// that phase), and is not counted as a failure of the hop's upgrade.
func hopOutcome(p record.Phase) string {
	switch p {
	case record.RolledBack:
		return "rolled_back"
	case record.RollbackFailed:
		return "rollback_failed"
	}
	return "failed"
}

// timedCheckpointer times each checkpoint of cp into
// hopdag_checkpoint_duration_seconds.
type timedCheckpointer struct{ cp runner.Checkpointer }

func (t timedCheckpointer) Checkpoint(ctx context.Context, s *record.Status) error {
	defer observeSince(time.Now())
	return t.cp.Checkpoint(ctx, s)
}

func (t timedCheckpointer) CheckpointChanges(ctx context.Context, s *record.Status, changed []record.Ref) error {
	cc, ok := t.cp.(runner.ChangeCheckpointer)
	if !ok {
		return t.Checkpoint(ctx, s)
	}
	defer observeSince(time.Now())
	return cc.CheckpointChanges(ctx, s, changed)
}

func observeSince(start time.Time) { checkpointDuration.Observe(time.Since(start).Seconds()) }
