package controller_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/catalog"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/kube/store"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
)

const catalogDir = "../../testdata/catalog"

// The API server of the package's integration tests: started once by
// TestMain with the CRDs and the webhook configuration of kube/config, and
// a manager that serves the Validator.
var (
	testEnv    *envtest.Environment
	cfg        *rest.Config
	skipReason string
	scheme     = newScheme()
)

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" {
		childMain() // a controller process of the handover tests
		return
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		skipReason = `no API server: set KUBEBUILDER_ASSETS to a directory with kube-apiserver, etcd and kubectl (eval "$(tools/env.sh kube)")`
		os.Exit(m.Run())
	}
	ctrl.SetLogger(logr.Discard())
	os.Exit(run(m))
}

func run(m *testing.M) int {
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{"../config/crd"},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{"../config/webhook"}},
	}
	var err error
	cfg, err = testEnv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the API server:", err)
		return 1
	}
	defer func() { _ = testEnv.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wio := &testEnv.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir,
		}),
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err == nil {
		err = controller.NewValidator(mgr.GetAPIReader(), os.DirFS(catalogDir)).SetupWebhookWithManager(mgr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhook manager:", err)
		return 1
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "webhook manager:", err)
		}
	})
	defer wg.Wait()
	defer cancel()
	addr := net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "the webhook server does not answer:", err)
			return 1
		}
	}
	return m.Run()
}

// needAPIServer skips a test without an API server, and fails it in CI.
func needAPIServer(t *testing.T) {
	t.Helper()
	if skipReason == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(skipReason)
	}
	t.Skip(skipReason)
}

func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	return createNamespace(t, c, nil)
}

// createNamespace creates a namespace with labels for t, which the
// operators t starts after watch.
func createNamespace(t *testing.T, c client.Client, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "hopdag-", Labels: labels}}
	require.NoError(t, c.Create(context.Background(), ns))
	testNamespaces.Lock()
	testNamespaces.m[t.Name()] = append(testNamespaces.m[t.Name()], ns.Name)
	testNamespaces.Unlock()
	return ns.Name
}

// testNamespaces are the namespaces each test (by name) created, which
// its operators watch.
var testNamespaces = struct {
	sync.Mutex
	m map[string][]string
}{m: map[string][]string{}}

// watched restricts opts' cache to the namespaces t created before: the
// operator of one test never acts on the ClusterVersions another left
// (one mid-upgrade, which it would resume with this test's runner and
// store, or one deleted while its operator stopped, left Terminating
// with the finalizer, which it would finalize, removing this test's
// record).
func watched(t *testing.T, opts *ctrl.Options) {
	testNamespaces.Lock()
	defer testNamespaces.Unlock()
	nss := testNamespaces.m[t.Name()]
	if len(nss) == 0 {
		// Every namespace would be watched, the ClusterVersions and
		// catalogs earlier tests left too.
		t.Fatalf("startOperator: %s created no namespace before starting the operator; create them first (newNamespace), so the operator watches only those", t.Name())
	}
	opts.Cache.DefaultNamespaces = map[string]cache.Config{}
	for _, ns := range nss {
		opts.Cache.DefaultNamespaces[ns] = cache.Config{}
	}
}

// applyCatalog creates the catalog objects of dir in ns.
func applyCatalog(t *testing.T, c client.Client, ns, dir string) {
	t.Helper()
	objs, err := catalog.ReadDir(dir)
	require.NoError(t, err)
	ctx := context.Background()
	for i := range objs.Releases {
		o := &objs.Releases[i]
		o.Namespace = ns
		require.NoError(t, c.Create(ctx, o))
	}
	for i := range objs.Components {
		o := &objs.Components[i]
		o.Namespace = ns
		require.NoError(t, c.Create(ctx, o))
	}
	for i := range objs.UpgradePaths {
		o := &objs.UpgradePaths[i]
		o.Namespace = ns
		require.NoError(t, c.Create(ctx, o))
	}
}

