package bundle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/errdef"

	"github.com/hopdag/hopdag/release"
)

// Pushed describes a pushed bundle.
type Pushed struct {
	Ref    string
	Digest digest.Digest
	// Size is the manifest's size in bytes.
	Size int64
	// Files lists the catalog files the bundle holds, sorted.
	Files  []string
	Signed bool
}

// Push validates the catalog in dir (an invalid catalog is never pushed),
// packs the files Load read and what they name (the catalog documents, the
// manifest files, the local Helm charts whole; not hidden files and
// directories nor other files) into a bundle, pushes it to ref (a registry
// repository with a tag, or an OCI layout: oci-layout://PATH:TAG, a
// directory or a .tar, created if missing), signs it when a signing key is
// configured, and tags it last: a signing key that does not belong to its
// certificate is refused before anything is pushed, and a failure at any
// step leaves the tag where it was. Pushing the same directory again makes
// the same digest.
func (c *Client) Push(ctx context.Context, dir, ref string) (*Pushed, error) {
	loc, err := ParseLocation(ref)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Pushed, error) { return nil, &Error{Op: "push", Ref: ref, Err: err} }
	if loc.Tag == "" {
		return fail(fmt.Errorf("%w: push needs a tag (REF:TAG)", ErrReference))
	}
	// The signer is checked before anything is pushed, and the tag moves
	// last, once the bundle and its signature are there: a failure at any
	// step leaves the tag where it was.
	s, err := c.signer()
	if err != nil {
		return fail(fmt.Errorf("%w; nothing was pushed", err))
	}
	cat, err := release.LoadDir(dir)
	if err != nil {
		return fail(fmt.Errorf("catalog %s is invalid, nothing was pushed: %w", dir, err))
	}
	fsys := os.DirFS(dir)
	files, err := catalogFiles(fsys, cat)
	if err != nil {
		return fail(err)
	}
	layer, tarDigest, err := pack(fsys, files)
	if err != nil {
		return fail(err)
	}
	if len(layer) > maxLayerSize {
		return fail(fmt.Errorf("the catalog packs to %d bytes, more than the %d a bundle may hold", len(layer), maxLayerSize))
	}
	manifest, err := newManifest(cat, layer, tarDigest)
	if err != nil {
		return fail(err)
	}
	mdesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactType, Digest: digest.FromBytes(manifest), Size: int64(len(manifest))}
	out := &Pushed{Ref: ref, Digest: mdesc.Digest, Size: mdesc.Size, Files: files}
	blobs := []struct {
		mediaType string
		data      []byte
	}{{ocispec.MediaTypeEmptyJSON, ocispec.DescriptorEmptyJSON.Data}, {LayerMediaType, layer}}
	var signErr error
	err = c.writeTo(ctx, loc, func(dst oras.GraphTarget) error {
		for _, b := range blobs {
			desc := ocispec.Descriptor{MediaType: b.mediaType, Digest: digest.FromBytes(b.data), Size: int64(len(b.data))}
			if err := pushIfMissing(ctx, dst, desc, b.data); err != nil {
				return err
			}
		}
		if err := pushIfMissing(ctx, dst, mdesc, manifest); err != nil {
			return err
		}
		if s != nil {
			if signErr = sign(ctx, s, dst, mdesc.Digest); signErr != nil {
				return signErr
			}
			out.Signed = true
		}
		return dst.Tag(ctx, mdesc, loc.Tag)
	})
	switch {
	case signErr != nil:
		return nil, &Error{Op: "sign", Ref: ref, Digest: mdesc.Digest.String(), Err: fmt.Errorf("%w; the tag %s was not moved", signErr, loc.Tag)}
	case err != nil:
		return fail(explainPush(err, loc))
	}
	return out, nil
}

// writeTo runs write on the registry repository or the OCI layout (a
// directory or a .tar) loc names.
func (c *Client) writeTo(ctx context.Context, loc Location, write func(oras.GraphTarget) error) error {
	if loc.Layout != "" {
		return updateLayout(ctx, loc.Layout, write)
	}
	repo, err := c.repository(loc)
	if err != nil {
		return err
	}
	return write(repo)
}

func pushIfMissing(ctx context.Context, dst oras.Target, desc ocispec.Descriptor, data []byte) error {
	ok, err := dst.Exists(ctx, desc)
	if err != nil || ok {
		return err
	}
	err = dst.Push(ctx, desc, bytes.NewReader(data))
	if errors.Is(err, errdef.ErrAlreadyExists) {
		return nil
	}
	return err
}

func explainPush(err error, loc Location) error {
	if loc.Layout == "" && unreachable(err) {
		return fmt.Errorf("%w: %s: %v; check the registry address and that it is up", ErrUnreachable, loc.Registry, err)
	}
	return explain(err)
}
