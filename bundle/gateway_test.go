package bundle_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/bundle"
	"github.com/hopdag/hopdag/bundle/bundletest"
)

// TestCacheFallbackGatewayDown pulls through a gateway (an ingress, a load
// balancer) whose registry behind it goes down: its 502, 503 and 504 mean
// the registry is unreachable, so the cache fallback serves the bundle, and
// without the fallback the error says ErrUnreachable and names the status.
func TestCacheFallbackGatewayDown(t *testing.T) {
	r := bundletest.Start(t)
	ctx := context.Background()
	backend, err := url.Parse("http://" + r.Addr)
	require.NoError(t, err)
	var down atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(backend)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if code := int(down.Load()); code != 0 {
			http.Error(w, "upstream unavailable", code)
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(gw.Close)
	ref := "oci://" + strings.TrimPrefix(gw.URL, "http://") + "/hopdag/catalog:v26.09"
	pushed, err := client(t).Push(ctx, catalogDir, ref)
	require.NoError(t, err)
	cache := t.TempDir()
	_, err = client(t, bundle.WithCache(cache)).Pull(ctx, ref)
	require.NoError(t, err, "the first pull fills the cache")

	for _, code := range []int{http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout} {
		down.Store(int32(code))
		b, err := client(t, bundle.WithCache(cache), bundle.WithCacheFallback()).Pull(ctx, ref)
		require.NoError(t, err, "gateway answering %d: the fallback", code)
		assert.True(t, b.Cached, "%d: Bundle.Cached", code)
		assert.Equal(t, pushed.Digest, b.Digest)
		_, err = client(t, bundle.WithCache(cache)).Pull(ctx, ref)
		require.ErrorIs(t, err, bundle.ErrUnreachable, "gateway answering %d, no fallback", code)
		assert.ErrorContains(t, err, http.StatusText(code))
	}
	down.Store(http.StatusNotFound)
	_, err = client(t, bundle.WithCache(cache), bundle.WithCacheFallback()).Pull(ctx, ref)
	require.Error(t, err)
	assert.NotErrorIs(t, err, bundle.ErrUnreachable, "a 404 is an answer, not an unreachable registry")
}
