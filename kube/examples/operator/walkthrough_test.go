package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/apply"
	"github.com/hopdag/hopdag/kube/catalog"
	"github.com/hopdag/hopdag/kube/internal/procstat"
	"github.com/hopdag/hopdag/release"
)

// sampleCatalog is the catalog of docs/operator.md's walk-through.
const sampleCatalog = "../../../testdata/catalog"

// requestCounter is a rest.Config transport wrapper that counts the
// requests the operator sends, by verb.
type requestCounter struct {
	mu    sync.Mutex
	verbs map[string]int
	on    atomic.Bool
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if c.on.Load() {
			verb := req.Method
			if req.URL.Query().Get("watch") == "true" {
				verb = "WATCH"
			}
			c.mu.Lock()
			c.verbs[verb]++
			c.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (c *requestCounter) counts() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, n := range c.verbs {
		total += n
	}
	out := make(map[string]int, len(c.verbs))
	for k, v := range c.verbs {
		out[k] = v
	}
	return out, total
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// peakMemory samples the Go heap and runtime memory of this process (the
// in-process operator's, with the test's own) every 50ms, keeping the
// peak, until stop.
type peakMemory struct {
	mu   sync.Mutex
	peak uint64
	stop chan struct{}
	done chan struct{}
}

func watchMemory() *peakMemory {
	p := &peakMemory{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
		for {
			metrics.Read(s)
			used := s[0].Value.Uint64() - s[1].Value.Uint64()
			p.mu.Lock()
			p.peak = max(p.peak, used)
			p.mu.Unlock()
			select {
			case <-p.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return p
}

func (p *peakMemory) end() uint64 {
	close(p.stop)
	<-p.done
	return p.peak
}

// TestReadmeWalkthrough is docs/operator.md's "Use it in an operator"
// walk-through on a control plane whose workloads really roll out: the
// CRDs, the namespaces the walk-through creates (demo, and cluster-system, which
// the sample catalog's provider needs), the sample catalog in demo, a
// ClusterVersion at v26.06-rc.2, and the operator (in this process, as
// main runs it against a cluster: kube/apply's server-side apply, the
// run's record in kube/store). desiredVersion is then patched to v26.09:
// the upgrade completes, and every DaemonSet and Deployment of the
// catalog has rolled out its last version on the kwok nodes (a DaemonSet's
// pods on each of the 5). It logs the time from the patch to the
// UpgradeCompleted Event, the operator's API requests per component
// transition (counted by its rest.Config's transport), and the peak
// memory of the process.
func TestReadmeWalkthrough(t *testing.T) {
	cp.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	// The walk-through's steps.
	readme, err := os.ReadFile("../../../docs/operator.md")
	require.NoError(t, err)
	for _, step := range []string{"kubectl apply -k kube/config/crd", "kubectl create namespace demo", "kubectl create namespace cluster-system",
		"kubectl apply -n demo -f testdata/catalog -f testdata/catalog/components", "installedVersion: v26.06-rc.2", "desiredVersion: v26.09"} {
		require.Contains(t, string(readme), step, "docs/operator.md walk-through's step")
	}
	admin := cp.Config()
	_, err = envtest.InstallCRDs(admin, envtest.CRDInstallOptions{Paths: []string{configDir("crd")}, ErrorIfPathMissing: true})
	require.NoError(t, err, "kubectl apply -k kube/config/crd")
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c, err := client.New(admin, client.Options{Scheme: scheme})
	require.NoError(t, err)
	const ns = "demo"
	for _, name := range []string{ns, "cluster-system"} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}), "kubectl create namespace %s", name)
	}
	objs, err := catalog.ReadDir(sampleCatalog)
	require.NoError(t, err)
	var all []client.Object
	for i := range objs.Releases {
		all = append(all, &objs.Releases[i])
	}
	for i := range objs.Components {
		all = append(all, &objs.Components[i])
	}
	for i := range objs.UpgradePaths {
		all = append(all, &objs.UpgradePaths[i])
	}
	for _, o := range all {
		o.SetNamespace(ns)
		require.NoError(t, c.Create(ctx, o), "kubectl apply -n demo -f testdata/catalog -f testdata/catalog/components")
	}

	// The operator, as run wires it against a cluster, its requests
	// counted.
	mem := watchMemory()
	counter := &requestCounter{verbs: map[string]int{}}
	cfg := cp.Config()
	cfg.Wrap(counter.wrap)
	cat, err := release.LoadDir(sampleCatalog)
	require.NoError(t, err)
	// Another test of this process (TestDemo) may have registered the
	// controllers' names: skip the check that they are unique.
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip}})
	require.NoError(t, err)
	applier, err := apply.New(cfg, apply.WithFieldManager("hopdag-operator"))
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	applierFor := func(*rest.Config) (components.Applier, error) { return applier, nil }
	require.NoError(t, wire(mgr, applierFor, os.DirFS(sampleCatalog), handlers(cat), checks(cat), log, false))
	mctx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(mctx) }()
	defer func() {
		stop()
		assert.NoError(t, <-errc, "the manager's end")
	}()

	cv := &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster"},
		Spec: v1alpha1.ClusterVersionSpec{InstalledVersion: "v26.06-rc.2", DesiredVersion: "v26.06-rc.2"}}
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	require.Eventually(t, func() bool {
		return c.Get(ctx, key, cv) == nil && cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.06-rc.2"
	}, time.Minute, 100*time.Millisecond, "the ClusterVersion at v26.06-rc.2, Idle")

	// kubectl patch clusterversion cluster --type merge -p '{"spec":{"desiredVersion":"v26.09"}}'
	counter.on.Store(true)
	patched := time.Now()
	require.NoError(t, c.Patch(ctx, cv, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"desiredVersion":"v26.09"}}`))))
	cs, err := kubernetes.NewForConfig(admin)
	require.NoError(t, err)
	var completed time.Time
	lastSummary := ""
	// The Progressing messages seen while a hop waited for a workload
	// (status.plan.waitingFor set), in order, without repeats.
	var waited []string
	for completed.IsZero() {
		select {
		case <-ctx.Done():
			require.NoError(t, c.Get(context.Background(), key, cv))
			t.Fatalf("no UpgradeCompleted after %s: phase %s, current %s, conditions %+v", time.Since(patched).Round(time.Second), cv.Status.Phase, cv.Status.CurrentVersion, cv.Status.Conditions)
		case <-time.After(100 * time.Millisecond):
		}
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=cluster,reason=UpgradeCompleted"})
		require.NoError(t, err)
		if len(evs.Items) > 0 {
			completed = time.Now()
		}
		if err := c.Get(ctx, key, cv); err == nil && cv.Status.Plan != nil && cv.Status.Plan.Progress.Summary != lastSummary {
			lastSummary = cv.Status.Plan.Progress.Summary
			t.Logf("%6.1fs %s %s hop %s", time.Since(patched).Seconds(), cv.Status.Phase, lastSummary, cv.Status.Plan.Hop)
		}
		if cv.Status.Plan != nil && cv.Status.Plan.WaitingFor != "" {
			p := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionProgressing)
			require.NotNil(t, p, "a Progressing condition while status.plan.waitingFor is %q", cv.Status.Plan.WaitingFor)
			assert.True(t, strings.HasSuffix(p.Message, "; "+cv.Status.Plan.WaitingFor), "the Progressing message %q ends with status.plan.waitingFor %q", p.Message, cv.Status.Plan.WaitingFor)
			if len(waited) == 0 || waited[len(waited)-1] != p.Message {
				waited = append(waited, p.Message)
				t.Logf("%6.1fs Progressing: %s", time.Since(patched).Seconds(), p.Message)
			}
		}
	}
	counter.on.Store(false)
	took := completed.Sub(patched)
	peak := mem.end()

	require.NoError(t, c.Get(ctx, key, cv))
	assert.Equal(t, v1alpha1.PhaseIdle, cv.Status.Phase, "phase")
	assert.Equal(t, "v26.09", cv.Status.CurrentVersion, "current version")
	require.NotNil(t, cv.Status.Plan, "the plan in brief")
	components := cv.Status.Plan.Progress.Total
	assert.Equal(t, components, cv.Status.Plan.Progress.Done, "components done")
	verbs, total := counter.counts()
	// Each component of the run goes Pending -> Running -> Succeeded.
	transitions := 2 * components
	t.Logf("desiredVersion patched -> UpgradeCompleted: %s (%d hops, %d components)", took.Round(time.Millisecond), len(cv.Status.Plan.Hops), components)
	t.Logf("operator API requests during the upgrade: %d (%v): %.1f a component, %.1f a component transition (%d transitions)",
		total, verbs, float64(total)/float64(components), float64(total)/float64(transitions), transitions)
	t.Logf("peak memory of the test process, which runs the operator: Go runtime (runtime/metrics /memory/classes/total:bytes less heap released, sampled every 50ms) %.1f MiB; VmHWM (/proc/self/status, peak RSS) %.1f MiB",
		float64(peak)/(1<<20), float64(procstat.PeakRSS())/(1<<20))

	// While the hops waited, the status said for what: a DaemonSet or a
	// Deployment of the catalog and kstatus's reason (a count such as "3 of
	// 5 updated", or the generation its controller has not observed yet:
	// which one a 2-second status write catches depends on timing; the
	// counts are pinned by kube/apply/internal/rollout's
	// TestDaemonSetWaiting); once done, nothing.
	waitedFor := regexp.MustCompile(`waiting for (DaemonSet|Deployment) (kube-system|cluster-system)/[a-z-]+: `)
	assert.True(t, slices.ContainsFunc(waited, waitedFor.MatchString), "no Progressing message named a DaemonSet or a Deployment while a hop waited: %q", waited)
	assert.Empty(t, cv.Status.Plan.WaitingFor, "status.plan.waitingFor once the upgrade completed")

	checkRolledOut(ctx, t, cs)
}

// checkRolledOut checks that every DaemonSet and Deployment of the sample
// catalog (in kube-system and cluster-system) has rolled out: its status
// observed its last generation, every replica is updated and available,
// and its live pods, all Ready, run its template's image (a DaemonSet's,
// one on each node).
func checkRolledOut(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	var seen []string
	for _, ns := range []string{"kube-system", "cluster-system"} {
		dss, err := cs.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, ds := range dss.Items {
			what := "DaemonSet " + ns + "/" + ds.Name
			seen = append(seen, what)
			st := ds.Status
			assert.Equal(t, ds.Generation, st.ObservedGeneration, "%s observedGeneration", what)
			assert.Equal(t, []int32{walkNodes, walkNodes, walkNodes}, []int32{st.DesiredNumberScheduled, st.UpdatedNumberScheduled, st.NumberAvailable}, "%s desired, updated, available", what)
			revs, err := cs.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(ds.Spec.Selector)})
			require.NoError(t, err)
			seen[len(seen)-1] += fmt.Sprintf(" (%d revisions)", len(revs.Items))
			nodes := checkPods(ctx, t, cs, what, ns, ds.Spec.Selector, ds.Spec.Template.Spec.Containers[0].Image)
			slices.Sort(nodes)
			assert.Equal(t, cp.Nodes(), nodes, "%s: one pod on each node", what)
		}
		ds, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, d := range ds.Items {
			what := "Deployment " + ns + "/" + d.Name
			seen = append(seen, what)
			st, want := d.Status, *d.Spec.Replicas
			assert.Equal(t, d.Generation, st.ObservedGeneration, "%s observedGeneration", what)
			assert.Equal(t, []int32{want, want, want}, []int32{st.Replicas, st.UpdatedReplicas, st.AvailableReplicas}, "%s replicas, updated, available", what)
			rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
			require.NoError(t, err)
			seen[len(seen)-1] += fmt.Sprintf(" (%d ReplicaSets)", len(rss.Items))
			checkPods(ctx, t, cs, what, ns, d.Spec.Selector, d.Spec.Template.Spec.Containers[0].Image)
		}
	}
	slices.Sort(seen)
	t.Logf("rolled out: %s", strings.Join(seen, ", "))
	// The first hop creates every workload (the cluster "runs"
	// v26.06-rc.2 by the ClusterVersion's word only); calico, kube-proxy
	// and the provider then change their pod template in later hops and
	// roll out again (a revision or ReplicaSet per template), while
	// coredns (v1.12.0) and metrics-server (v0.7.2) keep rc.3's from there
	// to v26.09.
	assert.Equal(t, []string{"DaemonSet kube-system/calico-node (2 revisions)", "DaemonSet kube-system/kube-proxy (2 revisions)",
		"Deployment cluster-system/bke-provider (3 ReplicaSets)", "Deployment kube-system/coredns (1 ReplicaSets)", "Deployment kube-system/metrics-server (1 ReplicaSets)"}, seen,
		"the sample catalog's workloads and their pod templates along the route")
}

// checkPods checks that the live pods of a workload are Ready and run
// image, and returns their nodes.
func checkPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, what, ns string, sel *metav1.LabelSelector, image string) []string {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(sel)})
	require.NoError(t, err)
	var nodes []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		nodes = append(nodes, p.Spec.NodeName)
		assert.Equal(t, image, p.Spec.Containers[0].Image, "%s: image of pod %s", what, p.Name)
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}
		assert.True(t, ready, "%s: pod %s Ready", what, p.Name)
	}
	assert.NotEmpty(t, nodes, "%s has pods", what)
	return nodes
}

// testWriter writes log lines into the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
