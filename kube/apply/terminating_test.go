package apply_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/apply"
)

// holdFinalizer holds the tests' objects being deleted: no controller
// removes it, the test does.
const holdFinalizer = "hopdag.io/test-hold"

// objectRequests counts the requests a client makes for one object (its
// path ends in "/<resource>/<name>"), by method.
type objectRequests struct {
	suffix  string
	mu      sync.Mutex
	n       map[string]int
	waiters []getsWaiter
}

type getsWaiter struct {
	gets int
	ch   chan struct{}
}

func newObjectRequests(resource, name string) *objectRequests {
	return &objectRequests{suffix: "/" + resource + "/" + name, n: map[string]int{}}
}

// config returns a copy of c whose requests o counts.
func (o *objectRequests) config(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if strings.HasSuffix(req.URL.Path, o.suffix) {
				o.count(req.Method)
			}
			return rt.RoundTrip(req)
		})
	})
	return c
}

func (o *objectRequests) count(method string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[method]++
	if method != http.MethodGet {
		return
	}
	kept := o.waiters[:0]
	for _, w := range o.waiters {
		if o.n[http.MethodGet] >= w.gets {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	o.waiters = kept
}

// getsAfter returns a channel closed once n more GETs of the object have
// been sent.
func (o *objectRequests) getsAfter(n int) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	ch := make(chan struct{})
	o.waiters = append(o.waiters, getsWaiter{gets: o.n[http.MethodGet] + n, ch: ch})
	return ch
}

// counts returns the requests counted so far, by method.
func (o *objectRequests) counts() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]int{}
	for m, n := range o.n {
		out[m] = n
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// holdDeleting creates ConfigMap ns/name with data {k: old} and
// holdFinalizer, and deletes it: it stays, being deleted, until unhold.
// It returns the object's UID.
func holdDeleting(t *testing.T, ns, name string) types.UID {
	t.Helper()
	ctx := context.Background()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns, "finalizers": []any{holdFinalizer}},
		"data":     map[string]any{"k": "old"}}}
	u, err := dyn.Resource(configmaps).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, dyn.Resource(configmaps).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}))
	t.Cleanup(func() { unhold(t, ns, name, u.GetUID()) })
	return u.GetUID()
}

