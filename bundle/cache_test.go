package bundle_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/bundle"
	"github.com/hopdag/hopdag/bundle/bundletest"
)

// A damaged cache entry (a blob with other bytes, cut short or gone; the
// bundle's layer, its manifest, its signature) does not break a pull
// while the registry is up: the entry is copied again from the registry,
// and the pull verifies. With the registry down, the cache fallback
// refuses the damaged bundle and names the damaged file.
func TestCacheDamage(t *testing.T) {
	ctx := context.Background()
	key := newKey(t, "release team")
	verifying := []bundle.Option{bundle.WithVerifyKey(bundle.VerifyRequired, key.certs...)}
	flip := func(t *testing.T, p string) {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		data[len(data)/2] ^= 0xff
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	cut := func(t *testing.T, p string) {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, data[:len(data)/2], 0o644))
	}
	remove := func(t *testing.T, p string) { require.NoError(t, os.Remove(p)) }
	manifest := func(e cacheEntries) string { return e.manifestDigest }
	layer := func(e cacheEntries) string { return e.layerDigest }
	signatureManifest := func(e cacheEntries) string { return e.sigManifestDigest }
	signature := func(e cacheEntries) string { return e.sigDigest }
	tests := []struct {
		name   string
		entry  func(e cacheEntries) string // the digest of the file damaged
		damage func(t *testing.T, p string)
		// unsigned: with the signature's manifest gone, and the registry
		// down, nothing says the bundle had one: the fallback finds it
		// unsigned (refused, as verification is required).
		unsigned bool
	}{
		{"layer flipped", layer, flip, false},
		{"layer cut short", layer, cut, false},
		{"layer removed", layer, remove, false},
		{"manifest flipped", manifest, flip, false},
		{"manifest removed", manifest, remove, false},
		{"signature flipped", signature, flip, false},
		{"signature manifest removed", signatureManifest, remove, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := bundletest.Start(t)
			ref := r.Ref("hopdag/catalog:v26.09")
			pushed, err := client(t, bundle.WithSigningKey(key.key, key.certs)).Push(ctx, catalogDir, ref)
			require.NoError(t, err)
			up, down := t.TempDir(), t.TempDir()
			_, err = client(t, append(verifying, bundle.WithCache(up))...).Pull(ctx, ref)
			require.NoError(t, err, "the first pull fills the cache")
			require.NoError(t, os.CopyFS(down, os.DirFS(up)))
			entries := readCache(t, up, pushed.Digest.String())
			for _, cache := range []string{up, down} {
				tc.damage(t, blobFile(cache, tc.entry(entries)))
			}

			b, err := client(t, append(verifying, bundle.WithCache(up))...).Pull(ctx, ref)
			require.NoError(t, err, "Pull over a cache whose %s, the registry up", tc.name)
			assert.Equal(t, pushed.Digest, b.Digest)
			assert.True(t, b.Verified, "Bundle.Verified")
			assert.False(t, b.Cached, "Bundle.Cached")
			p := blobFile(up, tc.entry(entries))
			assert.True(t, holdsDigest(t, p), "the cache entry %s was copied again", p)
			_, err = client(t, append(verifying, bundle.WithCache(up))...).Pull(ctx, ref)
			require.NoError(t, err, "a pull after the repair")

			r.Stop()
			_, err = client(t, append(verifying, bundle.WithCache(down), bundle.WithCacheFallback())...).Pull(ctx, ref)
			require.Error(t, err, "the fallback to a cache whose %s", tc.name)
			if tc.unsigned {
				assert.ErrorIs(t, err, bundle.ErrUnsigned)
				return
			}
			assert.ErrorIs(t, err, bundle.ErrUnreachable)
			assert.ErrorIs(t, err, bundle.ErrNotCached)
			assert.ErrorContains(t, err, "cache entry "+blobFile(down, tc.entry(entries))+" is corrupt or incomplete; remove it or pull while the registry is up")
			t.Logf("%s, fallback: %v", tc.name, err)
		})
	}

	// The copy from the registry is checked too: a damaged cache is not
	// mended from a tampered registry.
	t.Run("layer flipped in the cache and in the registry", func(t *testing.T) {
		r := bundletest.Start(t)
		ref := r.Ref("hopdag/catalog:v26.09")
		pushed, err := client(t, bundle.WithSigningKey(key.key, key.certs)).Push(ctx, catalogDir, ref)
		require.NoError(t, err)
		cache := t.TempDir()
		_, err = client(t, append(verifying, bundle.WithCache(cache))...).Pull(ctx, ref)
		require.NoError(t, err)
		flip(t, blobFile(cache, layerDigest(t, r, pushed)))
		flip(t, r.BlobPath(layerDigest(t, r, pushed)))
		_, err = client(t, append(verifying, bundle.WithCache(cache))...).Pull(ctx, ref)
		assert.ErrorIs(t, err, bundle.ErrDigest)
		assert.ErrorContains(t, err, "tampered or corrupt")
	})
}

