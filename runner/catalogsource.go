package runner

import "fmt"

// CatalogSource says which catalog bundle a plan was made from, so that a
// run can say exactly what it executed. The bundle package fills it in
// (bundle.Bundle.Source); it is empty for a catalog read from a directory.
// NewStatus copies it into the Status; Execute refuses to resume a status
// whose source has the same Ref but another Digest (ErrPlanMismatch, naming
// both digests), and records on the status whether this run's catalog came
// from the local cache.
type CatalogSource struct {
	// Ref is the reference as the user gave it (oci://REF, oci-layout://PATH:TAG).
	Ref string `json:"ref,omitempty" yaml:"ref,omitempty"`
	// Digest is the manifest digest the reference resolved to.
	Digest string `json:"digest,omitempty" yaml:"digest,omitempty"`
	// Cached is true when the bundle came from the local cache because the
	// registry was unreachable (openFuyao's cacheFallback).
	Cached bool `json:"cached,omitempty" yaml:"cached,omitempty"`
	// Note says how the digest was found when that is not obvious, e.g. "registry
	// unreachable: using the digest this tag last resolved to".
	Note string `json:"note,omitempty" yaml:"note,omitempty"`
}

// String is "REF (DIGEST)", then "; NOTE" when there is a note.
func (s CatalogSource) String() string {
	out := s.Ref
	if s.Digest != "" {
		out += " (" + s.Digest + ")"
	}
	if s.Note != "" {
		out += "; " + s.Note
	}
	return out
}

// checkSource returns why a status made from prev cannot be resumed with a
// plan made from cur, or nil.
func checkSource(prev, cur CatalogSource) error {
	if prev.Ref == "" || prev.Ref != cur.Ref || prev.Digest == cur.Digest {
		return nil
	}
	return fmt.Errorf("%w: catalog %s was %s when this run started and is %s now; resume with the bundle pinned by digest (%s@%s), or start over with no previous status",
		ErrPlanMismatch, prev.Ref, prev.Digest, cur.Digest, prev.Ref, prev.Digest)
}
