package fleet_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/runner"
)

// envKillSeed replays a run of TestFleetControllerSIGKILLed: its kill
// moments and component times (the test logs the seed it drew).
const envKillSeed = "HOPDAG_KILL_SEED"

// TestFleetControllerSIGKILLed kills the fleet controller with SIGKILL at
// ten random moments of a rollout and starts a new one each time; the
// last runs to the end. Every other kill comes shortly after the
// controller started a ClusterVersion, so that its successor comes up
// with starts of its predecessor in flight. The controller runs as a separate process (the
// child of killchild_test.go, this test binary re-executed) and alone:
// the ClusterVersions' reconciler runs here, in the test, with simulated
// components of 100 to 300 ms that it records. Twenty ClusterVersions
// go from v26.06-rc.2 to v26.06 (two hops) in a canary and four waves of
// five (the last of four), maxConcurrency 2: twelve batches one after
// another, 20 to 30 s here, longer than the ten kills (one every second
// or two) take, so that they all hit a moving rollout.
//
// At no moment are more than maxConcurrency ClusterVersions in flight:
// counted after each change the API server made to them, in its order
// (flight), from the change that sets a ClusterVersion's desiredVersion
// to the one that says it reached it, which is what the fleet controller
// counts against maxConcurrency and holds each of its component runs (see
// flight); the runs this test's runner saw (from a ClusterVersion's first
// component start to its last component end) overlap no more either, a
// count that does not rest on the API server's order. Each
// ClusterVersion was started once (its Started annotation never
// rewritten, written with its target), no component ran twice (each
// cluster, hop and component once), and the rollout is Completed with
// every ClusterVersion at v26.06.
//
// A controller that kept what it started in memory fails here: after a
// restart it takes the ClusterVersions its predecessor left in flight
// either as done, and starts more (or the next wave's) before they
// finished (more than maxConcurrency in flight), or as not started, and
// starts them again (their Started annotation rewritten).
func TestFleetControllerSIGKILLed(t *testing.T) {
	needAPIServer(t)
	const (
		clusters = 20
		limit    = 2
		kills    = 10
		target   = "v26.06"
	)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(envKillSeed); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "%s=%q: want the unsigned integer the test logged", envKillSeed, s)
	}
	t.Logf("seed %d (replay with %s=%d)", seed, envKillSeed, seed)
	rnd := rand.New(rand.NewPCG(seed, 0))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := newClient(t)
	ns := newFleet(t, c, clusters)
	runs := newRuns(seed)
	manage(t, cfg, []string{ns}, false, runs.runnerFor) // the ClusterVersion reconciler; the fleet controller is the child
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	fl := newFlight(target, "to-v26.06", limit)
	fl.follow(ctx, t, wc, ns)
	kids := newFleetChildren(t, ns)
	five := intstr.FromInt32(5)
	require.NoError(t, c.Create(ctx, newRollout(ns, func(s *v1alpha1.UpgradeRolloutSpec) { s.Waves.Size = &five })))

	t0 := time.Now()
	for i := range kills {
		p := kids.start()
		kids.waitReady(p, 60*time.Second)
		up := p.lived()
		if i%2 == 0 {
			// A random moment of the 1.7 s after the child is up (up
			// after 0.3 to 2 s here, killed after 0.3 to 3.7 s):
			// mid-reconcile, mid-start, or idle while the
			// ClusterVersions run.
			time.Sleep(time.Duration(rnd.IntN(1700)) * time.Millisecond) // a random kill time, not a wait for an event
		} else {
			// A random moment of the 300 ms after the child logged a
			// start (or 3 s after it is up, if it starts none): what it
			// started is in flight when its successor comes up, which
			// must count it.
			kids.waitStart(p, 3*time.Second)
			time.Sleep(time.Duration(rnd.IntN(300)) * time.Millisecond) // a random kill time
		}
		require.False(t, p.gone(), "fleet controller %d (pid %s) ended by itself before its kill: %v", i+1, p.pid, p.err)
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
		<-p.exited
		inFlight, done := fl.now()
		t.Logf("kill %d at %v: pid %s ready after %v, killed after %v, started %v; %d in flight, %d of %d at %s",
			i+1, time.Since(t0).Round(time.Millisecond), p.pid, up.Round(time.Millisecond), p.lived().Round(time.Millisecond), kids.startsOf(p.pid), inFlight, done, clusters, target)
	}
	_, doneAtLastKill := fl.now()
	startedAtLastKill := fl.startedCount()
	last := kids.start()
	var ur v1alpha1.UpgradeRollout
	deadline := time.Now().Add(90 * time.Second)
	for {
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "to-v26.06"}, &ur))
		if _, done := fl.now(); ur.Status.Phase == "Completed" && done == clusters {
			break
		}
		require.False(t, last.gone(), "the last fleet controller (pid %s) ended by itself: %v", last.pid, last.err)
		require.True(t, time.Now().Before(deadline), "UpgradeRollout %s/to-v26.06 not Completed 90s after the last kill: %+v", ns, ur.Status)
		time.Sleep(50 * time.Millisecond)
	}
	changes, peak := fl.seen()
	t.Logf("completed %v after the first child started; %d changes of the ClusterVersions seen, at most %d in flight; at the last kill %d of %d started, %d at the target; the last controller started %v",
		time.Since(t0).Round(time.Millisecond), changes, peak, startedAtLastKill, clusters, doneAtLastKill, kids.startsOf(last.pid))

	// (1) never more than maxConcurrency in flight.
	fl.mu.Lock()
	assert.Empty(t, fl.over, "moments with more than maxConcurrency %d ClusterVersions in flight", limit)
	assert.Equal(t, limit, fl.peak, "at most maxConcurrency in flight, and that many at some moment (the limit was exercised)")
	assert.Empty(t, fl.restarted, "ClusterVersions started twice")
	assert.Empty(t, fl.split, "targets set without the rollout's annotations (not in one patch)")
	fl.mu.Unlock()
	assert.LessOrEqual(t, runs.overlap(), limit, "ClusterVersions running components at once, by this test's runner")
	// (2) each component of each ClusterVersion ran once.
	assert.Empty(t, runs.twice(), "(cluster, hop, component) that ran more than once")
	// (3) the rollout completed, every ClusterVersion at the target.
	assert.True(t, meta.IsStatusConditionTrue(ur.Status.Conditions, "Completed"), "Completed condition: %+v", ur.Status.Conditions)
	assert.Equal(t, clusters, ur.Status.Counts.Succeeded, "succeeded")
	var cvs v1alpha1.ClusterVersionList
	require.NoError(t, c.List(ctx, &cvs, client.InNamespace(ns)))
	require.Len(t, cvs.Items, clusters)
	for _, cv := range cvs.Items {
		assert.Equal(t, target, cv.Status.CurrentVersion, "%s: status.currentVersion", cv.Name)
		assert.Equal(t, v1alpha1.PhaseIdle, cv.Status.Phase, "%s: status.phase", cv.Name)
		assert.Equal(t, []int{0, 1}, runs.hopsOf(cv.Name), "%s: the hops its components ran in (v26.06-rc.2 -> rc.3 -> v26.06)", cv.Name)
	}
	// The kills hit a moving rollout.
	assert.Less(t, doneAtLastKill, clusters, "the rollout was over before the last kill: the kills proved nothing (lengthen the components)")
	assert.GreaterOrEqual(t, startedAtLastKill, 3, "ClusterVersions the killed controllers started")
}

