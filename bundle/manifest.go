package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hopdag/hopdag/release"
)

// Media types and annotations of a bundle (see the package comment).
const (
	ArtifactType   = "application/vnd.hopdag.catalog.v1"
	LayerMediaType = "application/vnd.hopdag.catalog.v1.tar+gzip"
	// AnnotationVersions lists the catalog's release versions, sorted
	// (semantically) and comma-separated.
	AnnotationVersions = "io.hopdag.catalog.versions"
	// AnnotationReleases is the number of releases.
	AnnotationReleases = "io.hopdag.catalog.releases"
)

// Annotations of the oras CLI's directory layers, so that `oras pull`
// unpacks the catalog.
const (
	orasUnpack     = "io.deis.oras.content.unpack"
	orasTarDigest  = "io.deis.oras.content.digest"
	layerTitle     = "catalog"
	maxAnnotations = 1 << 20 // bytes of the versions annotation
)

// newManifest is the manifest of a bundle whose layer is layer (gzip of a
// tar whose digest is tarDigest).
func newManifest(c *release.Catalog, layer []byte, tarDigest digest.Digest) ([]byte, error) {
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Config:       ocispec.DescriptorEmptyJSON,
		Layers: []ocispec.Descriptor{{
			MediaType: LayerMediaType,
			Digest:    digest.FromBytes(layer),
			Size:      int64(len(layer)),
			Annotations: map[string]string{
				ocispec.AnnotationTitle: layerTitle,
				orasUnpack:              "true",
				orasTarDigest:           tarDigest.String(),
			},
		}},
		Annotations: versionAnnotations(c),
	}
	return json.Marshal(m)
}

// versionAnnotations are the catalog's versions, sorted.
func versionAnnotations(c *release.Catalog) map[string]string {
	rs := slices.Clone(c.Releases)
	slices.SortFunc(rs, func(a, b release.Release) int {
		if n := strings.Compare(a.Track, b.Track); n != 0 {
			return n
		}
		return a.Version.Compare(b.Version)
	})
	vs := make([]string, 0, len(rs))
	for _, r := range rs {
		vs = append(vs, r.Version.Original())
	}
	vs = slices.Compact(vs)
	s := strings.Join(vs, ",")
	if len(s) > maxAnnotations {
		s = s[:strings.LastIndex(s[:maxAnnotations], ",")] + ",..."
	}
	return map[string]string{AnnotationVersions: s, AnnotationReleases: strconv.Itoa(len(c.Releases))}
}

// parseManifest reads an untrusted manifest and returns the descriptor of
// its catalog layer, or why it is not a bundle.
func parseManifest(data []byte) (ocispec.Manifest, ocispec.Descriptor, error) {
	var m ocispec.Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return m, ocispec.Descriptor{}, fmt.Errorf("%w: manifest is not JSON: %v", ErrNotBundle, err)
	}
	if dec.More() {
		return m, ocispec.Descriptor{}, fmt.Errorf("%w: manifest has data after its JSON object", ErrNotBundle)
	}
	if m.SchemaVersion != 2 {
		return m, ocispec.Descriptor{}, fmt.Errorf("%w: manifest schemaVersion is %d, want 2", ErrNotBundle, m.SchemaVersion)
	}
	if m.MediaType != ocispec.MediaTypeImageManifest {
		return m, ocispec.Descriptor{}, fmt.Errorf("%w: manifest mediaType is %q, want %q", ErrNotBundle, m.MediaType, ocispec.MediaTypeImageManifest)
	}
	if m.ArtifactType != ArtifactType {
		return m, ocispec.Descriptor{}, fmt.Errorf("%w: artifactType is %q, want %q; push catalogs with hopdag bundle push", ErrNotBundle, m.ArtifactType, ArtifactType)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != LayerMediaType {
		types := make([]string, len(m.Layers))
		for i, l := range m.Layers {
			types[i] = l.MediaType
		}
		return m, ocispec.Descriptor{}, fmt.Errorf("%w: want one layer of %s, got [%s]", ErrNotBundle, LayerMediaType, strings.Join(types, ", "))
	}
	l := m.Layers[0]
	if err := checkBlob("layer", l, maxLayerSize); err != nil {
		return m, ocispec.Descriptor{}, err
	}
	if err := checkBlob("config", m.Config, maxConfigSize); err != nil {
		return m, ocispec.Descriptor{}, err
	}
	return m, l, nil
}

// checkBlob checks the descriptor d of the manifest's what (layer,
// config): a valid digest, a size from 0 to limit.
func checkBlob(what string, d ocispec.Descriptor, limit int64) error {
	if err := d.Digest.Validate(); err != nil {
		return fmt.Errorf("%w: %s digest %q: %v", ErrNotBundle, what, d.Digest, err)
	}
	switch {
	case d.Size < 0:
		return fmt.Errorf("%w: %s size %d is negative", ErrNotBundle, what, d.Size)
	case d.Size > limit && limit >= 1<<20:
		return fmt.Errorf("%w: %s of %d bytes is larger than the limit of %d (%d MiB) by %d", ErrNotBundle, what, d.Size, limit, limit>>20, d.Size-limit)
	case d.Size > limit:
		return fmt.Errorf("%w: %s of %d bytes is larger than the limit of %d by %d", ErrNotBundle, what, d.Size, limit, d.Size-limit)
	}
	return nil
}
