package bundle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
)

// Bundle is a pulled catalog and where it came from.
type Bundle struct {
	// Ref is the reference as given to Pull.
	Ref string
	// Digest is the manifest digest the reference resolved to.
	Digest digest.Digest
	// Catalog is the loaded catalog.
	Catalog *release.Catalog
	// Files holds the catalog's files as pushed (read-only).
	Files fs.FS
	// Annotations are the manifest's annotations (AnnotationVersions, ...).
	Annotations map[string]string
	// Verified is true when a signature was verified.
	Verified bool
	// Cached is true when the registry was unreachable and the bundle came
	// from the cache; Note says which digest was used and why.
	Cached bool
	Note   string
}

// Source is what the runner records in the Plan and the Status.
func (b *Bundle) Source() record.CatalogSource {
	return record.CatalogSource{Ref: b.Ref, Digest: b.Digest.String(), Cached: b.Cached, Note: b.Note}
}

// Pull fetches the bundle ref points to (see the package comment for the
// reference forms), verifies it, and loads its catalog. Everything pulled
// is checked against its digest, and the manifest against the limits
// before what it names is downloaded; with WithVerifyKey the signature is
// checked before the layer is downloaded (see the package comment's Order
// of checks). Catalog problems are a
// *release.LoadError whose files read REF:file; a bundle with no catalog
// document is refused (release.ErrInvalidCatalog), as release.LoadDir
// refuses such a directory.
//
// A Client remembers the catalogs it loaded last, by digest: pulling a
// digest again (a controller resolving its tag on every reconcile) still
// resolves, copies, verifies and reads the bundle, but does not parse its
// YAML again. Catalogs are read-only, so the same *release.Catalog may be
// returned to several callers.
func (c *Client) Pull(ctx context.Context, ref string) (*Bundle, error) {
	b, fsys, _, err := c.fetch(ctx, "pull", ref)
	if err != nil {
		return nil, err
	}
	if cat := c.loaded(b.Digest); cat != nil {
		b.Catalog = cat
		return b, nil
	}
	cat, err := release.Load(fsys)
	if err != nil {
		return nil, &Error{Op: "pull", Ref: ref, Digest: b.Digest.String(), Err: prefixProblems(err, ref)}
	}
	if len(cat.Releases) == 0 && len(cat.Components) == 0 && len(cat.Paths) == 0 {
		// As release.LoadDir refuses the same files in a directory.
		return nil, &Error{Op: "pull", Ref: ref, Digest: b.Digest.String(), Err: fmt.Errorf("%w: the bundle holds no catalog document: no .yaml or .yml file in it (hidden directories and Helm charts left out) has a Release, ComponentVersion or UpgradePath; check the reference", release.ErrInvalidCatalog)}
	}
	c.remember(b.Digest, cat)
	b.Catalog = cat
	return b, nil
}

// Fetch is Pull without loading the catalog: the bundle is resolved,
// copied into the cache, checked against its digests and its signature,
// and its files unpacked (Bundle.Files); Bundle.Catalog is nil.
func (c *Client) Fetch(ctx context.Context, ref string) (*Bundle, error) {
	b, _, _, err := c.fetch(ctx, "pull", ref)
	return b, err
}

// memoSize is how many loaded catalogs a Client remembers.
const memoSize = 4

func (c *Client) loaded(d digest.Digest) *release.Catalog {
	c.memoMu.Lock()
	defer c.memoMu.Unlock()
	for _, m := range c.memo {
		if m.digest == d {
			return m.catalog
		}
	}
	return nil
}

func (c *Client) remember(d digest.Digest, cat *release.Catalog) {
	c.memoMu.Lock()
	defer c.memoMu.Unlock()
	c.memo = append(c.memo, memoEntry{d, cat})
	if len(c.memo) > memoSize {
		c.memo = c.memo[1:]
	}
}

type memoEntry struct {
	digest  digest.Digest
	catalog *release.Catalog
}

