package bundle

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
)

// A pull copies the bundle in steps, each allowed by the one before, so
// that a bundle is refused on what its manifest says before what it
// names is downloaded: copyManifest fetches the manifest (at most
// maxManifestSize bytes, checked against its digest) and checks it
// (parseManifest: one layer of LayerMediaType, declared sizes within the
// limits) before it copies it into the cache or memory store, and with it
// the signatures (bounded too) when they are to be verified or kept;
// the signature is verified there (checkOnce); then read copies the
// config and the layer, each read up to its declared size and checked
// against its digest as it streams, and unpacks the layer (bounded in
// entries, bytes and path lengths as it streams).

// copyManifest copies the manifest desc from src to dst, once it is
// checked as a bundle's, and, with withReferrers, its referrers (the
// signatures: their manifests and blobs, none larger than
// maxManifestSize), but nothing the bundle's manifest names.
func copyManifest(ctx context.Context, src oras.ReadOnlyGraphTarget, dst oras.GraphTarget, desc ocispec.Descriptor, withReferrers bool) error {
	named := namingStorage{dst}
	ok, err := dst.Exists(ctx, desc)
	if err != nil {
		return err
	}
	if !ok {
		data, err := fetchManifest(ctx, src, desc)
		if err != nil {
			return err
		}
		if _, _, err := parseManifest(data); err != nil {
			return err
		}
		if err := pushIfMissing(ctx, dst, desc, data); err != nil {
			return err
		}
	}
	if !withReferrers {
		return nil
	}
	var opts oras.ExtendedCopyGraphOptions
	opts.FindSuccessors = func(ctx context.Context, f content.Fetcher, d ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		if d.Digest == desc.Digest {
			return nil, nil // the bundle's config and layer: read copies them
		}
		if d.Size > maxManifestSize {
			return nil, fmt.Errorf("%w: referrer %s of %d bytes is larger than the limit of %d (%d MiB) by %d", ErrNotBundle, d.Digest, d.Size, maxManifestSize, maxManifestSize>>20, d.Size-maxManifestSize)
		}
		succ, err := content.Successors(ctx, f, d)
		if err != nil {
			return nil, err
		}
		for _, s := range succ {
			if s.Digest != desc.Digest && s.Size > maxManifestSize {
				return nil, fmt.Errorf("%w: %s, named by the referrer %s, is %d bytes, larger than the limit of %d (%d MiB) by %d", ErrNotBundle, s.Digest, d.Digest, s.Size, maxManifestSize, maxManifestSize>>20, s.Size-maxManifestSize)
			}
		}
		return succ, nil
	}
	return oras.ExtendedCopyGraph(ctx, src, named, desc, opts)
}

// fetchManifest fetches the manifest desc from s, at most
// maxManifestSize bytes, checked against its digest.
func fetchManifest(ctx context.Context, s content.Fetcher, desc ocispec.Descriptor) ([]byte, error) {
	if desc.Size > maxManifestSize {
		return nil, fmt.Errorf("%w: manifest of %d bytes is larger than the limit of %d (%d MiB) by %d", ErrNotBundle, desc.Size, maxManifestSize, maxManifestSize>>20, desc.Size-maxManifestSize)
	}
	data, err := content.FetchAll(ctx, s, desc)
	if err != nil {
		return nil, fmt.Errorf("reading the manifest %s: %w", desc.Digest, err)
	}
	return data, nil
}

// read fetches the manifest from dst and checks it, copies the config and
// the layer it names from src into dst where dst lacks them (src is nil
// when the cache stands in for an unreachable source), each read up to
// its declared size and checked against its digest, and unpacks the
// layer.
func read(ctx context.Context, src oras.ReadOnlyTarget, dst oras.GraphTarget, desc ocispec.Descriptor) (fs.FS, ocispec.Manifest, error) {
	data, err := fetchManifest(ctx, dst, desc)
	if err != nil {
		return nil, ocispec.Manifest{}, explain(err)
	}
	m, layer, err := parseManifest(data)
	if err != nil {
		return nil, m, err
	}
	if src != nil {
		for _, d := range []ocispec.Descriptor{m.Config, layer} {
			if err := copyBlob(ctx, src, dst, d); err != nil {
				return nil, m, explain(err)
			}
		}
	}
	blob, err := content.FetchAll(ctx, dst, layer)
	if err != nil {
		return nil, m, explain(err)
	}
	fsys, err := unpack(blob)
	return fsys, m, err
}

// copyBlob copies d from src into dst, unless dst has it: the push reads
// at most d.Size bytes and checks them against d's digest.
func copyBlob(ctx context.Context, src oras.ReadOnlyTarget, dst oras.Target, d ocispec.Descriptor) error {
	ok, err := dst.Exists(ctx, d)
	if err != nil || ok {
		return err
	}
	rc, err := src.Fetch(ctx, d)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := (namingStorage{dst}).Push(ctx, d, rc); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return err
	}
	return nil
}
