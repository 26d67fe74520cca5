package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"

	"helm.sh/helm/v4/pkg/registry"

	"github.com/hopdag/hopdag/release"
)

// pinManifest resolves an oci:// chart's tag (h.Version, or the tag in
// h.Chart) and compares its manifest digest, the digest `helm push`
// prints, with h.Digest. When they are equal it returns the reference by
// that digest (oci://host/repo@sha256:...) and verified: pulling by digest,
// the registry client checks the content it fetches. Otherwise it returns
// h.Chart and the manifest digest it found, for checkDigest to compare
// the archive (the chart layer) and report both.
func pinManifest(rc *registry.Client, h *release.HelmChart) (ref, manifest string, verified bool, err error) {
	bare := strings.TrimPrefix(h.Chart, "oci://")
	if _, d, ok := strings.Cut(bare, "@"); ok {
		return h.Chart, d, d == h.Digest, nil
	}
	repo, tag := bare, ""
	if i := strings.LastIndexByte(bare, ':'); i > strings.LastIndexByte(bare, '/') {
		repo, tag = bare[:i], bare[i+1:]
	}
	if tag == "" {
		tag = h.Version
	}
	if tag == "" {
		return h.Chart, "", false, nil // no tag to resolve: the archive is checked
	}
	desc, err := rc.Resolve(repo + ":" + tag)
	if err != nil {
		return "", "", false, fmt.Errorf("resolve chart %s %s for its digest: %w", h.Chart, tag, err)
	}
	manifest = desc.Digest.String()
	if manifest == h.Digest {
		return "oci://" + repo + "@" + manifest, manifest, true, nil
	}
	return h.Chart, manifest, false, nil
}

// checkDigest checks the chart archive at path against cv's pinned
// digest, if any: the SHA-256 of the .tgz. manifest is an OCI chart's
// manifest digest, for the error ("" for other charts).
func checkDigest(cv *release.ComponentVersion, path, manifest string) error {
	want := cv.Helm.Digest
	if want == "" {
		return nil
	}
	hexWant, ok := strings.CutPrefix(want, "sha256:")
	if !ok {
		return fmt.Errorf("helm: %s: digest %q: write sha256:HEX", cv.Key(), want)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("helm: %s: digest: %w", cv.Key(), err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return fmt.Errorf("helm: %s: chart %s is a directory: a digest pins an archive (.tgz)", cv.Key(), cv.Helm.Chart)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("helm: %s: digest: %w", cv.Key(), err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if got == hexWant {
		return nil
	}
	if manifest != "" {
		return fmt.Errorf("helm: %s: chart %s has manifest digest %s (the digest helm push prints) and archive digest sha256:%s (its chart layer), the catalog pins %s",
			cv.Key(), cv.Helm.Chart, manifest, got, want)
	}
	return fmt.Errorf("helm: %s: chart %s has archive digest sha256:%s (the SHA-256 of the .tgz), the catalog pins %s", cv.Key(), cv.Helm.Chart, got, want)
}