// unhold removes the finalizers of ConfigMap ns/name when it is the
// object uid: its deletion finishes.
func unhold(t *testing.T, ns, name string, uid types.UID) {
	t.Helper()
	u := get(t, configmaps, ns, name)
	if u == nil || u.GetUID() != uid {
		return
	}
	_, err := dyn.Resource(configmaps).Namespace(ns).Patch(context.Background(), name, types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
}

// TestApplyTerminating applies ConfigMap {k: new} over one that is being
// deleted, held by a finalizer the test removes: the apply waits until
// the object is gone, then creates it, and reports it recreated; when
// the context ends first it fails with a *TerminatingError that names
// the object and what holds it, and writes nothing; a dry run does not
// wait. An object not being deleted costs one read and one apply, as
// before. The requests for the object are counted on the wire.
func TestApplyTerminating(t *testing.T) {
	ns := namespace(t)
	tests := []struct {
		name string
		// held: the object exists, being deleted, held by holdFinalizer.
		held bool
		// releaseAfter: the test removes the finalizer once the apply
		// has read the object this many times (it waits); 0: never.
		releaseAfter int
		dryRun       bool
		timeout      time.Duration
		wantChange   string // "" when the apply fails; %s is the namespace
		wantErr      string // a regexp; %s is the namespace
		// wantGets is the number of reads; -1 for at least releaseAfter+1.
		wantGets, wantPatches int
		// wantNew: afterwards the object is a new one, not being
		// deleted, with {k: new}; else the held one, untouched.
		wantNew bool
	}{
		{name: "not being deleted", timeout: 30 * time.Second,
			wantChange: "ConfigMap %s/not-being-deleted configured", wantGets: 1, wantPatches: 1, wantNew: true},
		{name: "released while the apply waits", held: true, releaseAfter: 3, timeout: 30 * time.Second,
			wantChange: "ConfigMap %s/released-while-the-apply-waits created (was being deleted; recreated once gone)",
			wantGets:   -1, wantPatches: 1, wantNew: true},
		{name: "held past the context", held: true, timeout: 400 * time.Millisecond,
			wantErr: `^apply: ConfigMap %s/held-past-the-context is being deleted \(since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, finalizers: \[` +
				regexp.QuoteMeta(holdFinalizer) + `\]\); it must be gone before it can be applied again, waited [0-9.]+m?s: context deadline exceeded$`,
			wantGets: -1},
		{name: "dry run", held: true, dryRun: true, timeout: 30 * time.Second,
			wantChange: "ConfigMap %s/dry-run created (being deleted; recreated once gone) (dry run)", wantGets: 1, wantPatches: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := strings.ReplaceAll(tt.name, " ", "-")
			var uid types.UID
			if tt.held {
				uid = holdDeleting(t, ns, name)
			} else {
				u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"k": "old"}}}
				u, err := dyn.Resource(configmaps).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
				require.NoError(t, err)
				uid = u.GetUID()
			}
			reqs := newObjectRequests("configmaps", name)
			opts := []apply.Option{apply.WithInventoryNamespace(ns)}
			if tt.dryRun {
				opts = append(opts, apply.WithDryRun())
			}
			a, err := apply.New(reqs.config(cfg), opts...)
			require.NoError(t, err)
			obj := components.Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name,
				Content: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"k": "new"}}}

			var polled <-chan struct{}
			if tt.releaseAfter > 0 {
				polled = reqs.getsAfter(tt.releaseAfter)
			}
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			type result struct {
				cs  apply.ChangeSet
				err error
			}
			done := make(chan result, 1)
			go func() {
				cs, err := a.ApplyAll(ctx, []components.Object{obj}, components.ApplyOptions{Force: true})
				done <- result{cs, err}
			}()
			if polled != nil {
				select {
				case <-polled:
				case r := <-done:
					t.Fatalf("ApplyAll returned (%v, %v) before the finalizer was removed, want it to wait for the deletion", r.cs, r.err)
				}
				u := get(t, configmaps, ns, name)
				require.NotNil(t, u, "the held object is there while the apply waits")
				assert.Equal(t, uid, u.GetUID(), "the held object")
				assert.NotNil(t, u.GetDeletionTimestamp(), "the held object is being deleted")
				assert.Equal(t, map[string]any{"k": "old"}, u.Object["data"], "the apply wrote nothing to the object being deleted")
				select {
				case r := <-done:
					t.Fatalf("ApplyAll returned (%v, %v) with the finalizer still there, want it to wait", r.cs, r.err)
				default:
				}
				unhold(t, ns, name, uid)
			}
			r := <-done

			if tt.wantErr != "" {
				require.Error(t, r.err)
				assert.Regexp(t, regexp.MustCompile(strings.ReplaceAll(tt.wantErr, "%s", regexp.QuoteMeta(ns))), r.err.Error())
				var te *apply.TerminatingError
				if assert.ErrorAs(t, r.err, &te) {
					assert.Equal(t, []string{holdFinalizer}, te.Finalizers)
					assert.Equal(t, components.Ref{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: name}, te.Object)
				}
				assert.True(t, errors.Is(r.err, context.DeadlineExceeded), "ApplyAll error %v, want it to match context.DeadlineExceeded", r.err)
				assert.Empty(t, r.cs, "no change")
			} else {
				require.NoError(t, r.err)
				assert.Equal(t, []string{strings.ReplaceAll(tt.wantChange, "%s", ns)}, changeStrings(r.cs))
			}

			got := reqs.counts()
			if tt.wantGets < 0 {
				assert.GreaterOrEqual(t, got[http.MethodGet], tt.releaseAfter+1, "GETs of the object (read, polls until gone): %v", got)
			} else {
				assert.Equal(t, tt.wantGets, got[http.MethodGet], "GETs of the object: %v", got)
			}
			assert.Equal(t, tt.wantPatches, got[http.MethodPatch], "PATCHes (applies) of the object: %v", got)
			t.Logf("requests for the object: %v", got)

			u := get(t, configmaps, ns, name)
			require.NotNil(t, u, "the object exists afterwards")
			if tt.wantNew {
				assert.Nil(t, u.GetDeletionTimestamp(), "the applied object is not being deleted")
				assert.Empty(t, u.GetFinalizers(), "the applied object's finalizers")
				assert.Equal(t, map[string]any{"k": "new"}, u.Object["data"], "the applied content")
				if tt.held {
					assert.NotEqual(t, uid, u.GetUID(), "a new object, created once the held one was gone")
				}
			} else {
				assert.Equal(t, uid, u.GetUID(), "the held object")
				assert.NotNil(t, u.GetDeletionTimestamp(), "the held object is still being deleted")
				assert.Equal(t, map[string]any{"k": "old"}, u.Object["data"], "nothing written to the held object")
			}
		})
	}
}

func changeStrings(cs apply.ChangeSet) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}

// TestApplyTerminatingRateLimited: a client whose rate limiter is at its
// limit (one request a second) applies over an object held being
// deleted until past its context's deadline. client-go's limiter refuses
// a wait that would pass the deadline, with an error that is not
// context.DeadlineExceeded; the apply still fails as the deadline's
// doing: a *TerminatingError naming the object, matching
// context.DeadlineExceeded.
func TestApplyTerminatingRateLimited(t *testing.T) {
	ns := namespace(t)
	name := "held-rate-limited"
	holdDeleting(t, ns, name)
	slow := rest.CopyConfig(cfg)
	slow.QPS, slow.Burst = 1, 1
	a, err := apply.New(slow, apply.WithInventoryNamespace(ns))
	require.NoError(t, err)
	object := func(name string) components.Object {
		return components.Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name,
			Content: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"k": "new"}}}
	}
	// The client's discovery first, and its tokens spent.
	_, err = a.ApplyAll(context.Background(), []components.Object{object("warm-up")}, components.ApplyOptions{Force: true})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	_, err = a.ApplyAll(ctx, []components.Object{object(name)}, components.ApplyOptions{Force: true})
	require.Error(t, err)
	var te *apply.TerminatingError
	require.ErrorAs(t, err, &te, "ApplyAll: %v", err)
	assert.Equal(t, name, te.Object.Name)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}