// runs is the simulated runner of every ClusterVersion: a component
// takes 100 to 300 ms (drawn from the seed, the cluster, the hop and the
// component), and each run is recorded.
type runs struct {
	seed uint64
	t0   time.Time

	mu     sync.Mutex
	count  map[string]int   // "CLUSTER HOP COMPONENT": runs begun
	hops   map[string][]int // cluster: the hops of its components, sorted
	first  map[string]time.Duration
	latest map[string]time.Duration // cluster: its last component's end
}

func newRuns(seed uint64) *runs {
	return &runs{seed: seed, t0: time.Now(), count: map[string]int{}, hops: map[string][]int{}, first: map[string]time.Duration{}, latest: map[string]time.Duration{}}
}

func (r *runs) runnerFor(k types.NamespacedName, _ *rest.Config) (runner.Runner, error) {
	return runner.RunnerFunc(func(ctx context.Context, task runner.Task) error {
		key := fmt.Sprintf("%s %d %s", k.Name, task.HopIndex, task.Component)
		h := fnv.New64a()
		_, _ = h.Write([]byte(key))
		delay := time.Duration(100+rand.New(rand.NewPCG(r.seed, h.Sum64())).IntN(201)) * time.Millisecond
		r.mu.Lock()
		r.count[key]++
		if !slices.Contains(r.hops[k.Name], task.HopIndex) {
			r.hops[k.Name] = append(r.hops[k.Name], task.HopIndex)
			slices.Sort(r.hops[k.Name])
		}
		if _, ok := r.first[k.Name]; !ok {
			r.first[k.Name] = time.Since(r.t0)
		}
		r.mu.Unlock()
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
		r.mu.Lock()
		r.latest[k.Name] = time.Since(r.t0)
		r.mu.Unlock()
		return nil
	}), nil
}

