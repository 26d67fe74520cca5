package controller_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
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
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/kube/store"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// The handover tests run the controller as separate OS processes: this test
// binary, re-executed with HOPDAG_CHILD set, runs childMain instead of the
// tests. A child logs "start HOP COMPONENT TIME PID" before and "done HOP
// COMPONENT TIME PID" after each component, "begin TOKEN - TIME PID N"
// before and "write TOKEN RESULT TIME PID N" after each Save or Commit of
// the run's record (N numbers the process's writes) and "refresh TOKEN
// RESULT TIME PID" after each refresh of its lease that failed (RESULT is
// ok, fenced or error; O_APPEND, one write per line). On SIGCONT a child tries
// one Save of the stored record under the last token it wrote with: a
// paused leader's first write once it runs again.
const (
	envChild      = "HOPDAG_CHILD"       // the kubeconfig file
	envNamespace  = "HOPDAG_CHILD_NS"    // where the ClusterVersion is
	envLog        = "HOPDAG_CHILD_LOG"   // the log of components run
	envSelfUpdate = "HOPDAG_CHILD_SELF"  // "HOP COMPONENT" whose success ends the process
	envDelay      = "HOPDAG_CHILD_DELAY" // how long each component takes
	// envNoLock, set to 1 in the test's environment (the children inherit
	// it), breaks mutual exclusion to show that the tests' assertions
	// catch two controllers acting at once: no leader election, and a
	// store lock whose Acquire deletes the holder's Lease first (fencing
	// stays: the holder's next write is refused).
	envNoLock = "HOPDAG_CHILD_NOLOCK"
)

// selfName is the component that upgrades the controller itself: provider
// on hop 2 (v26.06-rc.3 -> v26.06), in the middle of the plan.
const selfName = "1 provider"

