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