// cacheEntries are the digests of a bundle's nodes in a cache.
type cacheEntries struct{ manifestDigest, layerDigest, sigManifestDigest, sigDigest string }

func blobFile(cache, d string) string {
	return filepath.Join(cache, "blobs", "sha256", strings.TrimPrefix(d, "sha256:"))
}

// readCache finds the bundle manifest d, its layer, and its signature's
// manifest and blob in the cache.
func readCache(t *testing.T, cache, d string) cacheEntries {
	t.Helper()
	type manifest struct {
		Layers  []struct{ Digest string }
		Subject *struct{ Digest string }
	}
	read := func(d string) manifest {
		data, err := os.ReadFile(blobFile(cache, d))
		require.NoError(t, err)
		var m manifest
		require.NoError(t, json.Unmarshal(data, &m))
		return m
	}
	e := cacheEntries{manifestDigest: d, layerDigest: read(d).Layers[0].Digest}
	data, err := os.ReadFile(filepath.Join(cache, "index.json"))
	require.NoError(t, err)
	var index struct{ Manifests []struct{ Digest string } }
	require.NoError(t, json.Unmarshal(data, &index))
	for _, m := range index.Manifests {
		if sm := read(m.Digest); sm.Subject != nil && sm.Subject.Digest == d {
			e.sigManifestDigest, e.sigDigest = m.Digest, sm.Layers[0].Digest
		}
	}
	require.NotEmpty(t, e.sigDigest, "the cache holds the signature")
	return e
}

// holdsDigest reports whether the blob file p holds what its name says.
func holdsDigest(t *testing.T, p string) bool {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]) == filepath.Base(p)
}

// A bundle cached by a pull that did not verify (a plain pull copies no
// signatures) is signed in the registry: with the registry down, the
// fallback with a verify key refuses it, saying that the cache holds no
// signature and how to fill it, not that the bundle was never signed; an
// Export from the same cache says its layout carries no signature.
func TestCacheFallbackWithoutSignatures(t *testing.T) {
	ctx := context.Background()
	key := newKey(t, "release team")
	r := bundletest.Start(t)
	ref := r.Ref("hopdag/catalog:v26.09")
	_, err := client(t, bundle.WithSigningKey(key.key, key.certs)).Push(ctx, catalogDir, ref)
	require.NoError(t, err)
	cache := t.TempDir()
	_, err = client(t, bundle.WithCache(cache)).Pull(ctx, ref)
	require.NoError(t, err, "a pull that does not verify fills the cache")
	r.Stop()

	_, err = client(t, bundle.WithCache(cache), bundle.WithCacheFallback(),
		bundle.WithVerifyKey(bundle.VerifyRequired, key.certs...)).Pull(ctx, ref)
	require.Error(t, err, "the fallback with a verify key")
	assert.ErrorIs(t, err, bundle.ErrUnsigned)
	assert.ErrorIs(t, err, bundle.ErrNotCached)
	assert.ErrorIs(t, err, bundle.ErrUnreachable)
	assert.NotContains(t, err.Error(), "sign it when pushing")
	assert.ErrorContains(t, err, "the cache holds no signature of the bundle")
	assert.ErrorContains(t, err, "pull it once with a verify key (the CLI's --verify-key) while the registry is up")

	b, err := client(t, bundle.WithCache(cache), bundle.WithCacheFallback(),
		bundle.WithVerifyKey(bundle.VerifyOptional, key.certs...)).Pull(ctx, ref)
	require.NoError(t, err, "the fallback, verification optional")
	assert.False(t, b.Verified)
	assert.Contains(t, b.Note, "the cache holds no signature of the bundle")

	b, err = client(t, bundle.WithCache(cache), bundle.WithCacheFallback()).Export(ctx, ref, filepath.Join(t.TempDir(), "offline.tar"))
	require.NoError(t, err, "Export from the cache")
	assert.True(t, b.Cached)
	assert.Contains(t, b.Note, "the cache holds no signature of the bundle", "the export carries none: Note says so")
}