func childMain() {
	if err := child(); err != nil {
		// A paused leader that runs again may see its leader election lost
		// (and return here) while its SIGCONT hook's write is in flight:
		// that write, refused, is what the stale-leader test looks for.
		awaitContHook(2 * time.Second)
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
}

// The SIGCONT hook runs under contMu; contSeen says it has started.
var (
	contMu   sync.Mutex
	contSeen atomic.Bool
)

// awaitContHook waits up to d for a SIGCONT hook to start, then for it to
// end.
func awaitContHook(d time.Duration) {
	for deadline := time.Now().Add(d); !contSeen.Load() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	contMu.Lock()
	defer contMu.Unlock()
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
	noLock := os.Getenv(envNoLock) == "1"
	lease, renew, retry := 1500*time.Millisecond, time.Second, 100*time.Millisecond
	// The child watches its own namespace only: its store is that of the
	// test's ClusterVersion, and a ClusterVersion of another test (one
	// deleted while its operator was stopping, left Terminating with the
	// finalizer) would otherwise be finalized with it, removing this
	// test's record mid-run.
	mgr, err := ctrl.NewManager(rc, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:          cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller:     config.Controller{SkipNameValidation: new(true)},
		LeaderElection: !noLock, LeaderElectionID: "hopdag-handover", LeaderElectionNamespace: ns,
		LeaseDuration: &lease, RenewDeadline: &renew, RetryPeriod: &retry,
	})
	if err != nil {
		return err
	}
	direct, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	st, err := store.New(direct, ns, "hopdag-cluster")
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(os.Getenv(envLog), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	ls := &loggedStore{Store: st, log: logf}
	var lock state.Lock = ls
	if noLock {
		lock = &stealingLock{loggedStore: ls, c: direct, key: client.ObjectKey{Namespace: ns, Name: "hopdag-cluster"}}
	}
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	go func() {
		for range cont {
			contMu.Lock()
			contSeen.Store(true)
			ls.staleWrite()
			contMu.Unlock()
		}
	}()
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
	r := controller.New(mgr.GetClient(), rn, func(key types.NamespacedName) (state.Store, state.Lock, error) {
		if key.Namespace != ns {
			return nil, nil, fmt.Errorf("child: no store for %s outside namespace %s", key, ns)
		}
		return ls, lock, nil
	},
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
			if c, ok := s.Component(hop, component); ok && c.Phase == record.Succeeded {
				os.Exit(0)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// loggedStore is the child's store: it logs the outcome of every write of
// the run's record, and of every failed lease refresh.
type loggedStore struct {
	*store.Store
	log    *os.File
	token  atomic.Uint64 // the last token written with
	writes atomic.Uint64 // writes begun
}

func (s *loggedStore) Save(ctx context.Context, token uint64, st *record.Status) error {
	n := s.begin(token)
	err := s.Store.Save(ctx, token, st)
	s.note("write", token, err, n)
	return err
}

func (s *loggedStore) Commit(ctx context.Context, token uint64, st *record.Status, changed []record.Ref) error {
	n := s.begin(token)
	err := s.Store.Commit(ctx, token, st, changed)
	s.note("write", token, err, n)
	return err
}

// begin logs the start of a write and returns its number. A write's line
// comes when it returns; a leader paused with a write in flight logs it
// when it runs again, after the writes of the next leader, though the API
// server took it before them: its begin line says it was in flight.
func (s *loggedStore) begin(token uint64) string {
	n := strconv.FormatUint(s.writes.Add(1), 10)
	fmt.Fprintf(s.log, "begin %d - %s %d %s\n", token, time.Now().Format("15:04:05.000"), os.Getpid(), n)
	return n
}

func (s *loggedStore) Refresh(ctx context.Context, l state.Lease) (state.Lease, error) {
	n, err := s.Store.Refresh(ctx, l)
	if err != nil {
		s.note("refresh", l.Token, err, "")
	}
	return n, err
}

// note logs the outcome of a write (numbered n) or a refresh.
func (s *loggedStore) note(verb string, token uint64, err error, n string) {
	if verb == "write" {
		s.token.Store(token)
	}
	result := "ok"
	switch {
	case errors.Is(err, state.ErrFenced):
		result = "fenced"
	case err != nil:
		result = "error"
		fmt.Fprintf(os.Stderr, "child %d: %s under token %d: %v\n", os.Getpid(), verb, token, err)
	}
	fmt.Fprintf(s.log, "%s %d %s %s %d %s\n", verb, token, result, time.Now().Format("15:04:05.000"), os.Getpid(), n)
}

// staleWrite saves the stored record again under the last token written
// with, as a leader that was paused would write next.
func (s *loggedStore) staleWrite() {
	token := s.token.Load()
	if token == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := s.Load(ctx)
	if err != nil || st == nil {
		return
	}
	_ = s.Save(ctx, token, st)
}

// stealingLock is the broken lock of envNoLock: it takes the store's
// Lease from whoever holds it.
type stealingLock struct {
	*loggedStore
	c   client.Client
	key client.ObjectKey
}

func (l *stealingLock) Acquire(ctx context.Context, holder string, ttl time.Duration) (state.Lease, error) {
	_ = l.c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: l.key.Namespace, Name: l.key.Name}})
	return l.loggedStore.Acquire(ctx, holder, ttl)
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
	t.Cleanup(func() {
		if data, err := os.ReadFile(h.lg); err == nil && t.Failed() {
			t.Logf("the controllers' log:\n%s", data)
		}
	})
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(context.Background(), cv))
	return h, c, client.ObjectKeyFromObject(cv)
}

// proc is a controller process.
type proc struct {
	cmd    *exec.Cmd
	pid    string
	exited chan struct{} // closed when it ended; err is then its Wait error
	err    error
}

// gone reports whether the process ended.
func (p *proc) gone() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// start runs a controller process.
func (h *handover) start(self string, delay time.Duration) *proc {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+h.kc, envNamespace+"="+h.ns, envLog+"="+h.lg, envSelfUpdate+"="+self, envDelay+"="+delay.String())
	cmd.Stderr = os.Stderr
	require.NoError(h.t, cmd.Start())
	p := &proc{cmd: cmd, pid: strconv.Itoa(cmd.Process.Pid), exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	h.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// entry is a line of the log.
type entry struct {
	verb string // start, done, begin, write or refresh
	what string // "HOP COMPONENT"; "TOKEN RESULT" for begin, write and refresh
	pid  string
	n    string // the number of a begin or write in its process
}

// token and result split the what of a write or refresh.
func (e entry) token() uint64 {
	n, _ := strconv.ParseUint(strings.Fields(e.what)[0], 10, 64)
	return n
}

func (e entry) result() string { return strings.Fields(e.what)[1] }

// lines reads the log in order.
func (h *handover) lines() []entry {
	f, err := os.Open(h.lg)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(h.t, err)
	defer f.Close()
	var out []entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text()) // verb, hop, component, time, pid[, n]
		e := entry{verb: f[0], what: f[1] + " " + f[2], pid: f[4]}
		if len(f) > 5 {
			e.n = f[5]
		}
		out = append(out, e)
	}
	return out
}

