package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"
)

// The cache is an OCI image layout that oras-go copies into: a blob or a
// manifest it already holds is not copied again, nor read, so a damaged or
// missing blob there (a disk error, a full disk, someone's rm) shows only
// when the bundle is read. fetch then looks for the damage (badEntries):
// with the registry up it removes what is damaged and copies it again
// from the registry (repairCache), whose content is checked against its
// digest as it is copied, so a tampered registry is still refused; with
// the registry down (the fallback) the cached bundle cannot stand in, and
// the error names the damaged files.

// maxRepairs bounds the rounds of repair of one fetch: a damaged manifest
// hides the damage of what it names until it is copied again.
const maxRepairs = 3

// openCache opens the cache at dir. oras-go reads every manifest the
// layout's index names when it opens one, and a damaged one fails the
// open: such a manifest is removed (a missing manifest is skipped), so
// that the next pull copies it again.
func openCache(ctx context.Context, dir string) (*oci.Store, error) {
	s, err := oci.NewWithContext(ctx, dir)
	if err == nil || !damaged(err) {
		return s, err
	}
	removed, rerr := removeDamagedManifests(dir)
	if rerr != nil || len(removed) == 0 {
		return nil, err
	}
	return oci.NewWithContext(ctx, dir)
}

// removeDamagedManifests removes the manifests of the layout's index
// (index.json) whose file does not match its digest, and returns their
// paths.
func removeDamagedManifests(dir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, ocispec.ImageIndexFile))
	if err != nil {
		return nil, err
	}
	var index ocispec.Index
	if err := json.Unmarshal(data, &index); err != nil {
		return nil, err
	}
	var removed []string
	for _, d := range index.Manifests {
		p := blobFile(dir, d.Digest)
		if p == "" || slices.Contains(removed, p) || intact(p, d) {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}

// intact reports whether the file p holds d (or is missing: oras-go skips
// a missing manifest).
func intact(p string, d ocispec.Descriptor) bool {
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = content.ReadAll(f, d)
	return err == nil
}

// damaged reports whether err says content did not match its digest or
// its size, or was not there.
func damaged(err error) bool {
	return errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

// blobFile is where the layout at dir keeps the blob of d, or "" for a
// digest that names no file.
func blobFile(dir string, d digest.Digest) string {
	if d.Validate() != nil {
		return ""
	}
	return filepath.Join(dir, ocispec.ImageBlobsDir, d.Algorithm().String(), d.Encoded())
}

// badEntries returns the nodes of the bundle desc in the cache s, and of
// its signatures, that are missing or do not match their digest, sorted by
// digest: the manifest (and then nothing under it, which it names), or
// the blobs it names, the signature manifests and their blobs. With
// online (the source is reachable), a blob the manifest names that is
// missing is not listed: read copies it, once the signature is verified.
func badEntries(ctx context.Context, s oras.ReadOnlyGraphTarget, desc ocispec.Descriptor, online bool) []ocispec.Descriptor {
	var bad []ocispec.Descriptor
	// check fetches d and returns its content when it is a manifest.
	check := func(d ocispec.Descriptor, missingOK bool) (ocispec.Manifest, bool) {
		data, err := content.FetchAll(ctx, s, d)
		if err != nil {
			if !missingOK || !errors.Is(err, errdef.ErrNotFound) {
				bad = append(bad, d)
			}
			return ocispec.Manifest{}, false
		}
		var m ocispec.Manifest
		return m, json.Unmarshal(data, &m) == nil
	}
	m, ok := check(desc, false)
	if !ok {
		return bad
	}
	for _, d := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
		check(d, online)
	}
	// The signatures: the manifests whose subject is the bundle.
	preds, _ := s.Predecessors(ctx, desc)
	for _, p := range preds {
		if sm, ok := check(p, false); ok {
			for _, d := range sm.Layers {
				check(d, false)
			}
		}
	}
	slices.SortFunc(bad, func(a, b ocispec.Descriptor) int { return strings.Compare(string(a.Digest), string(b.Digest)) })
	return slices.CompactFunc(bad, func(a, b ocispec.Descriptor) bool { return a.Digest == b.Digest })
}

// repairCache removes the files of bad from the cache and copies them
// (and what a manifest among them names, where missing) from the source
// loc names again, each checked against its digest.
func (c *Client) repairCache(ctx context.Context, loc Location, dst oras.GraphTarget, bad []ocispec.Descriptor) error {
	src, err := c.source(ctx, loc)
	if err != nil {
		return err
	}
	for _, d := range bad {
		if p := blobFile(c.cacheDir, d.Digest); p != "" {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("removing the damaged cache entry %s: %w", p, err)
			}
		}
		c.logger.Warn("bundle: the cache entry is corrupt or incomplete; copying it again", "entry", blobFile(c.cacheDir, d.Digest), "ref", loc.Raw)
	}
	for _, d := range bad {
		if err := oras.CopyGraph(ctx, src, namingStorage{dst}, d, oras.CopyGraphOptions{}); err != nil {
			return explain(err)
		}
	}
	return nil
}

// damagedCacheError is the error of a fallback whose cached bundle is
// damaged.
func (c *Client) damagedCacheError(loc Location, bad []ocispec.Descriptor) error {
	paths := make([]string, len(bad))
	for i, d := range bad {
		paths[i] = blobFile(c.cacheDir, d.Digest)
	}
	what := "cache entry " + paths[0] + " is corrupt or incomplete; remove it"
	if len(paths) > 1 {
		what = "cache entries " + strings.Join(paths, ", ") + " are corrupt or incomplete; remove them"
	}
	return fmt.Errorf("%w: %s, and the bundle is %w: the %s or pull while the registry is up", ErrUnreachable, loc.Registry, ErrNotCached, what)
}
