package bundle_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/bundle"
	"github.com/hopdag/hopdag/bundle/bundletest"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/simulate"
)

// Round trip through a real registry: push testdata/catalog, pull it by tag
// and by digest, and plan v26.06-rc.2 -> v26.09 from it: the plan is the
// one the directory gives, and names the digest.
func TestRoundTrip(t *testing.T) {
	r := bundletest.Start(t)
	ctx := context.Background()
	signer := newKey(t, "release team")
	c := client(t, bundle.WithSigningKey(signer.key, signer.certs), bundle.WithVerifyKey(bundle.VerifyRequired, signer.certs...))
	ref := r.Ref("hopdag/catalog:v26.09")
	pushed, err := c.Push(ctx, catalogDir, ref)
	require.NoError(t, err, "Push")
	assert.True(t, pushed.Signed, "Pushed.Signed")
	assert.Contains(t, pushed.Files, "releases.yaml")
	assert.Contains(t, pushed.Files, "manifests/coredns.yaml", "manifest templates are in the bundle")

	again, err := c.Push(ctx, catalogDir, r.Ref("hopdag/catalog:again"))
	require.NoError(t, err, "Push again")
	assert.Equal(t, pushed.Digest, again.Digest, "the same directory makes the same digest")

	dirCat, err := release.LoadDir(catalogDir)
	require.NoError(t, err)
	want := planOf(t, dirCat)

	byDigest := "oci://" + r.Addr + "/hopdag/catalog@" + pushed.Digest.String()
	var first *release.Catalog
	for _, pullRef := range []string{ref, byDigest, r.Ref("hopdag/catalog:v26.09@" + pushed.Digest.String())} {
		t.Run(pullRef, func(t *testing.T) {
			b, err := c.Pull(ctx, pullRef)
			require.NoError(t, err, "Pull")
			assert.Equal(t, pushed.Digest, b.Digest, "Bundle.Digest")
			assert.True(t, b.Verified, "Bundle.Verified")
			assert.False(t, b.Cached, "Bundle.Cached")
			if first == nil {
				first = b.Catalog
			}
			assert.Same(t, first, b.Catalog, "a digest loaded before is not parsed again")
			assert.Equal(t, "v26.03,v26.06-rc.1,v26.06-rc.2,v26.06-rc.3,v26.06,v26.06.1,v26.09-rc.1,v26.09", b.Annotations[bundle.AnnotationVersions])

			got := planOf(t, b.Catalog)
			assert.Equal(t, want.String(), got.String(), "plan from the bundle vs the directory")
			wj, _ := json.Marshal(want)
			gj, _ := json.Marshal(got)
			assert.JSONEq(t, string(wj), string(gj), "plan JSON from the bundle vs the directory")

			got.Catalog = b.Source()
			assert.Contains(t, got.String(), "catalog: "+pullRef+" ("+pushed.Digest.String()+")\n", "the plan names the digest")
			st, err := executor(got, runnertest.New()).Execute(ctx, got, nil)
			require.NoError(t, err, "Execute")
			assert.Equal(t, pushed.Digest.String(), st.Catalog.Digest, "Status.Catalog.Digest")
		})
	}
}

// An invalid catalog is never pushed.
func TestPushRefusesInvalidCatalog(t *testing.T) {
	dir := t.TempDir()
	layout := filepath.Join(dir, "layout")
	_, err := client(t).Push(context.Background(), "../testdata/invalid/unknown-field", "oci-layout://"+layout+":v1")
	var le *release.LoadError
	require.ErrorAs(t, err, &le)
	assert.ErrorContains(t, err, "nothing was pushed")
	_, statErr := os.Stat(layout)
	assert.True(t, os.IsNotExist(statErr), "no layout was written: %v", statErr)
}

