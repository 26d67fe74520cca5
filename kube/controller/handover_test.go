package controller_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/kube/store"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// The handover tests run the controller as separate OS processes: this test
// binary, re-executed with HOPDAG_CHILD set, runs childMain instead of the
// tests. A child logs "start HOP COMPONENT TIME PID" before and "done HOP
// COMPONENT TIME PID" after each component (O_APPEND, one write per line).
const (
	envChild      = "HOPDAG_CHILD"       // the kubeconfig file
	envNamespace  = "HOPDAG_CHILD_NS"    // where the ClusterVersion is
	envLog        = "HOPDAG_CHILD_LOG"   // the log of components run
	envSelfUpdate = "HOPDAG_CHILD_SELF"  // "HOP COMPONENT" whose success ends the process
	envDelay      = "HOPDAG_CHILD_DELAY" // how long each component takes
)

// selfName is the component that upgrades the controller itself: provider
// on hop 2 (v26.06-rc.3 -> v26.06), in the middle of the plan.
const selfName = "1 provider"

func childMain() {
	if err := child(); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
}

func child() error {
	ctrl.SetLogger(discardLogger())
	kc, err := os.ReadFile(os.Getenv(envChild))
	if err != nil {
		return err
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return err
	}
	// kube/store makes a few requests per checkpoint: client-go's default
	// of 5 requests a second would throttle the run.
	rc.QPS, rc.Burst = 200, 400
	ns := os.Getenv(envNamespace)
	lease, renew, retry := 1500*time.Millisecond, time.Second, 100*time.Millisecond
	mgr, err := ctrl.NewManager(rc, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller:     config.Controller{SkipNameValidation: new(true)},
		LeaderElection: true, LeaderElectionID: "hopdag-handover", LeaderElectionNamespace: ns,
		LeaseDuration: &lease, RenewDeadline: &renew, RetryPeriod: &retry,
	})
	if err != nil {
		return err
	}
	direct, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	st := store.New(direct, ns, "hopdag-cluster")
	logf, err := os.OpenFile(os.Getenv(envLog), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	delay, err := time.ParseDuration(os.Getenv(envDelay))
	if err != nil {
		return err
	}
	var (
		once     sync.Once
		replaced atomic.Bool // the self-upgrade is done: this controller is on its way out
	)
	rn := runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		name := fmt.Sprintf("%d %s", t.HopIndex, t.Component)
		if replaced.Load() {
			// A controller whose replacement is rolling out starts nothing
			// more (its pod is terminating); on a loaded machine it could
			// otherwise finish the plan before its exit, and the test would
			// show no handover.
			<-ctx.Done()
			return ctx.Err()
		}
		fmt.Fprintf(logf, "start %s %s %d\n", name, time.Now().Format("15:04:05.000"), os.Getpid())
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
		fmt.Fprintf(logf, "done %s %s %d\n", name, time.Now().Format("15:04:05.000"), os.Getpid())
		if name == os.Getenv(envSelfUpdate) {
			// The new controller replaces this one once the success is durable.
			once.Do(func() {
				replaced.Store(true)
				go exitWhenDurable(st, t.HopIndex, t.Component)
			})
		}
		return nil
	})
	r := controller.New(mgr.GetClient(), rn, func(types.NamespacedName) (state.Store, state.Lock) { return st, st },
		controller.WithExecutorOptions(checks()...), controller.WithManifests(os.DirFS(catalogDir)),
		controller.WithLeaseTTL(2*time.Second), controller.WithStatusInterval(200*time.Millisecond))
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	return mgr.Start(context.Background())
}

func exitWhenDurable(st *store.Store, hop int, component string) {
	for {
		if s, err := st.Load(context.Background()); err == nil && s != nil {
			if c, ok := s.Component(hop, component); ok && c.Phase == runner.Succeeded {
				os.Exit(0)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// handover is one test's processes and their shared log.
type handover struct {
	t          *testing.T
	ns, kc, lg string
}

func newHandover(t *testing.T) (*handover, client.Client, client.ObjectKey) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	user, err := testEnv.ControlPlane.AddUser(envtest.User{Name: "operator", Groups: []string{"system:masters"}}, nil)
	require.NoError(t, err)
	kc, err := user.KubeConfig()
	require.NoError(t, err)
	dir := t.TempDir()
	h := &handover{t: t, ns: ns, kc: filepath.Join(dir, "kubeconfig"), lg: filepath.Join(dir, "components.log")}
	require.NoError(t, os.WriteFile(h.kc, kc, 0o600))
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(context.Background(), cv))
	return h, c, client.ObjectKeyFromObject(cv)
}

// start runs a controller process.
func (h *handover) start(self string, delay time.Duration) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+h.kc, envNamespace+"="+h.ns, envLog+"="+h.lg, envSelfUpdate+"="+self, envDelay+"="+delay.String())
	cmd.Stderr = os.Stderr
	require.NoError(h.t, cmd.Start())
	h.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	return cmd
}

// pids reads the process id of each line of the log, in order.
func (h *handover) pids() []string {
	data, err := os.ReadFile(h.lg)
	require.NoError(h.t, err)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(l)
		out = append(out, f[len(f)-1])
	}
	return out
}

// lines reads the log as (verb, "HOP COMPONENT") pairs in order.
func (h *handover) lines() [][2]string {
	f, err := os.Open(h.lg)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(h.t, err)
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text()) // verb, hop, component, time, pid
		out = append(out, [2]string{f[0], f[1] + " " + f[2]})
	}
	return out
}

