package fleet_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/catalog"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/kube/fleet"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
)

const catalogDir = "../../testdata/catalog"

var (
	cfg    *rest.Config
	scheme = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	ctrl.SetLogger(logr.Discard())
	if os.Getenv(envFleetChild) != "" {
		fleetChildMain() // a fleet controller process of the kill test
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		os.Exit(m.Run()) // the tests skip, or fail with CI=true
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{"../config/crd"}, ErrorIfCRDPathMissing: true}
	if os.Getenv("HOPDAG_BENCH_APIPROFILE") != "" {
		// BenchmarkRollout's API server profile (apiProfile).
		env.ControlPlane.GetAPIServer().Configure().Set("debug-socket-path", apiDebugSocket)
	}
	var err error
	if cfg, err = env.Start(); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

func needAPIServer(t *testing.T) {
	t.Helper()
	if cfg == nil {
		msg := `no API server: set KUBEBUILDER_ASSETS (eval "$(tools/env.sh kube)")`
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// management is one management cluster's operator: the ClusterVersion
// reconciler (components simulated; those failing name the
// ClusterVersions where they fail) and the rollout controller, watching
// namespace ns.
func management(t *testing.T, c client.Client, ns string, failIn ...string) {
	t.Helper()
	operate(t, ns, simulated(failIn...))
	_ = c
}

// simulated gives each ClusterVersion its simulated runner: bkeagent,
// provider and calico take 100 ms; provider fails for good in the
// ClusterVersions named in failIn.
func simulated(failIn ...string) func(types.NamespacedName, *rest.Config) (runner.Runner, error) {
	return func(k types.NamespacedName, _ *rest.Config) (runner.Runner, error) {
		rn := runnertest.New()
		for _, name := range []string{"bkeagent", "provider", "calico"} {
			rn.Script(name, runnertest.Script{Delay: 100 * time.Millisecond})
		}
		if slices.Contains(failIn, k.Name) {
			rn.Script("provider", runnertest.Script{FailAlways: true, Permanent: true})
		}
		return rollbacker{rn}, nil
	}
}

// operate starts the management cluster's operator on namespace ns: the
// ClusterVersion reconciler with runnerFor's runners (the catalog's hop
// checks passing, the records in memory) and the rollout controller.
func operate(t testing.TB, ns string, runnerFor func(types.NamespacedName, *rest.Config) (runner.Runner, error), extra ...controller.Option) {
	t.Helper()
	operateOn(t, cfg, ns, runnerFor, extra...)
}

// workers is how many reconciles of each controller run at once
// (controller-runtime's default is 1; the benchmark sets more).
var workers = 1

// stores makes the run records of a manager's reconciler: in memory,
// unless the benchmark keeps them on disk (fileStores).
var stores = memoryStores

// memoryStores keeps each ClusterVersion's run record in a state.Memory.
func memoryStores() controller.StoreFunc {
	var mu sync.Mutex
	m := map[types.NamespacedName]*state.Memory{}
	return func(k types.NamespacedName) (state.Store, state.Lock, error) {
		mu.Lock()
		defer mu.Unlock()
		if m[k] == nil {
			m[k] = state.NewMemory()
		}
		return m[k], m[k], nil
	}
}

// operateOn is operate through the API server of rcfg.
func operateOn(t testing.TB, rcfg *rest.Config, ns string, runnerFor func(types.NamespacedName, *rest.Config) (runner.Runner, error), extra ...controller.Option) {
	t.Helper()
	manage(t, rcfg, []string{ns}, true, runnerFor, extra...)
}

// manage is operateOn, on the namespaces given, with the rollout
// controller only when withFleet (the kill test runs it in another
// process).
func manage(t testing.TB, rcfg *rest.Config, namespaces []string, withFleet bool, runnerFor func(types.NamespacedName, *rest.Config) (runner.Runner, error), extra ...controller.Option) {
	t.Helper()
	watched := map[string]cache.Config{}
	for _, ns := range namespaces {
		watched[ns] = cache.Config{}
	}
	mgr, err := ctrl.NewManager(rcfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: new(true), MaxConcurrentReconciles: workers},
		Cache:      cache.Options{DefaultNamespaces: watched}})
	require.NoError(t, err)
	storeFor := stores()
	ok := func(context.Context, runner.CheckTask) error { return nil }
	var opts []runner.Option
	for _, n := range []string{"cluster-healthy", "etcd-backup", "nodes-ready", "registry-mirror-reachable", "conformance-smoke"} {
		opts = append(opts, runner.WithCheck(n, ok))
	}
	r := controller.New(mgr.GetClient(), nil, storeFor, append([]controller.Option{controller.WithExecutorOptions(opts...),
		controller.WithManifests(os.DirFS(catalogDir)), controller.WithRunnerFor(runnerFor), controller.WithStatusInterval(100 * time.Millisecond)}, extra...)...)
	require.NoError(t, r.SetupWithManager(mgr))
	if withFleet {
		require.NoError(t, fleet.New(mgr.GetClient(), fleet.WithManifests(os.DirFS(catalogDir)), fleet.WithLogger(slog.New(slog.DiscardHandler))).SetupWithManager(mgr))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.NoError(t, mgr.Start(ctx))
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// rollbacker is the simulated runner with the Rollback ability: a
// rollback succeeds at once.
type rollbacker struct{ *runnertest.Runner }

func (rollbacker) Rollback(context.Context, runner.Task) error { return nil }

// newFleet makes a namespace with the sample catalog and n
// ClusterVersions c1..cn at v26.06-rc.2, labelled fleet=prod.
func newFleet(t *testing.T, c client.Client, n int) string {
	t.Helper()
	ctx := context.Background()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "fleet-"}}
	require.NoError(t, c.Create(ctx, nsObj))
	ns := nsObj.Name
	objs, err := catalog.ReadDir(catalogDir)
	require.NoError(t, err)
	for i := range objs.Releases {
		objs.Releases[i].Namespace = ns
		require.NoError(t, c.Create(ctx, &objs.Releases[i]))
	}
	for i := range objs.Components {
		objs.Components[i].Namespace = ns
		require.NoError(t, c.Create(ctx, &objs.Components[i]))
	}
	for i := range objs.UpgradePaths {
		objs.UpgradePaths[i].Namespace = ns
		require.NoError(t, c.Create(ctx, &objs.UpgradePaths[i]))
	}
	for i := 1; i <= n; i++ {
		cv := &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%d", i), Labels: map[string]string{"fleet": "prod"}},
			Spec: v1alpha1.ClusterVersionSpec{InstalledVersion: "v26.06-rc.2", DesiredVersion: "v26.06-rc.2"}}
		require.NoError(t, c.Create(ctx, cv))
	}
	return ns
}