// checks are the hop checks testdata/catalog names, all passing.
func checks() []runner.Option {
	ok := func(context.Context, runner.CheckTask) error { return nil }
	var out []runner.Option
	for _, n := range []string{"cluster-healthy", "etcd-backup", "nodes-ready", "registry-mirror-reachable", "conformance-smoke"} {
		out = append(out, runner.WithCheck(n, ok))
	}
	return out
}

// memStores gives each ClusterVersion one state.Memory, shared by every
// reconciler built with it (the replicas of one operator).
func memStores() controller.StoreFunc {
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

// operator is one replica: a manager running a Reconciler.
type operator struct {
	r      *controller.Reconciler
	cache  client.Reader // the manager's client, which reads its cache
	runner *runnertest.Runner
	cancel context.CancelFunc
	done   chan struct{}
}

// sees waits until the operator's cache holds obj as written (its
// resourceVersion or a later one): a catalog change the test makes
// before a spec change must be in the cache the decision reads the
// catalog from, or the decision may plan with the catalog before it.
func (o *operator) sees(t *testing.T, obj client.Object) {
	t.Helper()
	cached := obj.DeepCopyObject().(client.Object)
	require.Eventually(t, func() bool {
		if err := o.cache.Get(context.Background(), client.ObjectKeyFromObject(obj), cached); err != nil {
			return false
		}
		c, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), obj.GetResourceVersion())
		return err == nil && c >= 0
	}, 10*time.Second, 10*time.Millisecond, "the operator's cache holds %T %s at resourceVersion %s", obj, obj.GetName(), obj.GetResourceVersion())
}

// stop stops the manager and waits for it.
func (o *operator) stop() {
	o.cancel()
	<-o.done
}

type opConfig struct {
	stores   controller.StoreFunc
	leaderNS string // leader election in this namespace when set
	opts     []controller.Option
	rn       *runnertest.Runner
	// inner, when set, is the runner the reconciler runs components
	// with (a wrapper of rn with more abilities, e.g. Rollback).
	inner runner.Runner
	// cfg, when set, is the manager's rest.Config (default: the test
	// API server's, an administrator's).
	cfg *rest.Config
}

// startOperator starts a replica; the test stops it at its end. Replicas
// watch the namespaces the test created before (see watched); every
// namespace if it created none.
func startOperator(t *testing.T, oc opConfig) *operator {
	t.Helper()
	if oc.stores == nil {
		oc.stores = memStores()
	}
	if oc.rn == nil {
		oc.rn = runnertest.New()
	}
	opts := ctrl.Options{
		Scheme:     scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: new(true)},
	}
	watched(t, &opts)
	if oc.leaderNS != "" {
		lease, renew, retry := 3*time.Second, 2*time.Second, 200*time.Millisecond
		opts.LeaderElection, opts.LeaderElectionID, opts.LeaderElectionNamespace = true, "hopdag-operator", oc.leaderNS
		opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &lease, &renew, &retry
		opts.LeaderElectionReleaseOnCancel = true
	}
	mcfg := cfg
	if oc.cfg != nil {
		mcfg = oc.cfg
	}
	mgr, err := ctrl.NewManager(mcfg, opts)
	require.NoError(t, err)
	all := append([]controller.Option{
		controller.WithExecutorOptions(checks()...),
		controller.WithManifests(os.DirFS(catalogDir)),
		controller.WithStatusInterval(200 * time.Millisecond),
		controller.WithLeaseTTL(2 * time.Second),
	}, oc.opts...)
	var inner runner.Runner = oc.rn
	if oc.inner != nil {
		inner = oc.inner
	}
	r := controller.New(mgr.GetClient(), inner, oc.stores, all...)
	require.NoError(t, r.SetupWithManager(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	o := &operator{r: r, cache: mgr.GetClient(), runner: oc.rn, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		if err := mgr.Start(ctx); err != nil {
			// A runnable that did not stop in time: which one, and where.
			buf := make([]byte, 4<<20)
			t.Errorf("manager: %v\ngoroutines:\n%s", err, buf[:goruntime.Stack(buf, true)])
		}
	}()
	t.Cleanup(o.stop)
	return o
}

// abandonAndDelete cleans up a ClusterVersion stopped mid-upgrade (which
// the webhook will not let go): it abandons it, then deletes it.
func abandonAndDelete(t *testing.T, c client.Client, key types.NamespacedName) {
	t.Helper()
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.Abandon = &v1alpha1.AbandonRequest{Reason: "test: done"} })
	got := waitFor(t, c, key, 30*time.Second, "abandoned", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseAbandoned })
	require.NoError(t, c.Delete(context.Background(), got))
}

