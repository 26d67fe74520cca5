package helm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/hopdag/hopdag/kube/helm"
)

// A chart from a chart repository (helm.repo): index.yaml and the .tgz
// served over HTTP on 127.0.0.1. The chart is found by name and version
// in the index, checked against its archive digest, and installed; a
// version the index does not have fails at plan time.
func TestHelmRepoChart(t *testing.T) {
	dir := t.TempDir()
	ch, err := loader.Load("testdata/charts/app")
	require.NoError(t, err)
	archive, err := chartutil.Save(ch, dir)
	require.NoError(t, err)
	data, err := os.ReadFile(archive)
	require.NoError(t, err)
	sum := sha256.Sum256(data)

	var (
		mu   sync.Mutex
		gets []string
	)
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gets = append(gets, r.URL.Path)
		mu.Unlock()
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	idx, err := repo.IndexDirectory(dir, srv.URL)
	require.NoError(t, err)
	require.NoError(t, idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644))

	rc := apiServer(t)
	r := helm.New(rc, helm.WithValues(map[string]any{"site": "repo"}), helm.WithSettings(settings(t)))
	cv := in(appVersion("v1.0", 80), "repo")
	cv.Helm.Repo, cv.Helm.Chart, cv.Helm.Digest = srv.URL, "app", "sha256:"+hex.EncodeToString(sum[:])
	require.NoError(t, r.Validate(cv), "plan-time resolve of the repository chart")
	mu.Lock()
	assert.Contains(t, gets, "/index.yaml")
	assert.True(t, slices.ContainsFunc(gets, func(p string) bool { return strings.HasSuffix(p, "/app-0.1.0.tgz") }), "the archive was downloaded: %v", gets)
	mu.Unlock()

	for _, tc := range []struct{ name, version, digest, err string }{
		{"version not in the index", "9.9.9", "", "locate chart app 9.9.9"},
		{"wrong digest", "0.1.0", "sha256:" + strings.Repeat("0", 64), "has archive digest sha256:" + hex.EncodeToString(sum[:])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := *cv
			h := *cv.Helm
			h.Version, h.Digest = tc.version, tc.digest
			bad.Helm = &h
			assert.ErrorContains(t, r.Validate(&bad), tc.err)
		})
	}

	require.NoError(t, r.Run(context.Background(), task(nil, cv)), "install from the repository")
	c := &cluster{rc: rc, kc: mustClient(t, rc)}
	assert.Equal(t, "hello v1.0 from repo", c.greeting(t, "repo"))
}
