package fleet_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/kube/internal/procstat"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// The bench plan: one hop, v1.0.0 -> v2.0.0, of 20 components in 5
// levels of 4 (each depends on the one of its column in the level
// before), every component taking the same time.
const (
	benchLevels  = 5
	benchColumns = 4
)

// benchCatalog creates in ns the catalog of the bench plan.
func benchCatalog(tb testing.TB, c client.Client, ns string) {
	tb.Helper()
	ctx := context.Background()
	var refs1, refs2 []v1alpha1.ComponentRef
	for l := range benchLevels {
		for col := range benchColumns {
			name := fmt.Sprintf("comp-%d-%d", l, col)
			var deps []string
			if l > 0 {
				deps = []string{fmt.Sprintf("comp-%d-%d", l-1, col)}
			}
			for _, v := range []string{"v1.0.0", "v2.0.0"} {
				require.NoError(tb, c.Create(ctx, &v1alpha1.ComponentVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-" + v},
					Spec: v1alpha1.ComponentVersionSpec{Name: name, Version: v1alpha1.Version(v), Type: "inline", Handler: name, Dependencies: deps}}))
			}
			refs1 = append(refs1, v1alpha1.ComponentRef{Name: name, Version: "v1.0.0"})
			refs2 = append(refs2, v1alpha1.ComponentRef{Name: name, Version: "v2.0.0"})
		}
	}
	for v, refs := range map[string][]v1alpha1.ComponentRef{"v1.0.0": refs1, "v2.0.0": refs2} {
		require.NoError(tb, c.Create(ctx, &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bench-" + v},
			Spec: v1alpha1.ReleaseSpec{Version: v1alpha1.Version(v), Components: refs}}))
	}
	require.NoError(tb, c.Create(ctx, &v1alpha1.UpgradePath{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bench"},
		Spec: v1alpha1.UpgradePathSpec{Rules: []v1alpha1.Rule{{From: "v1.0.0", To: "v2.0.0"}}}}))
}

// counting counts the requests through its transport, and tells tl of
// the ClusterVersions' spec patches (the rollout starting them).
type counting struct {
	rt http.RoundTripper
	n  *atomic.Int64
	tl *timeline
}

func (c counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	c.tl.request(r)
	resp, err := c.rt.RoundTrip(r)
	if err == nil && r.Method == http.MethodPatch {
		if _, name, ok := strings.Cut(r.URL.Path, "/clusterversions/"); ok && !strings.Contains(name, "/") {
			c.tl.at(c.tl.patched, name, false)
		}
	}
	return resp, err
}

// timeline is when each cluster of a benchmark's fleet was patched by
// the rollout (started), entered its first component, and left its last
// one, as the operator's process saw them (to the microsecond, where the
// objects' timestamps have seconds).
type timeline struct {
	mu                   sync.Mutex
	patched, first, last map[string]time.Time
	// requests counts the requests by method and kind (and
	// subresource), "PUT clusterversions/status".
	requests map[string]int
}

// request counts r in tl.requests.
func (tl *timeline) request(r *http.Request) {
	// .../namespaces/NS/KIND[/NAME[/SUBRESOURCE]]
	kind := r.URL.Path
	if _, rest, ok := strings.Cut(r.URL.Path, "/namespaces/"); ok && strings.Contains(rest, "/") {
		parts := strings.Split(rest, "/")[1:]
		kind = parts[0]
		if len(parts) > 2 {
			kind += "/" + strings.Join(parts[2:], "/")
		}
	}
	if r.URL.Query().Get("watch") == "true" {
		kind += " (watch)"
	}
	tl.mu.Lock()
	tl.requests[r.Method+" "+kind]++
	tl.mu.Unlock()
}

func newTimeline() *timeline {
	tl := &timeline{}
	tl.reset()
	return tl
}

// reset forgets what was recorded: the finalizers' patches of the
// reconciler's first pass over the fleet are not the rollout's.
func (tl *timeline) reset() {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.patched, tl.first, tl.last = map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	tl.requests = map[string]int{}
}

// at records now in m for name: the first time, or (latest) every time.
func (tl *timeline) at(m map[string]time.Time, name string, latest bool) {
	now := time.Now()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if _, ok := m[name]; !ok || latest {
		m[name] = now
	}
}

// runner is the simulated runner of cluster name: each component takes d.
func (tl *timeline) runner(name string, d time.Duration) runner.Runner {
	return runner.RunnerFunc(func(ctx context.Context, _ runner.Task) error {
		tl.at(tl.first, name, false)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
		tl.at(tl.last, name, true)
		return nil
	})
}