// fetch resolves ref, copies the bundle with its signatures into the
// cache (or a memory store), verifies it and unpacks its files. It returns
// the store that holds the bundle.
func (c *Client) fetch(ctx context.Context, op, ref string) (*Bundle, fs.FS, oras.GraphTarget, error) {
	loc, err := ParseLocation(ref)
	if err != nil {
		return nil, nil, nil, err
	}
	fail := func(d digest.Digest, err error) (*Bundle, fs.FS, oras.GraphTarget, error) {
		return nil, nil, nil, &Error{Op: op, Ref: ref, Digest: string(d), Err: err}
	}
	if c.verification != VerifyOff && len(c.verifyCerts) == 0 {
		return fail("", fmt.Errorf("%w: WithVerifyKey(%s) was given no certificate, so no signature could verify; give the certificates of the signing keys (the CLI's --verify-key CERT)", ErrSignature, c.verification))
	}
	dst, err := c.store(ctx)
	if err != nil {
		return fail("", err)
	}
	b := &Bundle{Ref: ref}
	// Signatures are copied along when they are checked, or kept (Export,
	// Copy); a plain pull copies the bundle alone (no referrers query).
	withReferrers := c.verification != VerifyOff || op != "pull"
	desc, src, err := c.resolveInto(ctx, loc, dst, b, withReferrers)
	if err != nil {
		return fail(b.Digest, err)
	}
	b.Digest = desc.Digest
	fsys, m, err := c.check(ctx, loc, src, dst, desc, b)
	if err != nil {
		return fail(desc.Digest, err)
	}
	// Only a bundle that passed every check becomes what its reference
	// last resolved to (what the fallback uses).
	if err := dst.Tag(ctx, desc, loc.key()); err != nil {
		return fail(desc.Digest, fmt.Errorf("recording %s in the cache: %w", loc.key(), err))
	}
	b.Files, b.Annotations = fsys, m.Annotations
	return b, fsys, dst, nil
}

// check records desc in the cache, verifies its signature, copies what
// its manifest names from src (nil when the source is unreachable and the
// cache stands in for it) and reads it from dst. A bundle the cache holds
// damaged (see cache.go) is copied again from the source; with the source
// unreachable (b.Cached) it is refused.
func (c *Client) check(ctx context.Context, loc Location, src oras.ReadOnlyTarget, dst oras.GraphTarget, desc ocispec.Descriptor, b *Bundle) (fs.FS, ocispec.Manifest, error) {
	for round := 0; ; round++ {
		fsys, m, err := c.checkOnce(ctx, loc, src, dst, desc, b)
		if err == nil || c.cacheDir == "" || round == maxRepairs || ctx.Err() != nil {
			return fsys, m, err
		}
		bad := badEntries(ctx, dst, desc, src != nil)
		if len(bad) == 0 {
			return fsys, m, err
		}
		if b.Cached {
			return nil, m, c.damagedCacheError(loc, bad)
		}
		if err := c.repairCache(ctx, loc, dst, bad); err != nil {
			return nil, m, err
		}
	}
}

func (c *Client) checkOnce(ctx context.Context, loc Location, src oras.ReadOnlyTarget, dst oras.GraphTarget, desc ocispec.Descriptor, b *Bundle) (fs.FS, ocispec.Manifest, error) {
	// The digest names itself in the store (notation resolves it there).
	if err := dst.Tag(ctx, desc, desc.Digest.String()); err != nil {
		return nil, ocispec.Manifest{}, fmt.Errorf("recording %s in the cache: %w", desc.Digest, err)
	}
	b.Verified = false
	if c.verification != VerifyOff {
		v, err := newVerifier(c.verifyCerts)
		if err != nil {
			return nil, ocispec.Manifest{}, fmt.Errorf("%w: %v", ErrSignature, err)
		}
		switch err := verify(ctx, v, dst, loc.artifact(desc.Digest)); {
		case err == nil:
			b.Verified = true
		case errors.Is(err, ErrUnsigned) && c.verification == VerifyOptional:
			c.logger.Info("bundle: unsigned, accepted (verification optional)", "ref", loc.Raw, "digest", desc.Digest)
		case errors.Is(err, ErrUnsigned) && b.Cached:
			// The registry, which may hold signatures the cache lacks,
			// is down: the bundle is not known to be unsigned.
			return nil, ocispec.Manifest{}, fmt.Errorf("%w: %s, and its signatures are %w: %w (%s); pull it once with a verify key (the CLI's --verify-key) while the registry is up, so that its signatures are cached",
				ErrUnreachable, loc.Registry, ErrNotCached, unsignedError{"the cache holds no signature of the bundle"}, noCachedSignature)
		default:
			return nil, ocispec.Manifest{}, err
		}
	}
	return read(ctx, src, dst, desc)
}