// waitForLine waits until a line after the log's first n satisfies ok, and
// returns its index.
func (h *handover) waitForLine(n int, timeout time.Duration, what string, ok func(entry) bool) int {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		lines := h.lines()
		for i := n; i < len(lines); i++ {
			if ok(lines[i]) {
				return i
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Fatalf("no %s within %v", what, timeout)
	return 0
}

// waitForStart waits until the log has a start line after its first n
// lines.
func (h *handover) waitForStart(n int, timeout time.Duration) {
	h.t.Helper()
	h.waitForLine(n, timeout, "controller started a component", func(e entry) bool { return e.verb == "start" })
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

// interleaved checks that the processes' lines never interleave: once a
// process's line follows another's, the other logs nothing more. It
// returns the first line that breaks this (-1 if none) and its process.
func interleaved(lines []entry) (int, string) {
	ended := map[string]bool{}
	for i, l := range lines {
		if ended[l.pid] {
			return i, l.pid
		}
		if i > 0 && lines[i-1].pid != l.pid {
			ended[lines[i-1].pid] = true
		}
	}
	return -1, ""
}

// acts keeps the lines of actions: component starts and ends, and
// accepted writes (a refused one is the fence at work, not an action).
func acts(lines []entry) []entry {
	var out []entry
	for _, l := range lines {
		if l.verb == "start" || l.verb == "done" || l.verb == "write" && l.result() == "ok" {
			out = append(out, l)
		}
	}
	return out
}

// staleWrite finds a successful write under a lower token than one that
// succeeded before it began (-1 if none): the record went back to a
// superseded holder. A write that began before the greater token's write
// returned may have landed before it (a paused leader's write in flight);
// a write without a begin line began at its own line.
func staleWrite(lines []entry) int {
	var top uint64
	topAt := -1 // the line of the first accepted write under top
	began := map[string]int{}
	for i, l := range lines {
		if l.verb == "begin" {
			began[l.pid+" "+l.n] = i
			continue
		}
		if l.verb != "write" || l.result() != "ok" {
			continue
		}
		switch b, ok := began[l.pid+" "+l.n]; {
		case l.token() > top:
			top, topAt = l.token(), i
		case l.token() == top:
		case !ok || l.n == "" || b > topAt:
			return i
		}
	}
	return -1
}

// assertOneAtATime asserts that the log shows one controller acting at a
// time and the record never written under a superseded token.
func assertOneAtATime(t *testing.T, lines []entry) {
	t.Helper()
	acted := acts(lines)
	if i, pid := interleaved(acted); i >= 0 {
		t.Errorf("process %s acted (action %d: %s %s) after another had started acting", pid, i+1, acted[i].verb, acted[i].what)
	}
	if i := staleWrite(lines); i >= 0 {
		t.Errorf("line %d: the record was written under token %d after a greater token wrote it", i+1, lines[i].token())
	}
}

// TestSelfUpgradeInterleaveCheck: the checks of assertOneAtATime fail on
// logs of two controllers at once, and of a superseded holder's write.
func TestSelfUpgradeInterleaveCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []entry
		inter int
		stale int
	}{
		{"one after another", []entry{{"start", "0 a", "1", ""}, {"write", "1 ok", "1", ""}, {"start", "0 b", "2", ""}, {"write", "2 ok", "2", ""}}, -1, -1},
		{"first acts again", []entry{{"start", "0 a", "1", ""}, {"start", "0 b", "2", ""}, {"done", "0 a", "1", ""}}, 2, -1},
		{"alternating", []entry{{"start", "0 a", "1", ""}, {"start", "0 b", "2", ""}, {"start", "0 c", "1", ""}, {"start", "0 d", "2", ""}}, 2, -1},
		{"fenced write of the old", []entry{{"write", "1 ok", "1", ""}, {"write", "2 ok", "2", ""}, {"write", "1 fenced", "2", ""}}, -1, -1},
		{"refused refresh and write of the old", []entry{{"start", "0 a", "1", ""}, {"start", "0 b", "2", ""}, {"refresh", "1 fenced", "1", ""}, {"write", "1 fenced", "1", ""}}, -1, -1},
		{"accepted write of the old", []entry{{"start", "0 a", "1", ""}, {"start", "0 b", "2", ""}, {"write", "1 ok", "1", ""}}, 2, -1},
		{"old token lands after new", []entry{{"write", "1 ok", "1", ""}, {"write", "2 ok", "2", ""}, {"write", "1 ok", "2", ""}}, -1, 2},
		{"old token's write in flight when the new wrote", []entry{{"begin", "1 -", "1", "1"}, {"write", "2 ok", "2", "1"}, {"write", "1 ok", "1", "1"}}, -1, -1},
		{"old token's write begun after the new wrote", []entry{{"begin", "1 -", "1", "1"}, {"write", "1 ok", "1", "1"}, {"write", "2 ok", "2", "1"}, {"begin", "1 -", "1", "2"}, {"write", "1 ok", "1", "2"}}, 2, 4},
		{"old token's write begun after the new began", []entry{{"begin", "2 -", "2", "1"}, {"begin", "1 -", "1", "1"}, {"write", "2 ok", "2", "1"}, {"write", "1 ok", "1", "1"}}, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, _ := interleaved(acts(tc.lines))
			assert.Equal(t, tc.inter, i)
			assert.Equal(t, tc.stale, staleWrite(tc.lines))
		})
	}
}

