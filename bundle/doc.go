// Package bundle keeps hopdag catalogs in OCI registries and OCI image
// layouts: push a catalog directory as an OCI artifact, pull it back by tag
// or by digest into a release.Catalog, sign and verify it with Notary
// Project signatures, export it (with its signatures) to an OCI image
// layout directory or tarball for offline sites, copy it between
// registries, and fall back to a local content-addressed cache when the
// registry cannot be reached.
//
// # Format
//
// A bundle is one OCI image manifest (schema 2, image-spec v1.1) with
//
//   - artifactType ArtifactType (application/vnd.hopdag.catalog.v1),
//   - the empty config (application/vnd.oci.empty.v1+json),
//   - one layer of LayerMediaType (application/vnd.hopdag.catalog.v1.tar+gzip):
//     a gzip-compressed tar of the catalog's files: the documents
//     release.Load reads (release.CatalogFiles: .yaml and .yml of any case,
//     not under a hidden name), the manifest templates they reference, and
//     every file of the local Helm charts (each chart directory, and the
//     chart directory or archive a helm component names by a path), under
//     catalog/ at their paths relative to the catalog root (with their
//     directories), sorted, with zeroed times and owners so that the same
//     directory always makes the same digest,
//   - annotations AnnotationVersions (the catalog's release versions, sorted
//     and comma-separated) and AnnotationReleases (how many).
//
// The layer also carries the annotations the oras CLI reads to unpack a
// directory (org.opencontainers.image.title "catalog",
// io.deis.oras.content.unpack and io.deis.oras.content.digest), so that
// `oras pull REF` writes the catalog directory as it was pushed.
//
// Signatures are Notary Project signatures (COSE envelopes) attached to the
// manifest as OCI referrers, the format `notation sign` and `notation
// verify` use; signing takes the user's private key and X.509 certificate
// (GenerateKey makes a self-signed pair), verification the certificate.
// Verification is offline: no transparency log, no revocation lookup.
//
// # References
//
// Every function that takes a reference accepts
//
//	oci://REGISTRY/REPOSITORY[:TAG][@DIGEST]   (or the same without oci://)
//	oci-layout://PATH[:TAG][@DIGEST]            an OCI image layout directory, or a .tar of one
//
// A reference pinned by digest is checked byte for byte; a tag is resolved
// to a digest, which Bundle.Digest and Bundle.Source report, so that the
// runner records it in the Plan and the Status (record.CatalogSource).
//
// # Order of checks
//
// Pull fetches the manifest first (at most 4 MiB, verified against its
// digest) and checks it: one layer of LayerMediaType of at most 64 MiB
// declared, a config of at most 4 KiB. Only then is it copied into the
// cache (or memory, with no cache), with its signatures when it verifies
// or exports (each at most 4 MiB); then the signature is verified (when a
// key is configured); then the config and the layer are copied, each read
// up to its declared size and verified against its digest as it streams;
// then the layer is unpacked, bounded as it streams: at most 256 MiB of
// tar (headers included), 100,000 entries (files and directories), paths
// of at most 4 KiB and 64 directories; and only then is the catalog
// loaded, which must hold a catalog document (as release.LoadDir
// requires). A bundle its manifest shows is not one downloads nothing
// more, and a tampered, unsigned or wrongly signed bundle is refused
// before its layer is downloaded. Errors are *Error values naming the reference and matching the
// sentinels below with errors.Is; catalog problems are a *release.LoadError
// whose files read REF:file.
//
// # Cache and fallback
//
// WithCache keeps every pulled bundle in an OCI image layout directory
// (content-addressed: blobs/sha256/...), with the digest each reference last
// resolved to (recorded only once a bundle passed every check). With
// WithCacheFallback, a registry that cannot be reached (connection
// refused, DNS, timeout, a gateway's 502/503/504) makes Pull use the
// cached bundle of the same digest or, for a tag, the one it last
// resolved to; Bundle.Cached and
// Bundle.Note say so. A cached blob is not copied again, nor read, until
// the bundle is read: one that is damaged or gone then (other bytes, cut
// short, removed) is copied again from the registry, checked against its
// digest as everything copied is; with the registry unreachable the
// fallback refuses the bundle, naming the damaged file (ErrNotCached). A
// pull that does not verify caches no signatures: a fallback that must
// verify such a bundle refuses it (ErrNotCached and ErrUnsigned), and
// Bundle.Note of one that need not (an Export from the cache) says the
// cache holds no signature. One
// Client may be used by several goroutines; two processes should not share
// a cache directory while both write to it.
//
// # Registries, credentials and TLS
//
// Credentials come from the Docker config file (~/.docker/config.json and
// its credential helpers), as `docker login` and `oras login` write it.
// Plain HTTP is used only for localhost, 127.0.0.0/8 and [::1], or for
// every registry with WithPlainHTTP.
package bundle