// resolveInto resolves loc and copies the bundle's manifest (and its
// referrers, if asked) from the source into dst (copyManifest), checked
// against its digest and as a bundle's manifest before anything it names
// is copied. It returns the source, or nil when the registry is
// unreachable and fallback is on: loc is then resolved in the cache.
func (c *Client) resolveInto(ctx context.Context, loc Location, dst oras.GraphTarget, b *Bundle, withReferrers bool) (ocispec.Descriptor, oras.ReadOnlyTarget, error) {
	src, err := c.source(ctx, loc)
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	desc, err := resolve(ctx, src, loc)
	b.Digest = desc.Digest
	if err == nil {
		err = copyManifest(ctx, src, dst, desc, withReferrers)
	}
	var ce *oras.CopyError
	if errors.As(err, &ce) && ce.Op == "FindSuccessors" && ce.Origin == oras.CopyErrorOriginSource {
		err = fmt.Errorf("reading the manifest %s: %w", desc.Digest, ce.Err)
	}
	if err != nil {
		if loc.Layout == "" && unreachable(err) {
			desc, err := c.fallbackTo(ctx, loc, dst, b, err)
			return desc, nil, err
		}
		return desc, nil, explain(err)
	}
	return desc, src, nil
}

// namingStorage names the descriptor in the errors of Push: which blob
// did not match its digest.
type namingStorage struct{ content.Storage }

func (s namingStorage) Push(ctx context.Context, d ocispec.Descriptor, r io.Reader) error {
	if err := s.Storage.Push(ctx, d, r); err != nil {
		what := "blob"
		switch {
		case d.MediaType == LayerMediaType:
			what = "catalog layer"
		case d.ArtifactType == SignatureArtifactType, d.MediaType == "application/cose", d.MediaType == "application/jose+json":
			what = "signature"
		case d.MediaType == ocispec.MediaTypeImageManifest:
			what = "manifest"
		}
		return fmt.Errorf("%s %s: %w", what, d.Digest, err)
	}
	return nil
}

// resolve resolves loc in src. A digest pins the result; in
// REPO:TAG@DIGEST the digest wins and the tag is not looked at (as docker
// and oras do).
func resolve(ctx context.Context, src oras.ReadOnlyTarget, loc Location) (ocispec.Descriptor, error) {
	ref := loc.reference()
	if ref == "" {
		// A layout with no tag: its only bundle.
		return only(ctx, src, loc)
	}
	desc, err := src.Resolve(ctx, ref)
	if err != nil && loc.Layout != "" && errors.Is(err, errdef.ErrNotFound) {
		// explain's advice (the repository) does not fit a layout.
		what := "tag " + loc.Tag
		if loc.Digest != "" {
			what = "digest " + loc.Digest.String()
		}
		tags, terr := layoutTags(ctx, src)
		if terr != nil {
			return desc, fmt.Errorf("%s is not in the OCI layout %s (listing its tags: %v)", what, loc.Layout, terr)
		}
		return desc, fmt.Errorf("%s is not in the OCI layout %s, which holds the tags %v; write oci-layout://%s:TAG with one of them", what, loc.Layout, tags, loc.Layout)
	}
	if err != nil {
		return desc, err
	}
	if loc.Digest != "" && desc.Digest != loc.Digest {
		return desc, fmt.Errorf("%w: %s resolved to %s", ErrDigest, loc.Digest, desc.Digest)
	}
	return desc, nil
}

// only resolves the single tagged bundle of a layout.
func only(ctx context.Context, src oras.ReadOnlyTarget, loc Location) (ocispec.Descriptor, error) {
	tags, err := layoutTags(ctx, src)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if len(tags) != 1 {
		return ocispec.Descriptor{}, fmt.Errorf("%w: the layout has %d tags %v; write oci-layout://%s:TAG", ErrReference, len(tags), tags, loc.Layout)
	}
	return src.Resolve(ctx, tags[0])
}