// waitForStart waits until the log has a start line after its first n
// lines.
func (h *handover) waitForStart(n int, timeout time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		lines := h.lines()
		for _, l := range lines[min(n, len(lines)):] {
			if l[0] == "start" {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Fatalf("no controller started a component within %v", timeout)
}

// waitForDurable waits until more than n successes are durable.
func waitForDurable(t *testing.T, h *handover, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if len(durableSuccesses(t, h)) > n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no new success was recorded within %v", timeout)
}

// TestSelfUpgradeHandover: the plan's self-upgrade component ends the
// controller process; a new process resumes from kube/store. The
// self-upgrade ran once and nothing that succeeded ran again.
func TestSelfUpgradeHandover(t *testing.T) {
	h, c, key := newHandover(t)
	t0 := time.Now()
	first := h.start(selfName, 100*time.Millisecond)
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	// The new controller starts while the old one still runs (a rolling
	// update's surge): it must not act before the old one is gone.
	h.waitForStart(0, 90*time.Second)
	h.start("", 100*time.Millisecond)
	select {
	case err := <-exited:
		require.NoError(t, err, "the first controller exits by itself after the self-upgrade")
	case <-time.After(90 * time.Second):
		t.Fatal("the first controller did not exit after the self-upgrade component")
	}
	handedOver := len(h.lines())
	durable := durableSuccesses(t, h)
	require.True(t, durable[selfName], "the self-upgrade's success was durable when its process ended")
	t.Logf("the first controller exited after %v", time.Since(t0))
	var cv v1alpha1.ClusterVersion
	require.NoError(t, c.Get(context.Background(), key, &cv))
	require.NotEqual(t, "v26.09", cv.Status.CurrentVersion, "the handover happened mid-plan")

	waitFor(t, c, key, 90*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	lines := h.lines()
	// Never two controllers at once: every line of the first process comes
	// before every line of the second.
	pids := h.pids()
	firstPID := strconv.Itoa(first.Process.Pid)
	for i, p := range pids {
		if p != firstPID && i+1 < len(pids) {
			assert.NotContains(t, pids[i+1:], firstPID, "the first controller acted after the second had started acting (line %d)", i+1)
			break
		}
	}
	starts := map[string]int{}
	for i, l := range lines {
		if l[0] != "start" {
			continue
		}
		starts[l[1]]++
		// A component whose end the first process did not record before
		// exiting runs again; one recorded as succeeded never does.
		if i >= handedOver {
			assert.False(t, durable[l[1]], "%s started again after its success was recorded", l[1])
		}
	}
	assert.Equal(t, 1, starts[selfName], "the self-upgrade component ran exactly once")
	assert.Greater(t, len(lines), handedOver, "the second controller did the rest")
}

// TestSIGKILLResumes kills the controller with SIGKILL at random moments,
// ten times, starting a new one each time: a component recorded as
// succeeded in the store is never started again, and the upgrade ends.
func TestSIGKILLResumes(t *testing.T) {
	h, c, key := newHandover(t)
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	durable := map[string]bool{}
	checkedLines := 0
	const total = 19 // components of the three hops
	for i := range 10 {
		p := h.start("", time.Second)
		// The new controller acts once the killed one's leader Lease ran
		// out (1.5s) and it has started (a while on a loaded machine).
		// Every other kill comes at a random moment of its first second
		// of work (components take 1s each: mid-component); the others
		// a random moment of the half second after it recorded a new
		// success (mid-checkpoint, or about to start the next). So the
		// kills hit a moving upgrade whatever the machine's speed.
		h.waitForStart(len(h.lines()), 90*time.Second)
		if i%2 == 1 {
			waitForDurable(t, h, len(durable), 90*time.Second)
			time.Sleep(time.Duration(rnd.IntN(500)) * time.Millisecond)
		} else {
			time.Sleep(time.Duration(rnd.IntN(1000)) * time.Millisecond)
		}
		require.NoError(t, p.Process.Signal(syscall.SIGKILL))
		_, _ = p.Process.Wait()
		// Starts since the last kill must not name a durable success.
		lines := h.lines()
		for _, l := range lines[checkedLines:] {
			if l[0] == "start" {
				assert.False(t, durable[l[1]], "kill %d: %s started again after its success was recorded", i, l[1])
			}
		}
		checkedLines = len(lines)
		durable = durableSuccesses(t, h)
	}
	h.start("", time.Second)
	waitFor(t, c, key, 120*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	for _, l := range h.lines()[checkedLines:] {
		if l[0] == "start" {
			assert.False(t, durable[l[1]], "%s started again after its success was recorded", l[1])
		}
	}
	t.Logf("10 SIGKILLs; %d of %d component successes were durable before the last controller started", len(durable), total)
	assert.GreaterOrEqual(t, len(durable), 5, "the kills hit a moving upgrade: successes were recorded between them")
	assert.Less(t, len(durable), total, "the last controller had work left: the kills came mid-upgrade")
}

// durableSuccesses reads the components recorded as succeeded in the run's
// kube/store record, as "HOP COMPONENT".
func durableSuccesses(t *testing.T, h *handover) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	s, err := store.New(newClient(t), h.ns, "hopdag-cluster").Load(context.Background())
	require.NoError(t, err)
	if s == nil {
		return out
	}
	for hi, hop := range s.Hops {
		for _, cs := range hop.Components {
			if cs.Phase == runner.Succeeded {
				out[fmt.Sprintf("%d %s", hi, cs.Name)] = true
			}
		}
	}
	return out
}