func newRollout(ns string, mutate func(*v1alpha1.UpgradeRolloutSpec)) *v1alpha1.UpgradeRollout {
	two := intstr.FromInt32(2)
	ur := &v1alpha1.UpgradeRollout{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-v26.06"},
		Spec: v1alpha1.UpgradeRolloutSpec{
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "prod"}},
			DesiredVersion: "v26.06",
			Canaries:       &v1alpha1.Canaries{Count: 1},
			Waves:          &v1alpha1.Waves{Size: &two},
			MaxConcurrency: &two,
		}}
	if mutate != nil {
		mutate(&ur.Spec)
	}
	return ur
}

func newClient(t *testing.T) client.Client {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

// watchFleet polls the fleet until done says so, checking at each poll
// that at most limit ClusterVersions are upgrading; it returns the order
// in which they were started (the rollout's annotation) and the
// rollout.
func watchFleet(t *testing.T, c client.Client, ns string, limit int, timeout time.Duration, done func(*v1alpha1.UpgradeRollout) bool) *v1alpha1.UpgradeRollout {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	peak := 0
	for {
		var cvs v1alpha1.ClusterVersionList
		require.NoError(t, c.List(ctx, &cvs, client.InNamespace(ns)))
		upgrading := 0
		for _, cv := range cvs.Items {
			if cv.Status.Phase == v1alpha1.PhaseUpgrading {
				upgrading++
			}
		}
		peak = max(peak, upgrading)
		require.LessOrEqual(t, upgrading, limit, "ClusterVersions upgrading at once")
		var ur v1alpha1.UpgradeRollout
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "to-v26.06"}, &ur))
		if done(&ur) {
			t.Logf("at most %d ClusterVersions upgraded at once", peak)
			return &ur
		}
		if time.Now().After(deadline) {
			t.Fatalf("UpgradeRollout %s/to-v26.06 not done after %v: %+v", ns, timeout, ur.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func reasons(t *testing.T, c client.Client, ns string) []string {
	var l eventsv1.EventList
	require.NoError(t, c.List(context.Background(), &l, client.InNamespace(ns)))
	var out []string
	for _, e := range l.Items {
		if e.Regarding.Kind == "UpgradeRollout" {
			out = append(out, e.Reason)
		}
	}
	return out
}

// TestRolloutInWaves: five ClusterVersions, a canary then waves of two,
// two at a time: each goes along its own route (two hops) to v26.06,
// never more than two upgrade at once, the canary is done before any
// other starts, and the waves start in order.
func TestRolloutInWaves(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newFleet(t, c, 5)
	management(t, c, ns)
	require.NoError(t, c.Create(context.Background(), newRollout(ns, nil)))
	ur := watchFleet(t, c, ns, 2, 3*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool { return ur.Status.Phase == "Completed" })
	assert.Equal(t, 5, ur.Status.Counts.Succeeded)
	var names []string
	for _, w := range ur.Status.Waves {
		var cs []string
		for _, cl := range w.Clusters {
			cs = append(cs, cl.Name+"="+cl.State)
		}
		names = append(names, fmt.Sprintf("%s%v", w.Name, cs))
	}
	assert.Equal(t, []string{"canary[c1=Succeeded]", "wave-1[c2=Succeeded c3=Succeeded]", "wave-2[c4=Succeeded c5=Succeeded]"}, names)
	cvs, started, completed := startsAndEnds(t, c, ns)
	for _, cv := range cvs {
		assert.Equal(t, "v26.06", cv.Status.CurrentVersion, cv.Name)
		assert.Equal(t, "to-v26.06", cv.Annotations[fleet.Rollout])
	}
	for _, k := range []string{"c2", "c3", "c4", "c5"} {
		assert.False(t, started[k].Before(completed["c1"].Truncate(time.Second)), "%s started before the canary completed", k)
	}
	for _, k := range []string{"c4", "c5"} {
		assert.False(t, started[k].Before(completed["c2"].Truncate(time.Second)) || started[k].Before(completed["c3"].Truncate(time.Second)), "%s (wave 2) started before wave 1 completed", k)
	}
	assert.True(t, meta.IsStatusConditionTrue(ur.Status.Conditions, "Completed"))
	// One Event per wave, each with its own note (Events of one reason
	// and action about one object would be one series, the first note
	// kept).
	require.Eventually(t, func() bool { return len(notes(t, c, ns, "WaveCompleted")) == 3 }, 10*time.Second, 100*time.Millisecond,
		"a WaveCompleted Event per wave: %v", notes(t, c, ns, "WaveCompleted"))
	assert.Equal(t, []string{"wave canary completed", "wave wave-1 completed", "wave wave-2 completed"}, notes(t, c, ns, "WaveCompleted"))
	assert.Equal(t, []string{"wave canary (1 cluster) started: [c1]", "wave wave-1 (2 clusters) started: [c2 c3]", "wave wave-2 (2 clusters) started: [c4 c5]"}, notes(t, c, ns, "WaveStarted"))
}

// TestCanaryFailureStopsTheRollout: the canary's upgrade fails; with a
// failure budget of 0 the rollout is Failed (BudgetExceeded) and no other
// ClusterVersion starts.
func TestCanaryFailureStopsTheRollout(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newFleet(t, c, 3)
	management(t, c, ns, "c1")
	require.NoError(t, c.Create(context.Background(), newRollout(ns, nil)))
	ur := watchFleet(t, c, ns, 2, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool { return ur.Status.Phase == "Failed" })
	f := meta.FindStatusCondition(ur.Status.Conditions, "Failed")
	require.NotNil(t, f)
	assert.Equal(t, "BudgetExceeded", f.Reason)
	assert.Contains(t, f.Message, "1 of 3 clusters failed, more than the failure budget of 0")
	time.Sleep(time.Second)
	var cvs v1alpha1.ClusterVersionList
	require.NoError(t, c.List(context.Background(), &cvs, client.InNamespace(ns)))
	for _, cv := range cvs.Items {
		if cv.Name != "c1" {
			assert.Equal(t, v1alpha1.Target("v26.06-rc.2"), cv.Spec.DesiredVersion, "%s was started after the canary failed", cv.Name)
			assert.Empty(t, cv.Annotations[fleet.Started])
		}
	}
	require.Eventually(t, func() bool {
		r := reasons(t, c, ns)
		return slices.Contains(r, "CanaryFailed") && slices.Contains(r, "BudgetExceeded")
	}, 10*time.Second, 100*time.Millisecond, "CanaryFailed and BudgetExceeded Events")
}

// TestFailureBudget: with maxFailures 1 of 4 (no canary, two at a time),
// one failure is tolerated and the rollout goes on; the second stops it,
// and nothing starts after it (one at a time, the cluster after the
// second failure never starts).
func TestFailureBudget(t *testing.T) {
	needAPIServer(t)
	tests := []struct {
		name   string
		failIn []string
		limit  int32 // maxConcurrency
		phase  string
		// never: ClusterVersions that never start (one at a time, c4
		// comes after c3's failure, the second).
		never []string
	}{
		{"one failure tolerated", []string{"c2"}, 2, "Completed", nil},
		{"the second stops it", []string{"c1", "c3"}, 2, "Failed", nil},
		{"the second stops it, one at a time", []string{"c1", "c3"}, 1, "Failed", []string{"c4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t)
			ns := newFleet(t, c, 4)
			management(t, c, ns, tt.failIn...)
			one, limit := intstr.FromInt32(1), intstr.FromInt32(tt.limit)
			require.NoError(t, c.Create(context.Background(), newRollout(ns, func(s *v1alpha1.UpgradeRolloutSpec) {
				s.Canaries, s.Waves, s.MaxFailures, s.MaxConcurrency = nil, nil, &one, &limit
			})))
			ur := watchFleet(t, c, ns, int(tt.limit), 3*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool {
				return ur.Status.Phase == "Completed" || ur.Status.Phase == "Failed"
			})
			assert.Equal(t, tt.phase, ur.Status.Phase)
			assert.Equal(t, len(tt.failIn), ur.Status.Counts.Failed)
			assert.Equal(t, 1, ur.Status.FailureBudget)
			if tt.phase == "Failed" {
				// Past the budget nothing more starts.
				before := startedIn(t, c, ns)
				time.Sleep(1500 * time.Millisecond)
				assert.Equal(t, before, startedIn(t, c, ns), "ClusterVersions started after the budget was exceeded")
				for _, name := range tt.never {
					assert.NotContains(t, before, name, "%s started after the second failure", name)
				}
			}
		})
	}
}

// TestNamespaceSelector: a rollout with spec.namespaceSelector upgrades
// the ClusterVersions its selector selects in the namespaces whose labels
// match, each along its own namespace's catalog, named NAMESPACE/NAME
// (canaries.names too); those
// of its own namespace (not labelled) and of a namespace that does not
// match are left alone. Relabelling a namespace adds its ClusterVersions
// to the fleet.
func TestNamespaceSelector(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ctx := context.Background()
	home, b, cc, other := newFleet(t, c, 1), newFleet(t, c, 2), newFleet(t, c, 1), newFleet(t, c, 1)
	label := func(ns string) {
		var o corev1.Namespace
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: ns}, &o))
		o.Labels["hopdag.io/fleet-of"] = home
		require.NoError(t, c.Update(ctx, &o))
	}
	label(b)
	manage(t, cfg, []string{home, b, cc, other}, true, simulated())
	require.NoError(t, c.Create(ctx, newRollout(home, func(s *v1alpha1.UpgradeRolloutSpec) {
		s.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"hopdag.io/fleet-of": home}}
		s.Canaries = &v1alpha1.Canaries{Names: []string{b + "/c2"}}
		s.Paused = true
	})))
	ur := watchFleet(t, c, home, 2, 30*time.Second, func(ur *v1alpha1.UpgradeRollout) bool {
		return ur.Status.DryRun != nil && len(ur.Status.Waves) > 0
	})
	var names []string
	for _, w := range ur.Status.Waves {
		for _, cl := range w.Clusters {
			names = append(names, w.Name+":"+cl.Name)
		}
	}
	assert.Equal(t, []string{"canary:" + b + "/c2", "wave-1:" + b + "/c1"}, names, "the fleet of the labelled namespace")

	label(cc) // a namespace labelled later joins the fleet
	ur = watchFleet(t, c, home, 2, 30*time.Second, func(ur *v1alpha1.UpgradeRollout) bool {
		n := 0
		for _, w := range ur.Status.Waves {
			n += len(w.Clusters)
		}
		return n == 3
	})
	assert.Equal(t, cc+"/c1", clusterOf(ur, cc+"/c1").Name, "the namespace labelled later")
	setRollout(t, c, home, func(s *v1alpha1.UpgradeRolloutSpec) { s.Paused = false })
	ur = watchFleet(t, c, home, 2, 3*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool { return ur.Status.Phase == "Completed" })
	assert.Equal(t, 3, ur.Status.Counts.Succeeded)
	for _, k := range []client.ObjectKey{{Namespace: b, Name: "c1"}, {Namespace: b, Name: "c2"}, {Namespace: cc, Name: "c1"}} {
		var cv v1alpha1.ClusterVersion
		require.NoError(t, c.Get(ctx, k, &cv))
		assert.Equal(t, "v26.06", cv.Status.CurrentVersion, "%s upgraded", k)
		assert.Equal(t, home+"/to-v26.06", cv.Annotations[fleet.Rollout], "%s started by the rollout, named with its namespace", k)
	}
	for _, k := range []client.ObjectKey{{Namespace: home, Name: "c1"}, {Namespace: other, Name: "c1"}} {
		var cv v1alpha1.ClusterVersion
		require.NoError(t, c.Get(ctx, k, &cv))
		assert.Equal(t, v1alpha1.Target("v26.06-rc.2"), cv.Spec.DesiredVersion, "%s is not of the fleet", k)
		assert.Empty(t, cv.Annotations[fleet.Rollout], "%s is not of the fleet", k)
	}
	require.Eventually(t, func() bool { return len(notes(t, c, home, "WaveStarted")) == 2 }, 10*time.Second, 100*time.Millisecond)
	assert.Equal(t, "wave canary (1 cluster) started: ["+b+"/c2]", notes(t, c, home, "WaveStarted")[0])
}