// layoutTags returns the tags of a layout (not the digests it names
// itself by), sorted.
func layoutTags(ctx context.Context, src oras.ReadOnlyTarget) ([]string, error) {
	tl, ok := src.(interface {
		Tags(ctx context.Context, last string, fn func([]string) error) error
	})
	if !ok {
		return nil, fmt.Errorf("%w: no tag or digest", ErrReference)
	}
	var tags []string
	if err := tl.Tags(ctx, "", func(ts []string) error {
		for _, t := range ts {
			if _, err := digest.Parse(t); err != nil {
				tags = append(tags, t)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	slices.Sort(tags)
	return tags, nil
}

// fallbackTo resolves loc in the cache after the registry failed with
// cause.
func (c *Client) fallbackTo(ctx context.Context, loc Location, dst oras.GraphTarget, b *Bundle, cause error) (ocispec.Descriptor, error) {
	if !c.fallback || c.cacheDir == "" {
		how := "allow the cache fallback (WithCache and WithCacheFallback; the CLI's --cache-fallback) to use a bundle pulled before"
		return ocispec.Descriptor{}, fmt.Errorf("%w: %s: %v; check the registry address and that it is up, or %s", ErrUnreachable, loc.Registry, cause, how)
	}
	key := loc.key()
	if loc.Digest != "" {
		key = loc.Digest.String()
	}
	desc, err := dst.Resolve(ctx, key)
	if err != nil {
		return desc, fmt.Errorf("%w: %s: %v; and %w: pull %s once while the registry is up", ErrUnreachable, loc.Registry, cause, ErrNotCached, loc.key())
	}
	b.Cached = true
	if loc.Digest != "" {
		b.Note = fmt.Sprintf("registry %s unreachable: using the cached bundle of the same digest", loc.Registry)
	} else {
		b.Note = fmt.Sprintf("registry %s unreachable: using the cached bundle tag %s last resolved to (%s)", loc.Registry, loc.Tag, desc.Digest)
	}
	// A plain pull caches no signatures: say so, as nothing verifies the
	// bundle then and an Export or Copy from the cache carries none.
	if preds, err := dst.Predecessors(ctx, desc); err == nil && len(preds) == 0 {
		b.Note += "; the cache holds no signature of the bundle (" + noCachedSignature + ")"
	}
	c.logger.Warn("bundle: "+b.Note, "ref", loc.Raw, "digest", desc.Digest, "cause", cause)
	return desc, nil
}

// noCachedSignature says why a cached bundle may have no signature.
const noCachedSignature = "it is unsigned, or was cached by a pull that did not verify, which copies no signatures"

// explain maps oras-go's errors to this package's sentinels.
func explain(err error) error {
	var er *errcode.ErrorResponse
	switch {
	case errors.Is(err, content.ErrMismatchedDigest), errors.Is(err, content.ErrTrailingData),
		strings.Contains(err.Error(), "mismatch Content-Length"): // oras-go has no sentinel for this one
		return fmt.Errorf("%w (tampered or corrupt): %v", ErrDigest, err)
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return fmt.Errorf("%w: the registry asks for credentials and the Docker config has none for it; run docker login (or oras login) for the registry", err)
	case errors.As(err, &er) && (er.StatusCode == http.StatusUnauthorized || er.StatusCode == http.StatusForbidden):
		return fmt.Errorf("%w; check the credentials the Docker config holds for the registry (docker login)", err)
	case errors.Is(err, errdef.ErrNotFound):
		return fmt.Errorf("not found: %v; check the repository and tag (hopdag bundle push makes them)", err)
	}
	return err
}

// prefixProblems makes a LoadError's files read REF:file.
func prefixProblems(err error, ref string) error {
	var le *release.LoadError
	if !errors.As(err, &le) {
		return err
	}
	out := &release.LoadError{Problems: slices.Clone(le.Problems), Omitted: le.Omitted}
	for i := range out.Problems {
		out.Problems[i].File = ref + ":" + out.Problems[i].File
	}
	return out
}
