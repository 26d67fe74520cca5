package v1alpha1

// Version is a version as the catalog writes it: an optional "v", two or
// three dot-separated decimal numbers, an optional "-" prerelease and "+"
// build of dot-separated [0-9A-Za-z-] identifiers (release.ParseVersion's
// grammar). The API server refuses anything else; release.ParseVersion
// still has the last word (it also refuses numbers that overflow 64 bits).
//
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:Pattern=`^[vV]?[0-9]+\.[0-9]+(\.[0-9]+)?(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`
type Version string

// VersionPattern is the pattern of Version in the CRDs.
const VersionPattern = `^[vV]?[0-9]+\.[0-9]+(\.[0-9]+)?(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`

// Target is what a ClusterVersion's desiredVersion and installedVersion
// hold: a Version on the ClusterVersion's track, or a state across the
// tracks of a catalog whose releases tie them by supports:
// track=version[,track=version...] (path.ParseState, as hopdag's --from
// and --to take it). The API server refuses anything else, saying what
// to write (a CEL rule with a message: Version, which lists hold, keeps
// a pattern, as CEL's cost budget refuses a rule on unbounded lists).
//
// +kubebuilder:validation:MaxLength=512
// +kubebuilder:validation:XValidation:rule=`self.matches(r'^([vV]?[0-9]+\.[0-9]+(\.[0-9]+)?(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|[A-Za-z0-9._-]+=[vV]?[0-9]+\.[0-9]+(\.[0-9]+)?(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(,[A-Za-z0-9._-]+=[vV]?[0-9]+\.[0-9]+(\.[0-9]+)?(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?)*)$')`,message="must be a version such as v26.09, or a state across tracks such as platform=27.03.0,kubernetes=v1.34.0 (track=version, comma-separated)"
type Target string

// TrackPattern is the pattern of the track fields in the CRDs: the
// characters release.CheckTrackName allows ("" is the default track).
const TrackPattern = `^[A-Za-z0-9._-]*$`

// TargetPattern is the pattern of Target in the CRDs.
const TargetPattern = `^([vV]?[0-9]+\.[0-9]+(\.[0-9]+)?(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|[A-Za-z0-9._-]+=[vV]?[0-9]+\.[0-9]+(\.[0-9]+)?(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(,[A-Za-z0-9._-]+=[vV]?[0-9]+\.[0-9]+(\.[0-9]+)?(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?)*)$`
