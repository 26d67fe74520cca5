package bundle

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/hopdag/hopdag/bundle/bundletest"
)

// rawBundle is a bundle manifest as a hostile pusher may write it: its
// layers (blobs pushed only for the ones in data) and its config.
type rawBundle struct {
	layers []ocispec.Descriptor
	config ocispec.Descriptor
	blobs  [][]byte // pushed
}

// layers returns n distinct layers of size bytes each, as descriptors
// and blobs.
func distinctLayers(n, size int) ([]ocispec.Descriptor, [][]byte) {
	descs := make([]ocispec.Descriptor, n)
	blobs := make([][]byte, n)
	for i := range n {
		b := bytes.Repeat([]byte{byte('a' + i)}, size)
		blobs[i] = b
		descs[i] = ocispec.Descriptor{MediaType: LayerMediaType, Digest: digest.FromBytes(b), Size: int64(size)}
	}
	return descs, blobs
}

// push writes rb to dst tagged tag and returns the manifest's descriptor.
func (rb rawBundle) push(t testing.TB, dst oras.Target, tag string) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	if rb.config.Digest == "" {
		rb.config = ocispec.DescriptorEmptyJSON
	}
	if rb.config.Digest == ocispec.DescriptorEmptyJSON.Digest {
		require.NoError(t, pushIfMissing(ctx, dst, ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data))
	}
	for _, b := range rb.blobs {
		require.NoError(t, pushIfMissing(ctx, dst, ocispec.Descriptor{MediaType: LayerMediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}, b))
	}
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType, Config: rb.config, Layers: rb.layers}
	data, err := json.Marshal(m)
	require.NoError(t, err)
	md := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(data), Size: int64(len(data))}
	require.NoError(t, pushIfMissing(ctx, dst, md, data))
	require.NoError(t, dst.Tag(ctx, md, tag))
	return md
}

// cached reports whether the cache at dir holds the blob d.
func cached(dir string, d digest.Digest) bool {
	_, err := os.Stat(blobFile(dir, d))
	return err == nil
}

// TestPullChecksManifestFirst: a manifest naming four 40 MiB layers had
// them all downloaded into memory (or the cache) before Pull refused it
// with "want one layer", which the manifest alone showed, and an unsigned
// bundle's layer was downloaded before its signature was found missing.
// The manifest is fetched and checked first (layers, media types,
// declared sizes, then the signature), and nothing it does not allow is
// copied: the cache holds none of the refused blobs.
func TestPullChecksManifestFirst(t *testing.T) {
	four, fourBlobs := distinctLayers(4, 1<<20)
	one, oneBlob := distinctLayers(1, 1000)
	key := newTestKey(t)
	tests := []struct {
		name     string
		bundle   rawBundle
		opts     []Option
		want     string
		notCache []ocispec.Descriptor // what the cache must not hold after
	}{
		{"four layers", rawBundle{layers: four, blobs: fourBlobs},
			nil, "want one layer of " + LayerMediaType + ", got [" + LayerMediaType + ", " + LayerMediaType + ", " + LayerMediaType + ", " + LayerMediaType + "]", four},
		{"layer over the size limit", rawBundle{layers: []ocispec.Descriptor{{MediaType: LayerMediaType, Digest: digest.FromString("absent"), Size: maxLayerSize + 1}}},
			nil, "layer of 67108865 bytes is larger than the limit of 67108864 (64 MiB) by 1", nil},
		{"config over the size limit", rawBundle{layers: one, blobs: oneBlob, config: ocispec.Descriptor{MediaType: "application/json", Digest: digest.FromString("absent"), Size: 1 << 30}},
			nil, "config of 1073741824 bytes is larger than the limit of 4096 by 1073737728", one},
		{"unsigned, signature required", rawBundle{layers: one, blobs: oneBlob},
			[]Option{WithVerifyKey(VerifyRequired, key...)}, "no signature is attached to the bundle", one},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "layout")
			s, err := oci.New(dir)
			require.NoError(t, err)
			tc.bundle.push(t, s, "v1")
			cache := t.TempDir()
			_, err = New(append([]Option{WithCache(cache)}, tc.opts...)...).Pull(context.Background(), "oci-layout://"+dir+":v1")
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			for _, d := range tc.notCache {
				assert.False(t, cached(cache, d.Digest), "the cache holds layer %s of a refused bundle", d.Digest)
			}
		})
	}
}

// TestPullChecksManifestFirstRegistry is the four layers of
// TestPullChecksManifestFirst in a real registry, pulled with no cache
// (into memory) and with one.
func TestPullChecksManifestFirstRegistry(t *testing.T) {
	r := bundletest.Start(t)
	four, blobs := distinctLayers(4, 1<<20)
	repo, err := remote.NewRepository(r.Addr + "/hopdag/four")
	require.NoError(t, err)
	repo.PlainHTTP = true
	rawBundle{layers: four, blobs: blobs}.push(t, repo, "v1")
	ref := r.Ref("hopdag/four:v1")
	_, err = New().Pull(context.Background(), ref)
	require.ErrorIs(t, err, ErrNotBundle)
	assert.ErrorContains(t, err, "want one layer")
	cache := t.TempDir()
	_, err = New(WithCache(cache)).Pull(context.Background(), ref)
	require.ErrorIs(t, err, ErrNotBundle)
	for _, d := range four {
		assert.False(t, cached(cache, d.Digest), "the cache holds layer %s of a refused bundle", d.Digest)
	}
}

// newTestKey returns the certificate of a new signing key.
func newTestKey(t testing.TB) []*x509.Certificate {
	t.Helper()
	_, certPEM, err := GenerateKey("release team", time.Hour)
	require.NoError(t, err)
	certs, err := ParseCertificates(certPEM)
	require.NoError(t, err)
	return certs
}