// report logs, per wave, where its time went: from its release (its
// first patch) to its patches' end, to its clusters' first components
// (the first and the last to begin), to its last component's end, and
// to the next wave's release; and the means over the fleet of the time
// from a cluster's patch to its first component, and of its run's
// overhead over levels component times.
func (tl *timeline) report(b *testing.B, start time.Time, waves []v1alpha1.WaveStatus, levels int, component time.Duration) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	var toFirst, overhead time.Duration
	n := 0
	var prevEnd time.Time
	lines := []string{"wave: clusters, released after the wave before ended (the first: after the rollout's creation), patched in, first components from/to, last component done (after its release)"}
	for _, w := range waves {
		var released, patchedAll, firstMin, firstMax, end time.Time
		for _, cl := range w.Clusters {
			p, f, l := tl.patched[cl.Name], tl.first[cl.Name], tl.last[cl.Name]
			if released.IsZero() || p.Before(released) {
				released = p
			}
			patchedAll = later(patchedAll, p)
			if firstMin.IsZero() || f.Before(firstMin) {
				firstMin = f
			}
			firstMax, end = later(firstMax, f), later(end, l)
			if !p.IsZero() && !f.IsZero() && !l.IsZero() {
				toFirst += f.Sub(p)
				overhead += l.Sub(f) - time.Duration(levels)*component
				n++
			}
		}
		gap := released.Sub(start)
		if !prevEnd.IsZero() {
			gap = released.Sub(prevEnd)
		}
		lines = append(lines, fmt.Sprintf("%s: %d, %s, %s, %s/%s, %s", w.Name, len(w.Clusters), ms(gap), ms(patchedAll.Sub(released)), ms(firstMin.Sub(released)), ms(firstMax.Sub(released)), ms(end.Sub(released))))
		prevEnd = end
	}
	if n > 0 {
		b.Logf("mean over %d clusters: patch to first component %s, run overhead over %d component times %s", n, ms(toFirst/time.Duration(n)), levels, ms(overhead/time.Duration(n)))
	}
	kinds := slices.Collect(maps.Keys(tl.requests))
	slices.SortFunc(kinds, func(a, b string) int { return cmp.Or(cmp.Compare(tl.requests[b], tl.requests[a]), cmp.Compare(a, b)) })
	var by []string
	for _, k := range kinds {
		by = append(by, fmt.Sprintf("%s %d", k, tl.requests[k]))
	}
	b.Logf("requests: %s", strings.Join(by, ", "))
	// One call: the testing package keeps only the first lines of a
	// benchmark's log.
	b.Logf("%s", strings.Join(lines, "\n"))
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// fileStores keeps each ClusterVersion's run record in a state.File in
// dir/NAMESPACE/NAME, open from the run's start (the reconciler asks for
// it) to the release of its lock: a fleet of 10,000 would hold three
// descriptors per ClusterVersion otherwise.
func fileStores(dir string) controller.StoreFunc {
	return func(k types.NamespacedName) (state.Store, state.Lock, error) {
		f, err := state.OpenFile(filepath.Join(dir, k.Namespace, k.Name))
		if err != nil {
			return nil, nil, err
		}
		return f, closing{f}, nil
	}
}

// closing is a state.File's lock that closes the File once its lease is
// released, or could not be acquired.
type closing struct{ *state.File }

func (c closing) Acquire(ctx context.Context, holder string, ttl time.Duration) (state.Lease, error) {
	l, err := c.File.Acquire(ctx, holder, ttl)
	if err != nil {
		_ = c.File.Close()
	}
	return l, err
}

func (c closing) Release(ctx context.Context, l state.Lease) error {
	return errors.Join(c.File.Release(ctx, l), c.File.Close())
}