// The refusals: each names the reference and the reason, and nothing is
// loaded.
func TestPullRefusals(t *testing.T) {
	ctx := context.Background()
	good, other := newKey(t, "release team"), newKey(t, "someone else")
	signing := client(t, bundle.WithSigningKey(good.key, good.certs))

	// Blobs are shared by every repository of a registry: each case has
	// its own registry, so that a tampered blob stays in its case.
	var r *bundletest.Registry
	tests := []struct {
		name    string
		setup   func(t *testing.T, ref string, p *bundle.Pushed)
		verify  []bundle.Option
		wantIs  error
		wantMsg string
	}{
		{
			name: "tampered blob",
			setup: func(t *testing.T, _ string, p *bundle.Pushed) {
				// Same size, other bytes: the registry serves it as it is.
				path := r.BlobPath(layerDigest(t, r, p))
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				data[len(data)/2] ^= 0xff
				require.NoError(t, os.WriteFile(path, data, 0o644))
			},
			wantIs: bundle.ErrDigest, wantMsg: "tampered or corrupt): catalog layer sha256:",
		},
		{
			name: "tampered manifest",
			setup: func(t *testing.T, _ string, p *bundle.Pushed) {
				path := r.BlobPath(p.Digest.String())
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				data = []byte(strings.Replace(string(data), "v26.09", "v99.99", 1)) // same size
				require.NoError(t, os.WriteFile(path, data, 0o644))
			},
			wantIs: bundle.ErrDigest, wantMsg: "tampered or corrupt): reading the manifest sha256:",
		},
		{
			name:    "wrong key",
			verify:  []bundle.Option{bundle.WithVerifyKey(bundle.VerifyRequired, other.certs...)},
			wantIs:  bundle.ErrSignature,
			wantMsg: "signature verification failed",
		},
		{
			name: "tampered signature",
			setup: func(t *testing.T, ref string, p *bundle.Pushed) {
				// A verified pull fills a cache, which says which blob is
				// the signature; then its bytes change in the registry.
				cache := t.TempDir()
				_, err := client(t, bundle.WithCache(cache), bundle.WithVerifyKey(bundle.VerifyRequired, good.certs...)).Pull(ctx, ref)
				require.NoError(t, err, "the pull before the signature is tampered with")
				path := r.BlobPath(readCache(t, cache, p.Digest.String()).sigDigest)
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				data[len(data)/2] ^= 0xff
				require.NoError(t, os.WriteFile(path, data, 0o644))
			},
			wantIs: bundle.ErrDigest, wantMsg: "tampered or corrupt): failed to perform \"Push\" on destination: signature sha256:",
		},
		{
			name:    "missing signature",
			setup:   func(t *testing.T, ref string, _ *bundle.Pushed) { pushUnsigned(t, ref) },
			verify:  []bundle.Option{bundle.WithVerifyKey(bundle.VerifyRequired, good.certs...)},
			wantIs:  bundle.ErrUnsigned,
			wantMsg: "no signature is attached",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r = bundletest.Start(t)
			ref := r.Ref("hopdag/catalog:v1")
			p, err := signing.Push(ctx, catalogDir, ref)
			require.NoError(t, err)
			if tc.setup != nil {
				tc.setup(t, ref, p)
			}
			opts := tc.verify
			if opts == nil {
				opts = []bundle.Option{bundle.WithVerifyKey(bundle.VerifyRequired, good.certs...)}
			}
			b, err := client(t, opts...).Pull(ctx, ref)
			require.Error(t, err, "Pull of a bundle with a %s", tc.name)
			assert.Nil(t, b)
			assert.ErrorIs(t, err, tc.wantIs)
			assert.ErrorContains(t, err, tc.wantMsg)
			assert.ErrorContains(t, err, "bundle: pull "+ref, "the error names the reference")
			var be *bundle.Error
			require.ErrorAs(t, err, &be)
			assert.Equal(t, ref, be.Ref)
			t.Logf("%s: %v", tc.name, err)
		})
	}

	r = bundletest.Start(t)
	t.Run("missing signature, verification optional", func(t *testing.T) {
		ref := r.Ref("hopdag/optional:v1")
		pushUnsigned(t, ref)
		b, err := client(t, bundle.WithVerifyKey(bundle.VerifyOptional, good.certs...)).Pull(ctx, ref)
		require.NoError(t, err, "an unsigned bundle is accepted when verification is optional")
		assert.False(t, b.Verified)
	})
	t.Run("wrong key, verification optional", func(t *testing.T) {
		ref := r.Ref("hopdag/optional-wrong:v1")
		_, err := signing.Push(ctx, catalogDir, ref)
		require.NoError(t, err)
		_, err = client(t, bundle.WithVerifyKey(bundle.VerifyOptional, other.certs...)).Pull(ctx, ref)
		assert.ErrorIs(t, err, bundle.ErrSignature, "a signature the key does not verify is refused even when verification is optional")
	})
}

