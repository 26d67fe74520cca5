package bundle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2/content/oci"

	"github.com/hopdag/hopdag/release"
)

// writeLayout writes a bundle of files (not validated: Push would refuse an
// invalid catalog) to an OCI layout tagged tag.
func writeLayout(t testing.TB, dir, tag string, files map[string]string) digest.Digest {
	t.Helper()
	src := t.TempDir()
	var names []string
	for name, data := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, name), []byte(data), 0o644))
		names = append(names, name)
	}
	layer, tarDigest, err := pack(os.DirFS(src), names)
	require.NoError(t, err)
	manifest, err := newManifest(&release.Catalog{}, layer, tarDigest)
	require.NoError(t, err)
	ctx := context.Background()
	s, err := oci.New(dir)
	require.NoError(t, err)
	require.NoError(t, pushIfMissing(ctx, s, ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data))
	require.NoError(t, pushIfMissing(ctx, s, ocispec.Descriptor{MediaType: LayerMediaType, Digest: digest.FromBytes(layer), Size: int64(len(layer))}, layer))
	md := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(manifest), Size: int64(len(manifest))}
	require.NoError(t, pushIfMissing(ctx, s, md, manifest))
	require.NoError(t, s.Tag(ctx, md, tag))
	return md.Digest
}

// The loader's file:line errors name REF:file:line.
func TestPullNamesRefInCatalogProblems(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	data, err := os.ReadFile("../testdata/invalid/unknown-field/catalog.yaml")
	require.NoError(t, err)
	writeLayout(t, dir, "bad", map[string]string{"catalog.yaml": string(data)})
	ref := "oci-layout://" + dir + ":bad"
	_, err = New().Pull(context.Background(), ref)
	var le *release.LoadError
	require.ErrorAs(t, err, &le)
	require.NotEmpty(t, le.Problems)
	for _, p := range le.Problems {
		assert.True(t, strings.HasPrefix(p.File, ref+":"), "problem file %q starts with %q", p.File, ref+":")
		assert.NotZero(t, p.Line, "problem %v has a line", p)
	}
	assert.ErrorContains(t, err, ref+":catalog.yaml:")
}

func TestParseLocation(t *testing.T) {
	const d = "sha256:7d3b6e9c09829705aa046f4dac77622f34d3ea275afffb8f6f1735d8e551b2be"
	tests := []struct {
		in      string
		want    Location
		wantErr string
	}{
		{in: "oci://localhost:5000/hopdag/catalog:v1", want: Location{Registry: "localhost:5000", Repository: "hopdag/catalog", Tag: "v1"}},
		{in: "registry.example/c:v1", want: Location{Registry: "registry.example", Repository: "c", Tag: "v1"}},
		{in: "oci://r.example/c@" + d, want: Location{Registry: "r.example", Repository: "c", Digest: d}},
		{in: "oci://r.example/c:v1@" + d, want: Location{Registry: "r.example", Repository: "c", Tag: "v1", Digest: d}},
		{in: "oci-layout:///tmp/x:v1", want: Location{Layout: "/tmp/x", Tag: "v1"}},
		{in: "oci-layout://./a.b/x.tar", want: Location{Layout: "./a.b/x.tar"}},
		{in: "oci-layout://x:v1@" + d, want: Location{Layout: "x", Tag: "v1", Digest: d}},
		{in: "oci://r.example/c", wantErr: "no tag or digest"},
		{in: "oci://r.example/C:v1", wantErr: "invalid reference"},
		{in: "oci-layout://x@sha256:zz", wantErr: "digest"},
		{in: "oci-layout://", wantErr: "no layout path"},
		{in: "oci-layout://x:", wantErr: "empty tag"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseLocation(tc.in)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrReference)
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			tc.want.Raw = tc.in
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestIsLocalhost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost:5000": true, "127.0.0.1:5000": true, "127.1.2.3": true, "[::1]:5000": true,
		"registry.example": false, "10.0.0.1:5000": false, "localhost.example": false,
	} {
		assert.Equal(t, want, isLocalhost(host), "isLocalhost(%q)", host)
	}
}