// BenchmarkRollout upgrades fleets of simulated clusters on one real
// API server, with the ClusterVersion reconciler and the rollout
// controller of one process: each ClusterVersion runs the bench plan
// (one hop, 20 components in 5 levels, each component taking a fixed
// time), in waves of 10%, at most 100 at once, no soak. It reports
//
//   - makespan/ideal: the rollout's time from its creation to Completed
//     over what waves, concurrency and component time allow with zero
//     overhead (each wave ceil(size/100) rounds of 5 component times, the
//     waves one after the other);
//   - requests/cluster: the API requests of the operator's process
//     (counted in its rest transport: the controllers' reads, watches
//     and writes, the Events) per ClusterVersion upgraded;
//   - peak-rss-MiB: the process's peak resident set during the rollout
//     (the test's own client included; the API server is another
//     process; the run records are files, see fileStores);
//   - cpu-ms/cluster: the process's CPU time (user and system) during
//     the rollout per cluster upgraded (the simulated components take
//     none: it is the controllers', their clients' and the stores').
//
// Run it with -benchtime=1x: one rollout is one iteration. The sizes are
// HOPDAG_BENCH_CLUSTERS (default 1000, e.g. 1000,10000) and the
// component time HOPDAG_BENCH_COMPONENT (default 1s); HOPDAG_BENCH_WORKERS
// sets MaxConcurrentReconciles for both controllers (default: theirs);
// HOPDAG_BENCH_HEAPPROFILE names a file for a heap profile taken when the
// rollout ends, the controllers still running; HOPDAG_BENCH_APIPROFILE
// one for a 30 s CPU profile of the API server from the rollout's start
// (go tool pprof "$KUBEBUILDER_ASSETS/kube-apiserver" FILE).
func BenchmarkRollout(b *testing.B) {
	if cfg == nil {
		b.Skip(`no API server: set KUBEBUILDER_ASSETS (eval "$(tools/env.sh kube)")`)
	}
	sizes := []int{1000}
	if s := os.Getenv("HOPDAG_BENCH_CLUSTERS"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			require.NoError(b, err, "HOPDAG_BENCH_CLUSTERS=%s: a comma-separated list of fleet sizes", s)
			sizes = append(sizes, n)
		}
	}
	// Without HOPDAG_BENCH_WORKERS, each controller's own default (the
	// ClusterVersion reconciler's DefaultMaxConcurrentReconciles).
	workers = 0
	b.Cleanup(func() { workers = 1 })
	// The run records on disk, as an operator keeps them outside its
	// memory (kube/store keeps them in the API server): the resident set
	// is the controllers', not the records'.
	stores = func() controller.StoreFunc { return fileStores(b.TempDir()) }
	b.Cleanup(func() { stores = memoryStores })
	if s := os.Getenv("HOPDAG_BENCH_WORKERS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(b, err, "HOPDAG_BENCH_WORKERS=%s: a count", s)
		workers = n
	}
	component := time.Second
	if s := os.Getenv("HOPDAG_BENCH_COMPONENT"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(b, err, "HOPDAG_BENCH_COMPONENT=%s: a duration", s)
		component = d
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				benchRollout(b, n, component)
			}
		})
	}
}

// benchRollout is one rollout of a fleet of n.
func benchRollout(b *testing.B, n int, component time.Duration) {
	b.StopTimer()
	ctx := context.Background()
	setup := rest.CopyConfig(cfg)
	setup.QPS, setup.Burst = 2000, 4000
	c, err := client.New(setup, client.Options{Scheme: scheme})
	require.NoError(b, err)
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	require.NoError(b, c.Create(ctx, nsObj))
	ns := nsObj.Name
	benchCatalog(b, c, ns)
	names := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range names {
				cv := &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%05d", i), Labels: map[string]string{"fleet": "bench"}},
					Spec: v1alpha1.ClusterVersionSpec{InstalledVersion: "v1.0.0", DesiredVersion: "v1.0.0"}}
				if err := c.Create(ctx, cv); err != nil {
					b.Errorf("creating ClusterVersion %s: %v", cv.Name, err)
				}
			}
		})
	}
	for i := range n {
		names <- i
	}
	close(names)
	wg.Wait()

	var requests atomic.Int64
	tl := newTimeline()
	op := rest.CopyConfig(cfg)
	op.QPS, op.Burst = 1000, 2000 // client-go's 5/s is made for one controller of a few objects
	op.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return counting{rt, &requests, tl} }
	operateOn(b, op, ns, func(k types.NamespacedName, _ *rest.Config) (runner.Runner, error) {
		return tl.runner(k.Name, component), nil
	},
		controller.WithExecutorOptions(runner.WithMaxParallel(benchColumns)), controller.WithStatusInterval(2*time.Second))
	// The reconciler's first pass over the fleet (finalizers, status) is
	// not the rollout's: wait for every ClusterVersion to be observed.
	require.Eventually(b, func() bool {
		var l v1alpha1.ClusterVersionList
		if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false
		}
		for _, cv := range l.Items {
			if cv.Status.ObservedGeneration < cv.Generation {
				return false
			}
		}
		return len(l.Items) == n
	}, 10*time.Minute, time.Second, "the fleet observed")

	tenth, hundred := intstr.FromString("10%"), intstr.FromInt32(100)
	ur := &v1alpha1.UpgradeRollout{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bench"},
		Spec: v1alpha1.UpgradeRolloutSpec{
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "bench"}},
			DesiredVersion: "v2.0.0", Waves: &v1alpha1.Waves{Size: &tenth}, MaxConcurrency: &hundred,
		}}
	procstat.ResetPeakRSS()
	cpu := procstat.CPU()
	tl.reset()
	before := requests.Load()
	start := time.Now()
	if path := os.Getenv("HOPDAG_BENCH_APIPROFILE"); path != "" {
		go apiProfile(b, path)
	}
	b.StartTimer()
	require.NoError(b, c.Create(ctx, ur))
	got := awaitEnd(b, setup, ur, start, 30*time.Minute)
	b.StopTimer()
	makespan := time.Since(start)
	cpu = procstat.CPU() - cpu
	if path := os.Getenv("HOPDAG_BENCH_HEAPPROFILE"); path != "" {
		// What the process holds at the rollout's end, its managers still
		// running (-memprofile is written after they stopped).
		f, err := os.Create(path)
		require.NoError(b, err)
		runtime.GC()
		require.NoError(b, pprof.WriteHeapProfile(f))
		require.NoError(b, f.Close())
	}
	require.Equal(b, "Completed", got.Status.Phase, "%s", got.Status.Conditions)
	require.Equal(b, n, got.Status.Counts.Succeeded)
	waveSize := (n + 9) / 10
	rounds := 0
	for left := n; left > 0; left -= waveSize {
		rounds += (min(waveSize, left) + 99) / 100
	}
	ideal := time.Duration(rounds*benchLevels) * component
	b.ReportMetric(makespan.Seconds()/ideal.Seconds(), "makespan/ideal")
	b.ReportMetric(float64(requests.Load()-before)/float64(n), "requests/cluster")
	b.ReportMetric(float64(procstat.PeakRSS())/(1<<20), "peak-rss-MiB")
	b.ReportMetric(makespan.Seconds(), "makespan-s")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(n), "cpu-ms/cluster")
	b.Logf("%d clusters, component %v: makespan %v, ideal %v (%d rounds of %d levels), %d requests", n, component, makespan.Round(time.Millisecond), ideal, rounds, benchLevels, requests.Load()-before)
	tl.report(b, start, got.Status.Waves, benchLevels, component)
}