// startedIn are the ClusterVersions of ns a rollout started.
func startedIn(t *testing.T, c client.Client, ns string) []string {
	t.Helper()
	var cvs v1alpha1.ClusterVersionList
	require.NoError(t, c.List(context.Background(), &cvs, client.InNamespace(ns)))
	var out []string
	for _, cv := range cvs.Items {
		if cv.Annotations[fleet.Started] != "" {
			out = append(out, cv.Name)
		}
	}
	slices.Sort(out)
	return out
}

// TestSoak: with minSuccessTime a ClusterVersion at the target counts as
// done only once it has stayed there, idle, that long: the canary is
// Soaking in the rollout's status, the next wave starts only after its
// soak, and the rollout completes once the last wave's soak ends.
func TestSoak(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newFleet(t, c, 3)
	management(t, c, ns)
	const soak = 3 * time.Second
	require.NoError(t, c.Create(context.Background(), newRollout(ns, func(s *v1alpha1.UpgradeRolloutSpec) {
		s.MinSuccessTime = &metav1.Duration{Duration: soak}
	})))
	ur := watchFleet(t, c, ns, 2, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool {
		return clusterOf(ur, "c1").State == "Soaking"
	})
	assert.Equal(t, 1, ur.Status.Counts.Soaking, "the canary soaks")
	assert.Equal(t, []string{"c1"}, startedIn(t, c, ns), "nothing starts while the canary soaks")
	ur = watchFleet(t, c, ns, 2, 2*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool { return ur.Status.Phase == "Completed" })
	assert.Equal(t, 3, ur.Status.Counts.Succeeded)
	_, started, completed := startsAndEnds(t, c, ns)
	// The annotations and the history have seconds: a second of slack.
	for _, k := range []string{"c2", "c3"} {
		assert.False(t, started[k].Before(completed["c1"].Add(soak-time.Second)), "%s started at %v, before the canary's soak ended (completed %v, soak %v)", k, started[k], completed["c1"], soak)
	}
}

// startsAndEnds reads the ClusterVersions of ns, each of which
// completed an upgrade, with when the rollout started each (its
// annotation) and when its upgrade completed (its newest history entry).
func startsAndEnds(t *testing.T, c client.Client, ns string) (cvs []v1alpha1.ClusterVersion, started, completed map[string]time.Time) {
	t.Helper()
	var l v1alpha1.ClusterVersionList
	require.NoError(t, c.List(context.Background(), &l, client.InNamespace(ns)))
	started, completed = map[string]time.Time{}, map[string]time.Time{}
	for _, cv := range l.Items {
		started[cv.Name], _ = time.Parse(time.RFC3339, cv.Annotations[fleet.Started])
		require.NotEmpty(t, cv.Status.History, "%s has no history entry", cv.Name)
		require.NotNil(t, cv.Status.History[0].CompletionTime, "%s's upgrade did not complete", cv.Name)
		completed[cv.Name] = cv.Status.History[0].CompletionTime.Time
	}
	return l.Items, started, completed
}
