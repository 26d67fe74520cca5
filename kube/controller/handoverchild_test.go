package controller_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

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