// TestSelfUpgradeHandover: the plan's self-upgrade component ends the
// controller process; a new process resumes from kube/store. The
// self-upgrade ran once and nothing that succeeded ran again.
func TestSelfUpgradeHandover(t *testing.T) {
	h, c, key := newHandover(t)
	t0 := time.Now()
	first := h.start(selfName, 100*time.Millisecond)
	// The new controller starts while the old one still runs (a rolling
	// update's surge): it must not act before the old one is gone.
	h.waitForStart(0, 90*time.Second)
	h.start("", 100*time.Millisecond)
	select {
	case <-first.exited:
		require.NoError(t, first.err, "the first controller exits by itself after the self-upgrade")
	case <-time.After(90 * time.Second):
		t.Fatal("the first controller did not exit after the self-upgrade component")
	}
	handedOver := len(h.lines())
	assertOneAtATime(t, h.lines())
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
	assertOneAtATime(t, lines)
	starts := map[string]int{}
	for i, l := range lines {
		if l.verb != "start" {
			continue
		}
		starts[l.what]++
		// A component whose end the first process did not record before
		// exiting runs again; one recorded as succeeded never does.
		if i >= handedOver {
			assert.False(t, durable[l.what], "%s started again after its success was recorded", l.what)
		}
	}
	assert.Equal(t, 1, starts[selfName], "the self-upgrade component ran exactly once")
	assert.Greater(t, len(lines), handedOver, "the second controller did the rest")
}

