package controller_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// getCounter counts the GETs of one ClusterVersion (not lists, not
// watches) through its transport.
type getCounter struct {
	rt   http.RoundTripper
	path string
	n    *atomic.Int64
}

func (g getCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, g.path) && r.URL.Query().Get("watch") == "" {
		g.n.Add(1)
	}
	return g.rt.RoundTrip(r)
}

// firstRun calls at when the first component starts.
type firstRun struct {
	runner.Runner
	once sync.Once
	at   func()
}

func (f *firstRun) Run(ctx context.Context, t runner.Task) error {
	f.once.Do(f.at)
	return f.Runner.Run(ctx, t)
}

// TestDecisionReadsTheCache: the reconcile that starts an upgrade takes
// its decision on the cache's copy of the ClusterVersion when that copy
// shows the operator's last write of it (the spec change that queued the
// reconcile is newer): no GET of the ClusterVersion past the cache
// between the spec change and the first component. The operator's first
// decision on a ClusterVersion it has not written reads past the cache.
func TestDecisionReadsTheCache(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	var gets, atFirst atomic.Int64
	atFirst.Store(-1)
	ocfg := rest.CopyConfig(cfg)
	ocfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return getCounter{rt: rt, path: "/namespaces/" + ns + "/clusterversions/cluster", n: &gets}
	}
	rn := runnertest.New()
	startOperator(t, opConfig{rn: rn, inner: &firstRun{Runner: rn, at: func() { atFirst.Store(gets.Load()) }}, cfg: ocfg})
	key := idleAt(t, c, ns, "v26.06-rc.2")
	require.Positive(t, gets.Load(), "GETs past the cache: the first decision on a ClusterVersion the operator has not written reads past it")
	before := gets.Load()
	upgradeTo(t, c, key, "v26.09")
	require.GreaterOrEqual(t, atFirst.Load(), int64(0), "a component ran")
	assert.Equal(t, before, atFirst.Load(), "GETs of the ClusterVersion past the cache, counted when the spec changed and when the first component started")
}

// failOnce fails the first status write of one ClusterVersion once armed,
// as an API server in trouble would (500), and counts what it failed.
type failOnce struct {
	rt     http.RoundTripper
	path   string
	armed  *atomic.Bool
	failed *atomic.Int64
	body   *atomic.Value // the failed write's body
}

func (f failOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, f.path) && f.armed.CompareAndSwap(true, false) {
		f.failed.Add(1)
		if r.Body != nil {
			b, _ := io.ReadAll(r.Body)
			f.body.Store(string(b))
		}
		body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected by the test","reason":"InternalError","code":500}`
		return &http.Response{StatusCode: http.StatusInternalServerError, Header: http.Header{"Content-Type": []string{"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	}
	return f.rt.RoundTrip(r)
}

// TestStartWriteFails: the status write that starts an upgrade fails
// (the API server answers 500): nothing runs, and the ClusterVersion is
// reconciled again after a backoff, decided again, and upgraded, each
// component once.
func TestStartWriteFails(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	var armed atomic.Bool
	var failed atomic.Int64
	var body atomic.Value
	ocfg := rest.CopyConfig(cfg)
	ocfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return failOnce{rt: rt, path: "/namespaces/" + ns + "/clusterversions/cluster/status", armed: &armed, failed: &failed, body: &body}
	}
	rn := runnertest.New()
	startOperator(t, opConfig{rn: rn, cfg: ocfg})
	key := idleAt(t, c, ns, "v26.06-rc.2")
	armed.Store(true)
	upgradeTo(t, c, key, "v26.09")
	require.Equal(t, int64(1), failed.Load(), "status writes failed by the test")
	assert.Contains(t, body.Load(), `"phase":"Upgrading"`, "the write failed is the one that starts the upgrade")
	ran := map[string]int{}
	for _, r := range rn.Records() {
		ran[fmt.Sprintf("hop %d %s", r.Hop+1, r.Component)]++
	}
	assert.Len(t, ran, 19, "the components of the three hops")
	for k, n := range ran {
		assert.Equal(t, 1, n, "%s ran %d times", k, n)
	}
}

// idleAt creates the ClusterVersion "cluster" at version in ns and waits
// for the operator to have written it (Idle, its generation observed).
func idleAt(t *testing.T, c client.Client, ns, version string) client.ObjectKey {
	t.Helper()
	cv := newCV(ns, version, version)
	require.NoError(t, c.Create(context.Background(), cv))
	key := client.ObjectKeyFromObject(cv)
	waitFor(t, c, key, 30*time.Second, "idle, its generation observed", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.ObservedGeneration == cv.Generation
	})
	return key
}

// upgradeTo sets the ClusterVersion's desiredVersion to version and waits
// for the upgrade to have completed.
func upgradeTo(t *testing.T, c client.Client, key client.ObjectKey, version string) {
	t.Helper()
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = v1alpha1.Target(version) })
	waitFor(t, c, key, 60*time.Second, "at "+version, func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == version && cv.Status.Phase == v1alpha1.PhaseIdle
	})
}