// pushUnsigned replaces ref with an unsigned push of a changed catalog.
func pushUnsigned(t *testing.T, ref string) {
	t.Helper()
	dir := copyDir(t, catalogDir)
	appendComment(t, filepath.Join(dir, "releases.yaml"), "unsigned")
	_, err := client(t).Push(context.Background(), dir, ref)
	require.NoError(t, err)
}

func appendComment(t *testing.T, file, text string) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = io.WriteString(f, "\n# "+text+"\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// layerDigest reads the pushed manifest from the registry's storage.
func layerDigest(t *testing.T, r *bundletest.Registry, p *bundle.Pushed) string {
	t.Helper()
	data, err := os.ReadFile(r.BlobPath(p.Digest.String()))
	require.NoError(t, err)
	var m struct {
		Layers []struct {
			Digest string `json:"digest"`
		} `json:"layers"`
	}
	require.NoError(t, json.Unmarshal(data, &m))
	require.Len(t, m.Layers, 1)
	return m.Layers[0].Digest
}

// A resumed run refuses a different bundle under the same tag, naming
// both digests.
func TestResumeRefusesOtherBundleUnderSameTag(t *testing.T) {
	r := bundletest.Start(t)
	ctx := context.Background()
	c := client(t)
	ref := r.Ref("hopdag/catalog:stable")
	first, err := c.Push(ctx, catalogDir, ref)
	require.NoError(t, err)
	b1, err := c.Pull(ctx, ref)
	require.NoError(t, err)
	p1 := planOf(t, b1.Catalog)
	p1.Catalog = b1.Source()
	fake := runnertest.New().Script("etcd", runnertest.Script{FailFirst: 1, Permanent: true})
	e := executor(p1, fake)
	st1, err := e.Execute(ctx, p1, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed, "the first run fails on etcd")

	dir := copyDir(t, catalogDir)
	appendComment(t, filepath.Join(dir, "releases.yaml"), "a new build under the same tag")
	second, err := c.Push(ctx, dir, ref)
	require.NoError(t, err)
	require.NotEqual(t, first.Digest, second.Digest)
	b2, err := c.Pull(ctx, ref)
	require.NoError(t, err)
	p2 := planOf(t, b2.Catalog)
	p2.Catalog = b2.Source()
	_, err = e.Execute(ctx, p2, st1)
	require.ErrorIs(t, err, runner.ErrPlanMismatch)
	assert.ErrorContains(t, err, first.Digest.String())
	assert.ErrorContains(t, err, second.Digest.String())
	assert.ErrorContains(t, err, ref)

	// Pinned by the first digest, the run resumes.
	b3, err := c.Pull(ctx, strings.TrimSuffix(ref, ":stable")+":stable@"+first.Digest.String())
	require.NoError(t, err)
	p3 := planOf(t, b3.Catalog)
	p3.Catalog = b3.Source()
	st3, err := e.Execute(ctx, p3, st1)
	require.NoError(t, err, "resume with the first bundle")
	assert.Equal(t, record.Succeeded, st3.Phase)
}

// Offline: export (with the signature) to a layout directory and a tarball,
// stop the registry, load from the layout, plan and run (simulated).
func TestOfflineExport(t *testing.T) {
	r := bundletest.Start(t)
	ctx := context.Background()
	key := newKey(t, "release team")
	ref := r.Ref("hopdag/catalog:v26.09")
	pushed, err := client(t, bundle.WithSigningKey(key.key, key.certs)).Push(ctx, catalogDir, ref)
	require.NoError(t, err)
	dir := t.TempDir()
	verifying := client(t, bundle.WithVerifyKey(bundle.VerifyRequired, key.certs...))
	layoutDir, tarball := filepath.Join(dir, "layout"), filepath.Join(dir, "bundle.tar")
	for _, out := range []string{layoutDir, tarball} {
		b, err := verifying.Export(ctx, ref, out)
		require.NoError(t, err, "Export to %s", out)
		assert.Equal(t, pushed.Digest, b.Digest)
	}
	r.Stop()

	dirCat, err := release.LoadDir(catalogDir)
	require.NoError(t, err)
	want := planOf(t, dirCat).String()
	for _, ref := range []string{
		"oci-layout://" + layoutDir + ":v26.09",
		"oci-layout://" + layoutDir,
		"oci-layout://" + tarball + ":v26.09",
		"oci-layout://" + layoutDir + "@" + pushed.Digest.String(),
	} {
		t.Run(ref, func(t *testing.T) {
			// A fresh client: nothing cached, no registry.
			c := client(t, bundle.WithVerifyKey(bundle.VerifyRequired, key.certs...))
			b, err := c.Pull(ctx, ref)
			require.NoError(t, err, "Pull from the layout")
			assert.True(t, b.Verified, "the signature travelled with the export")
			assert.Equal(t, pushed.Digest, b.Digest)
			assert.Equal(t, want, planOf(t, b.Catalog).String())
			st, err := simulate.Run(ctx, simulate.Upgrade{Catalog: b.Catalog, From: path.State{"": fromV}, To: path.State{"": toV}, Source: b.Source(), Config: simulate.Config{Speed: 1e6}}, io.Discard)
			require.NoError(t, err, "simulated run")
			assert.Equal(t, record.Succeeded, st.Phase)
			assert.Equal(t, pushed.Digest.String(), st.Catalog.Digest)
		})
	}

	t.Run("wrong key offline", func(t *testing.T) {
		_, err := client(t, bundle.WithVerifyKey(bundle.VerifyRequired, newKey(t, "x").certs...)).Pull(ctx, "oci-layout://"+tarball)
		assert.ErrorIs(t, err, bundle.ErrSignature)
	})
}

// Copy between registries carries the signature (prepare online, load into
// the bootstrap node's registry).
func TestCopyBetweenRegistries(t *testing.T) {
	online, bootstrap := bundletest.Start(t), bundletest.Start(t)
	ctx := context.Background()
	key := newKey(t, "release team")
	src := online.Ref("hopdag/catalog:v26.09")
	pushed, err := client(t, bundle.WithSigningKey(key.key, key.certs)).Push(ctx, catalogDir, src)
	require.NoError(t, err)
	c := client(t, bundle.WithVerifyKey(bundle.VerifyRequired, key.certs...))
	dst := bootstrap.Ref("mirror/catalog")
	_, err = c.Copy(ctx, src, dst)
	require.NoError(t, err, "Copy")
	online.Stop()
	b, err := client(t, bundle.WithVerifyKey(bundle.VerifyRequired, key.certs...)).Pull(ctx, dst+":v26.09")
	require.NoError(t, err, "Pull from the bootstrap registry")
	assert.Equal(t, pushed.Digest, b.Digest)
	assert.True(t, b.Verified)
}

// Cache fallback: after one pull the registry stops; with fallback the run
// proceeds and the status says the cache was used; without it, the error
// says the registry is unreachable.
func TestCacheFallback(t *testing.T) {
	r := bundletest.Start(t)
	ctx := context.Background()
	cache := t.TempDir()
	ref := r.Ref("hopdag/catalog:v26.09")
	pushed, err := client(t).Push(ctx, catalogDir, ref)
	require.NoError(t, err)
	_, err = client(t, bundle.WithCache(cache)).Pull(ctx, ref)
	require.NoError(t, err, "the first pull fills the cache")
	r.Stop()

	byDigest := "oci://" + r.Addr + "/hopdag/catalog@" + pushed.Digest.String()
	for _, tc := range []struct{ ref, note string }{
		{ref, "using the cached bundle tag v26.09 last resolved to (" + pushed.Digest.String() + ")"},
		{byDigest, "using the cached bundle of the same digest"},
	} {
		t.Run("fallback "+tc.ref, func(t *testing.T) {
			b, err := client(t, bundle.WithCache(cache), bundle.WithCacheFallback()).Pull(ctx, tc.ref)
			require.NoError(t, err, "Pull with fallback")
			assert.True(t, b.Cached, "Bundle.Cached")
			assert.Equal(t, pushed.Digest, b.Digest)
			assert.Contains(t, b.Note, "registry "+r.Addr+" unreachable")
			assert.Contains(t, b.Note, tc.note)
			plan := planOf(t, b.Catalog)
			plan.Catalog = b.Source()
			assert.Contains(t, plan.String(), "catalog: "+tc.ref+" ("+pushed.Digest.String()+"); registry "+r.Addr+" unreachable", "the plan says the cache was used")
			st, err := simulate.Run(ctx, simulate.Upgrade{Catalog: b.Catalog, From: path.State{"": fromV}, To: path.State{"": toV}, Source: b.Source(), Config: simulate.Config{Speed: 1e6}}, io.Discard)
			require.NoError(t, err)
			assert.Equal(t, record.Succeeded, st.Phase)
			assert.True(t, st.Catalog.Cached, "Status.Catalog.Cached")
			assert.Contains(t, st.Catalog.Note, "unreachable")
		})
	}
	t.Run("no fallback", func(t *testing.T) {
		_, err := client(t, bundle.WithCache(cache)).Pull(ctx, ref)
		require.ErrorIs(t, err, bundle.ErrUnreachable)
		assert.ErrorContains(t, err, "registry unreachable: "+r.Addr)
		assert.ErrorContains(t, err, "allow the cache fallback")
	})
	t.Run("fallback, not cached", func(t *testing.T) {
		_, err := client(t, bundle.WithCache(t.TempDir()), bundle.WithCacheFallback()).Pull(ctx, ref)
		require.ErrorIs(t, err, bundle.ErrUnreachable)
		assert.ErrorIs(t, err, bundle.ErrNotCached)
	})
}

// Credentials come from the Docker config file: with the user's entry the
// push and the pull go through; without it the registry's refusal is
// reported.
func TestDockerConfigCredentials(t *testing.T) {
	r := bundletest.StartAuth(t, "hopdag", "s3cret")
	ctx := context.Background()
	cfg := filepath.Join(t.TempDir(), "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte("hopdag:s3cret"))
	require.NoError(t, os.WriteFile(cfg, []byte(`{"auths":{"`+r.Addr+`":{"auth":"`+auth+`"}}}`), 0o600))
	ref := r.Ref("hopdag/catalog:v1")

	c := bundle.New(bundle.WithDockerConfig(cfg))
	pushed, err := c.Push(ctx, catalogDir, ref)
	require.NoError(t, err, "Push with the Docker config's credentials")
	b, err := c.Pull(ctx, ref)
	require.NoError(t, err, "Pull with the Docker config's credentials")
	assert.Equal(t, pushed.Digest, b.Digest)

	wrong := filepath.Join(t.TempDir(), "config.json")
	bad := base64.StdEncoding.EncodeToString([]byte("hopdag:wrong"))
	require.NoError(t, os.WriteFile(wrong, []byte(`{"auths":{"`+r.Addr+`":{"auth":"`+bad+`"}}}`), 0o600))
	_, err = bundle.New(bundle.WithDockerConfig(wrong)).Pull(ctx, ref)
	require.Error(t, err)
	assert.ErrorContains(t, err, "401")
	assert.ErrorContains(t, err, "check the credentials")

	_, err = client(t).Pull(ctx, ref) // an empty Docker config
	require.Error(t, err)
	assert.ErrorContains(t, err, "the Docker config has none for it; run docker login")
	assert.NotErrorIs(t, err, bundle.ErrUnreachable)
}

// Interop: `oras pull` of a bundle writes the catalog directory as it was
// pushed (the layer carries oras's directory annotations).
func TestOrasPullWritesTheCatalog(t *testing.T) {
	orasBin := orasBinary(t)
	r := bundletest.Start(t)
	ref := r.Ref("hopdag/catalog:v26.09")
	_, err := client(t).Push(context.Background(), catalogDir, ref)
	require.NoError(t, err)
	out := t.TempDir()
	cmd := exec.Command(orasBin, "pull", "--plain-http", "--no-tty", "-o", out, strings.TrimPrefix(ref, "oci://"))
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+t.TempDir())
	data, err := cmd.CombinedOutput()
	require.NoError(t, err, "oras pull: %s", data)
	got, err := release.LoadDir(filepath.Join(out, "catalog"))
	require.NoError(t, err, "the directory oras wrote is a valid catalog")
	want, err := release.LoadDir(catalogDir)
	require.NoError(t, err)
	assert.Equal(t, planOf(t, want).String(), planOf(t, got).String())
}