// TestSIGKILLResumes kills the controller with SIGKILL at random moments,
// ten times, each time after starting its successor (which waits for the
// leader Lease and the store's lock meanwhile). Every controller has the
// self-upgrade component: the one that runs it exits by itself once its
// success is durable, and the next takes over. A component recorded as
// succeeded in the store is never started again, the controllers never
// act at once, the self-upgrade succeeded exactly once, and the upgrade
// ends.
func TestSIGKILLResumes(t *testing.T) {
	h, c, key := newHandover(t)
	t0 := time.Now()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	durable := map[string]bool{}
	checkedLines := 0
	const total = 19 // components of the three hops
	// selfExits counts the processes the self-upgrade ended; selfRedone
	// the self-upgrade successes a kill lost (it came after the component
	// logged done and before its success was durable: it runs again).
	// selfKilled the kills that came after it was durable, before its
	// process exited by itself.
	// steppedDown the controllers that ended by themselves otherwise
	// (leader election lost on a loaded machine).
	selfExits, selfRedone, selfKilled, kills, steppedDown := 0, 0, 0, 0, 0
	// doneSelf reports whether p logged the self-upgrade's success.
	doneSelf := func(p *proc) bool {
		for _, l := range h.lines() {
			if l.pid == p.pid && l.verb == "done" && l.what == selfName {
				return true
			}
		}
		return false
	}
	cur := h.start(selfName, time.Second)
	for i := 0; kills < 10; i++ {
		// Components take 1s each. The next controller starts as soon as
		// this one acts (a rolling update's surge): it acts once this
		// one's leader Lease (1.5s) and store lease (2s) ran out. Every
		// other kill comes at a random moment of the second after this
		// one started a component (mid-component); the others a random
		// moment of the half second after it recorded a new success
		// (mid-checkpoint, or about to start the next). So the kills hit
		// a moving upgrade whatever the machine's speed.
		h.waitForLine(checkedLines, 90*time.Second, "start of the controller "+cur.pid, func(e entry) bool {
			return e.pid == cur.pid && e.verb == "start"
		})
		next := h.start(selfName, time.Second)
		if i%2 == 1 {
			waitForDurable(t, h, len(durable), 90*time.Second)
			time.Sleep(time.Duration(rnd.IntN(500)) * time.Millisecond) // a random kill time, not a wait for an event
		} else {
			time.Sleep(time.Duration(rnd.IntN(1000)) * time.Millisecond) // a random kill time
		}
		if doneSelf(cur) {
			// It is on its way out by itself: let it go.
			select {
			case <-cur.exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("controller %s did not exit after the self-upgrade", cur.pid)
			}
		} else if !cur.gone() {
			_ = cur.cmd.Process.Signal(syscall.SIGKILL) // it may have ended by itself just now
		}
		<-cur.exited
		switch {
		case cur.err == nil:
			selfExits++
		case killed(cur):
			kills++
		default:
			steppedDown++
		}
		// Starts since the last check must not name a durable success.
		lines := h.lines()
		for _, l := range lines[checkedLines:] {
			if l.verb == "start" {
				assert.False(t, durable[l.what], "kill %d: %s started again after its success was recorded", kills, l.what)
			}
		}
		checkedLines = len(lines)
		assertOneAtATime(t, lines) // at each kill too: a failure shows where it began
		durable = durableSuccesses(t, h)
		if killed(cur) && doneSelf(cur) {
			if durable[selfName] {
				selfKilled++
			} else {
				selfRedone++
			}
		}
		cur = next
	}
	lastDurable := len(durable)
	// The last controllers finish; one that runs the self-upgrade ends and
	// another takes over.
	waitFor(t, c, key, 120*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		if cur.gone() {
			if cur.err == nil {
				selfExits++
			} else {
				steppedDown++
			}
			cur = h.start(selfName, time.Second)
		}
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	lines := h.lines()
	for _, l := range lines[checkedLines:] {
		if l.verb == "start" {
			assert.False(t, durable[l.what], "%s started again after its success was recorded", l.what)
		}
	}
	assertOneAtATime(t, lines)
	succeeded := map[string]int{}
	for _, l := range lines {
		if l.verb == "done" {
			succeeded[l.what]++
		}
	}
	final := durableSuccesses(t, h)
	t.Logf("%d SIGKILLs, %d self-upgrade exits and %d other exits in %v; %d of %d component successes were durable before the last controller started; %d self-upgrade successes lost to a kill",
		kills, selfExits, steppedDown, time.Since(t0), lastDurable, total, selfRedone)
	assert.Len(t, final, total, "every component succeeded")
	assert.True(t, final[selfName], "the self-upgrade's success is recorded")
	assert.Equal(t, 1, succeeded[selfName]-selfRedone, "the self-upgrade succeeded exactly once (besides successes a kill lost before they were durable)")
	assert.Equal(t, 1, selfExits+selfKilled, "one controller ended after the self-upgrade (by itself, or killed on its way out)")
	assert.GreaterOrEqual(t, lastDurable, 5, "the kills hit a moving upgrade: successes were recorded between them")
	assert.Less(t, lastDurable, total, "the last controller had work left: the kills came mid-upgrade")
}

// killed reports whether p ended by SIGKILL.
func killed(p *proc) bool {
	ee, ok := errors.AsType[*exec.ExitError](p.err)
	if !ok {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// durableSuccesses reads the components recorded as succeeded in the run's
// kube/store record, as "HOP COMPONENT".
func durableSuccesses(t *testing.T, h *handover) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	s, err := newKubeStore(t, newClient(t), h.ns, "hopdag-cluster").Load(context.Background())
	require.NoError(t, err)
	if s == nil {
		return out
	}
	for hi, hop := range s.Hops {
		for _, cs := range hop.Components {
			if cs.Phase == record.Succeeded {
				out[fmt.Sprintf("%d %s", hi, cs.Name)] = true
			}
		}
	}
	return out
}