// awaitEnd waits until ur is Completed or Failed, and returns it then. It
// watches ur rather than polling it: at 10,000 clusters its status is
// some 1 MB, which a poll every 100 ms would read ten times a second
// into this process (whose resident set the benchmark measures).
func awaitEnd(b *testing.B, rcfg *rest.Config, ur *v1alpha1.UpgradeRollout, start time.Time, limit time.Duration) *v1alpha1.UpgradeRollout {
	b.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(limit))
	defer cancel()
	wc, err := client.NewWithWatch(rcfg, client.Options{Scheme: scheme})
	require.NoError(b, err)
	var got v1alpha1.UpgradeRollout
	ended := func() bool { return got.Status.Phase == "Completed" || got.Status.Phase == "Failed" }
	for {
		// A Get, then a watch from its resourceVersion: nothing between
		// the two is missed, and a watch the server ends is opened again.
		require.NoError(b, wc.Get(ctx, client.ObjectKeyFromObject(ur), &got), "reading the rollout (it did not end in %v?): %s", limit, got.Status.Conditions)
		if ended() {
			return &got
		}
		w, err := wc.Watch(ctx, &v1alpha1.UpgradeRolloutList{}, client.InNamespace(ur.Namespace),
			client.MatchingFields{"metadata.name": ur.Name}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: got.ResourceVersion}})
		require.NoError(b, err)
		for ev := range w.ResultChan() {
			if o, ok := ev.Object.(*v1alpha1.UpgradeRollout); ok {
				got = *o
				if ended() {
					w.Stop()
					return &got
				}
			}
		}
		w.Stop()
		require.NoError(b, ctx.Err(), "the rollout did not end in %v: %s", limit, got.Status.Conditions)
	}
}

// apiDebugSocket is where the API server of the tests answers profile
// requests when HOPDAG_BENCH_APIPROFILE is set.
var apiDebugSocket = filepath.Join(os.TempDir(), fmt.Sprintf("hopdag-apiserver-%d.sock", os.Getpid()))

// apiProfile writes to path a 30 s CPU profile of the API server, from
// the rollout's start.
func apiProfile(b *testing.B, path string) {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", apiDebugSocket)
	}}}
	resp, err := hc.Get("http://apiserver/debug/pprof/profile?seconds=30")
	if err != nil {
		b.Logf("API server profile: %v", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err == nil {
		_, err = io.Copy(f, resp.Body)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		b.Logf("API server profile: %v", err)
	}
}
