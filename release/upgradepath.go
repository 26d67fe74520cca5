package release

// UpgradePath holds the rules of which version may upgrade to which on one
// track. It is the spec of a `kind: UpgradePath` document; a catalog may hold
// several per track, and their rules add up.
type UpgradePath struct {
	// Name is the document's metadata.name.
	Name string `json:"name" yaml:"-"`
	// Track is the release track the rules apply to ("" is the default
	// track); its name takes the characters of Release.Track.
	Track string `json:"track,omitempty" yaml:"track,omitempty"`
	// Rules are the allowed, deprecated and blocked edges.
	Rules []Rule `json:"rules" yaml:"rules"`
	// Versions optionally lists versions with flags (installable, deprecated).
	Versions []VersionInfo `json:"versions,omitempty" yaml:"versions,omitempty"`

	// Source is where the document was loaded from.
	Source Source `json:"-" yaml:"-"`
}

// Rule allows (or blocks) upgrading from any version matching From to To.
type Rule struct {
	// From is an exact version or a range (see Constraint).
	From Constraint `json:"from" yaml:"from"`
	// To is an exact version with a Release in the catalog.
	To Version `json:"to" yaml:"to"`
	// Blocked, when set, says why the edge must never be used.
	Blocked string `json:"blocked,omitempty" yaml:"blocked,omitempty"`
	// Deprecated, when set, says why the edge should be avoided.
	Deprecated string `json:"deprecated,omitempty" yaml:"deprecated,omitempty"`
	// Risks must each be accepted by name before the edge is used.
	Risks []Risk `json:"risks,omitempty" yaml:"risks,omitempty"`
	// PreChecks run before the hop's components, PostChecks after.
	PreChecks  []Check `json:"preChecks,omitempty" yaml:"preChecks,omitempty"`
	PostChecks []Check `json:"postChecks,omitempty" yaml:"postChecks,omitempty"`
	// RuleControl: the hop's gate and failure policy (lifecycle.go).
	RuleControl `json:",inline" yaml:",inline"`

	// Source is where the rule was written.
	Source Source `json:"-" yaml:"-"`
}

// Risk is a known issue of an edge that a caller must accept to use it.
type Risk struct {
	Name    string `json:"name" yaml:"name"`
	Message string `json:"message,omitempty" yaml:"message,omitempty"`
	URL     string `json:"url,omitempty" yaml:"url,omitempty"`
}

// Check names a registered check function run around a hop. A Required
// check that fails stops the run; another is recorded as a warning.
type Check struct {
	Name     string `json:"name" yaml:"name"`
	Required bool   `json:"required,omitempty" yaml:"required,omitempty"`
}

// VersionInfo flags one version of the track.
type VersionInfo struct {
	Version Version `json:"version" yaml:"version"`
	// Installable is nil or true when the version may be a hop target.
	Installable *bool `json:"installable,omitempty" yaml:"installable,omitempty"`
	// Deprecated, when set, says why the version should be avoided.
	Deprecated string `json:"deprecated,omitempty" yaml:"deprecated,omitempty"`
	// Channels lists the channels the version belongs to (stable, fast,
	// candidate...): a route asked to follow a channel enters only its
	// versions. See InChannel.
	Channels []string `json:"channels,omitempty" yaml:"channels,omitempty"`
}

// IsInstallable reports whether the version may be a hop target.
func (vi *VersionInfo) IsInstallable() bool { return vi.Installable == nil || *vi.Installable }