// twice lists the components that ran more than once, sorted.
func (r *runs) twice() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k, n := range r.count {
		if n > 1 {
			out = append(out, fmt.Sprintf("%s: %d runs", k, n))
		}
	}
	slices.Sort(out)
	return out
}

func (r *runs) hopsOf(cluster string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.hops[cluster])
}

// overlap is the most clusters whose runs overlapped: a cluster runs
// from its first component's start to its last one's end.
func (r *runs) overlap() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	type edge struct {
		at    time.Duration
		delta int
	}
	var edges []edge
	for k, from := range r.first {
		edges = append(edges, edge{from, 1}, edge{r.latest[k], -1})
	}
	// At equal times an end comes first: touching runs do not overlap.
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.delta - b.delta
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// fleetChildren starts the fleet controller processes of a test and reads
// their log.
type fleetChildren struct {
	t           *testing.T
	ns, kc, log string
}

// fleetProc is a fleet controller process.
type fleetProc struct {
	cmd    *exec.Cmd
	pid    string
	begun  time.Time
	exited chan struct{} // closed when it ended; err is then its Wait error
	ended  time.Time
	err    error
}

func (p *fleetProc) gone() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// lived is how long p ran, until now if it runs still.
func (p *fleetProc) lived() time.Duration {
	if p.gone() {
		return p.ended.Sub(p.begun)
	}
	return time.Since(p.begun)
}

// newFleetChildren writes the kubeconfig of the test's API server for
// the children of namespace ns.
func newFleetChildren(t *testing.T, ns string) *fleetChildren {
	dir := t.TempDir()
	k := &fleetChildren{t: t, ns: ns, kc: filepath.Join(dir, "kubeconfig"), log: filepath.Join(dir, "fleet.log")}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	require.NoError(t, clientcmd.WriteToFile(*kc, k.kc))
	t.Cleanup(func() {
		if data, err := os.ReadFile(k.log); err == nil && t.Failed() {
			t.Logf("the fleet controllers' log:\n%s", data)
		}
	})
	return k
}

// start runs a fleet controller process.
func (k *fleetChildren) start() *fleetProc {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envFleetChild+"="+k.kc, envFleetNS+"="+k.ns, envFleetLog+"="+k.log)
	cmd.Stderr = os.Stderr
	require.NoError(k.t, cmd.Start())
	p := &fleetProc{cmd: cmd, pid: strconv.Itoa(cmd.Process.Pid), begun: time.Now(), exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		p.ended = time.Now()
		close(p.exited)
	}()
	k.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// fleetLine is a line of the children's log.
type fleetLine struct {
	Msg     string `json:"msg"`
	PID     int    `json:"pid"`
	Cluster string `json:"clusterversion"`
}

func (k *fleetChildren) lines() []fleetLine {
	f, err := os.Open(k.log)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(k.t, err)
	defer f.Close()
	var out []fleetLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l fleetLine
		// A child killed mid-write leaves a partial last line: skip it.
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

// waitReady waits until p says its caches are synced.
func (k *fleetChildren) waitReady(p *fleetProc, timeout time.Duration) {
	k.t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, l := range k.lines() {
			if strconv.Itoa(l.PID) == p.pid && l.Msg == "ready" {
				return
			}
		}
		require.False(k.t, p.gone(), "fleet controller %s ended before it was ready: %v", p.pid, p.err)
	}
	k.t.Fatalf("fleet controller %s not ready within %v", p.pid, timeout)
}

// waitStart waits until p logs a start, or for timeout: it may start
// none.
func (k *fleetChildren) waitStart(p *fleetProc, timeout time.Duration) {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline) && !p.gone(); time.Sleep(10 * time.Millisecond) {
		if len(k.startsOf(p.pid)) > 0 {
			return
		}
	}
}

// startsOf names the ClusterVersions the process pid logged as started,
// in order: one killed between a start's patch and its log line started
// one more.
func (k *fleetChildren) startsOf(pid string) []string {
	out := []string{}
	for _, l := range k.lines() {
		if strconv.Itoa(l.PID) == pid && l.Msg == "fleet: started" {
			out = append(out, l.Cluster)
		}
	}
	return out
}
