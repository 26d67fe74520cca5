package release

// Release is a product version and the component versions it ships (a
// ReleaseImage). It is the spec of a `kind: Release` document.
type Release struct {
	// Name is the document's metadata.name.
	Name string `json:"name" yaml:"-"`
	// Version is the product version ("v26.06").
	Version Version `json:"version" yaml:"version"`
	// Track is the release line this release belongs to ("" is the single
	// default track; a catalog may hold several, e.g. platform and kubernetes).
	// A track name takes letters, digits, ".", "_" and "-" only: it is
	// written in step names (TRACK=VERSION) and states (track=version,...).
	Track string `json:"track,omitempty" yaml:"track,omitempty"`
	// Components lists what the release ships, in declared order.
	Components []ComponentRef `json:"components" yaml:"components"`
	// Supports maps another track to the versions of it this release runs with.
	Supports map[string]Constraint `json:"supports,omitempty" yaml:"supports,omitempty"`
	// Compatibility lists constraints between the release's components,
	// checked at load.
	Compatibility []Compatibility `json:"compatibility,omitempty" yaml:"compatibility,omitempty"`

	// Source is where the document was loaded from.
	Source Source `json:"-" yaml:"-"`
}

// ComponentRef names one component version a release ships.
type ComponentRef struct {
	Name    string  `json:"name" yaml:"name"`
	Version Version `json:"version" yaml:"version"`
}

// Compatibility says: when the release ships Component, it must ship
// Requires at a version that satisfies Versions.
type Compatibility struct {
	Component string     `json:"component" yaml:"component"`
	Requires  string     `json:"requires" yaml:"requires"`
	Versions  Constraint `json:"versions" yaml:"versions"`
}

// Ships returns the version of the named component in r.
func (r *Release) Ships(name string) (Version, bool) {
	for _, c := range r.Components {
		if c.Name == name {
			return c.Version, true
		}
	}
	return Version{}, false
}