// Plain HTTP is for localhost only, or for every registry when asked
// (WithPlainHTTP): a registry elsewhere is spoken to over HTTPS.
func TestPlainHTTPRule(t *testing.T) {
	dir := t.TempDir() // an empty Docker config: no credentials needed
	cfg := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(cfg, []byte("{}"), 0o600))
	for _, tc := range []struct {
		registry string
		opts     []Option
		want     bool
	}{
		{"localhost:5000", nil, true},
		{"127.0.0.1:5000", nil, true},
		{"registry.example", nil, false},
		{"10.0.0.1:5000", nil, false},
		{"registry.example", []Option{WithPlainHTTP()}, true},
		{"10.0.0.1:5000", []Option{WithPlainHTTP()}, true},
	} {
		c := New(append([]Option{WithDockerConfig(cfg)}, tc.opts...)...)
		repo, err := c.repository(Location{Registry: tc.registry, Repository: "catalog"})
		require.NoError(t, err)
		assert.Equal(t, tc.want, repo.PlainHTTP, "PlainHTTP of %s with %d options", tc.registry, len(tc.opts))
	}
}

// unpack refuses what a catalog archive must not hold.
func TestUnpackRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []tarEntry
		want    string
	}{
		{"absolute path", []tarEntry{{name: "/catalog/x", data: "x"}}, "not a clean relative path"},
		{"parent path", []tarEntry{{name: "catalog/../x.yaml", data: "x"}}, "not a clean relative path"},
		{"unclean path", []tarEntry{{name: "catalog/a//x.yaml", data: "x"}}, "not a clean relative path"},
		{"symlink", []tarEntry{{name: "catalog/x.yaml", link: "/etc/passwd"}}, "only regular files"},
		{"duplicate", []tarEntry{{name: "catalog/x.yaml", data: "a"}, {name: "catalog/x.yaml", data: "b"}}, "appears twice"},
		{"file and directory", []tarEntry{{name: "catalog/a", data: "a"}, {name: "catalog/a/b.yaml", data: "b"}}, "is a file and the directory"},
		{"outside catalog/", []tarEntry{{name: "x.yaml", data: "a"}}, "not under catalog/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := unpack(tarGz(t, tc.entries))
			require.ErrorIs(t, err, ErrNotBundle)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	_, err := unpack([]byte("not gzip"))
	assert.ErrorIs(t, err, ErrNotBundle)
}

// A bundle holds every manifest file the catalog names, a lifecycle
// phase's included, whatever its extension.
func TestCatalogFilesIncludePhaseManifests(t *testing.T) {
	fsys := fstest.MapFS{
		"c.yaml": {Data: []byte(`apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: web}
spec:
  name: web
  version: v1.0
  manifests: [{file: m/config.tpl}]
  phases:
  - {name: drain, manifests: [{file: m/traffic.tpl}]}
  - {name: up, manifests: [{file: m/config.tpl}]}
`)},
		"m/config.tpl":  {Data: []byte("kind: ConfigMap\n")},
		"m/traffic.tpl": {Data: []byte("kind: ConfigMap\n")},
		"m/unused.tpl":  {Data: []byte("kind: ConfigMap\n")},
	}
	c := &release.Catalog{Components: []release.ComponentVersion{{Name: "web",
		Manifests: []release.Manifest{{File: "m/config.tpl"}},
		Lifecycle: release.Lifecycle{Phases: []release.LifecyclePhase{
			{Name: "drain", Manifests: []release.Manifest{{File: "m/traffic.tpl"}}},
			{Name: "up", Manifests: []release.Manifest{{File: "./m/config.tpl"}}},
		}}}}}
	files, err := catalogFiles(fsys, c)
	require.NoError(t, err)
	assert.Equal(t, []string{"c.yaml", "m/config.tpl", "m/traffic.tpl"}, files)
}

// WithLogger(nil) means the default, a logger that discards, as it does
// for runner and state: a nil *slog.Logger would crash the first log.
func TestWithLoggerNil(t *testing.T) {
	c := New(WithLogger(nil))
	require.NotNil(t, c.logger, "New(WithLogger(nil)).logger")
	c.logger.Info("discarded")
}