// waitFor polls the ClusterVersion until cond holds.
func waitFor(t *testing.T, c client.Client, key types.NamespacedName, timeout time.Duration, what string, cond func(*v1alpha1.ClusterVersion) bool) *v1alpha1.ClusterVersion {
	t.Helper()
	var cv v1alpha1.ClusterVersion
	deadline := time.Now().Add(timeout)
	for {
		err := c.Get(context.Background(), key, &cv)
		if err == nil && cond(&cv) {
			return &cv
		}
		if time.Now().After(deadline) {
			t.Fatalf("ClusterVersion %s: not %s after %v; status: %+v (get error %v)", key, what, timeout, cv.Status, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eventReasons lists the reasons of the Events about the ClusterVersion.
func eventReasons(t *testing.T, c client.Client, ns string) []string {
	t.Helper()
	var l eventsv1.EventList
	require.NoError(t, c.List(context.Background(), &l, client.InNamespace(ns)))
	var out []string
	for _, e := range l.Items {
		if e.Regarding.Kind == "ClusterVersion" {
			out = append(out, e.Reason)
		}
	}
	return out
}

// waitReason waits for an Event of that reason about a ClusterVersion in
// ns: client-go's broadcaster sends Events in the background, after the
// status write a test may have waited for.
func waitReason(t *testing.T, c client.Client, ns, reason string) {
	t.Helper()
	require.Eventually(t, func() bool { return slices.Contains(eventReasons(t, c, ns), reason) }, 20*time.Second, 50*time.Millisecond,
		"a %s Event about a ClusterVersion in %s", reason, ns)
}

func newCV(ns, installed, desired string) *v1alpha1.ClusterVersion {
	return &v1alpha1.ClusterVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster"},
		Spec:       v1alpha1.ClusterVersionSpec{InstalledVersion: v1alpha1.Target(installed), DesiredVersion: v1alpha1.Target(desired)},
	}
}

func discardLogger() logr.Logger { return logr.Discard() }

// newKubeStore is store.New's store, which must be one.
func newKubeStore(t *testing.T, c client.Client, ns, name string) *store.Store {
	t.Helper()
	s, err := store.New(c, ns, name)
	require.NoError(t, err, "store.New(%q, %q)", ns, name)
	return s
}

// noWebhook is the label of namespaces the webhook does not see: the
// docs/operator.md says the reconciler does not need it, and these tests show what
// the reconciler does alone.
const noWebhook = "hopdag.io/test-webhook"

var webhookSelector sync.Once

// namespaceWithoutWebhook creates a namespace that the webhook
// configuration's namespaceSelector leaves out (set once, on first use).
func namespaceWithoutWebhook(t *testing.T, c client.Client) string {
	t.Helper()
	ctx := context.Background()
	webhookSelector.Do(func() {
		var l admissionregistrationv1.ValidatingWebhookConfigurationList
		require.NoError(t, c.List(ctx, &l))
		for i := range l.Items {
			w := &l.Items[i]
			for j := range w.Webhooks {
				w.Webhooks[j].NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: noWebhook, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"off"}}}}
			}
			require.NoError(t, c.Update(ctx, w))
		}
	})
	ns := createNamespace(t, c, map[string]string{noWebhook: "off"})
	// The API server applies a selector, and sees a namespace's labels,
	// a moment after they change: until a target the webhook refuses is
	// accepted, it still calls the webhook here.
	probe := newCV(ns, "v26.06-rc.2", "v99.0")
	probe.Name = "probe"
	require.Eventually(t, func() bool { return c.Create(ctx, probe, client.DryRunAll) == nil }, 30*time.Second, 50*time.Millisecond,
		"the webhook still refuses a ClusterVersion in namespace %s, which its selector leaves out", ns)
	return ns
}
