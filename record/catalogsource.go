package record

// CatalogSource says which catalog bundle a plan was made from, so that a
// run can say exactly what it executed. The bundle package fills it in
// (bundle.Bundle.Source); it is empty for a catalog read from a directory.
// runner.NewStatus copies it into the Status.
//
// The digest is what a resumed run must match, not the reference: once a
// status records a Digest, runner.Executor.Execute refuses
// (runner.ErrPlanMismatch, naming the recorded reference and digest and
// how to resume) a plan whose Digest differs, however its reference is
// spelled, and a plan from a directory, which has no digest to compare.
// The same digest under another reference (a tag or the digest itself,
// the registry or a layout exported from it, the local cache) is the same
// bundle and resumes; the status then records this run's source whole:
// the reference in use, the same digest, and whether it came from the
// cache. A status with no digest (made from a directory) resumes with any
// catalog the plan check accepts.
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
