package release

import (
	"cmp"
	"slices"
)

// Catalog is everything a catalog directory declares: releases, component
// versions and upgrade paths, validated and indexed. Build one with Load (from
// YAML) or NewCatalog (from values); both check the same rules, except that
// only Load refuses dependency cycles (NewCatalog leaves them to dag.Build,
// which reports them with the same walk).
//
// Releases are sorted by track then version, Components by name then version,
// Paths by track then name. A Catalog is read-only after construction and
// safe for concurrent use.
type Catalog struct {
	Releases   []Release          `json:"releases"`
	Components []ComponentVersion `json:"components"`
	Paths      []UpgradePath      `json:"paths,omitempty"`

	releases   map[trackKey]*Release
	components map[compKey]*ComponentVersion
	warnings   []Problem
}

// Warnings lists what the catalog says that does nothing, though it loaded:
// a rule that gives no edge (its from admits no version, or names the
// version it upgrades to). Each is a Problem with its file:line and fix,
// sorted as a LoadError's; none makes Load fail.
func (c *Catalog) Warnings() []Problem { return slices.Clone(c.warnings) }

type trackKey struct{ track, version string }
type compKey struct{ name, version string }

// NewCatalog validates and indexes the given values (they are copied). It
// returns a *LoadError listing every problem, as Load does.
func NewCatalog(releases []Release, components []ComponentVersion, paths []UpgradePath) (*Catalog, error) {
	c := &Catalog{}
	for i := range releases {
		c.Releases = append(c.Releases, *releases[i].DeepCopy())
	}
	for i := range components {
		c.Components = append(c.Components, *components[i].DeepCopy())
	}
	for i := range paths {
		c.Paths = append(c.Paths, *paths[i].DeepCopy())
	}
	var ps, ws problems
	validate(c, nil, nil, &ps, &ws)
	if err := ps.err(); err != nil {
		return nil, err
	}
	c.warnings = ws.sorted()
	return c, nil
}

// index sorts the slices and builds the lookup maps. Duplicates keep the
// first entry (validate reports them).
func (c *Catalog) index() {
	slices.SortStableFunc(c.Releases, func(a, b Release) int {
		return cmp.Or(cmp.Compare(a.Track, b.Track), a.Version.Compare(b.Version))
	})
	slices.SortStableFunc(c.Components, func(a, b ComponentVersion) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), a.Version.Compare(b.Version))
	})
	slices.SortStableFunc(c.Paths, func(a, b UpgradePath) int {
		return cmp.Or(cmp.Compare(a.Track, b.Track), cmp.Compare(a.Name, b.Name))
	})
	c.releases = make(map[trackKey]*Release, len(c.Releases))
	for i := range c.Releases {
		r := &c.Releases[i]
		k := trackKey{r.Track, r.Version.Canonical()}
		if _, dup := c.releases[k]; !dup {
			c.releases[k] = r
		}
	}
	c.components = make(map[compKey]*ComponentVersion, len(c.Components))
	for i := range c.Components {
		cv := &c.Components[i]
		k := compKey{cv.Name, cv.Version.Canonical()}
		if _, dup := c.components[k]; !dup {
			c.components[k] = cv
		}
	}
}

// Release returns the release of the default track ("") with version v.
func (c *Catalog) Release(v Version) (*Release, bool) { return c.ReleaseOn("", v) }

// ReleaseOn returns the release of track with version v.
func (c *Catalog) ReleaseOn(track string, v Version) (*Release, bool) {
	r, ok := c.releases[trackKey{track, v.Canonical()}]
	return r, ok
}

// Component returns the component version name@v.
func (c *Catalog) Component(name string, v Version) (*ComponentVersion, bool) {
	cv, ok := c.components[compKey{name, v.Canonical()}]
	return cv, ok
}

// ComponentsOf returns the component versions r ships, in r's declared order.
// A reference the catalog cannot resolve is left out (Load refuses such
// catalogs, so this only happens for a Release built outside the catalog).
func (c *Catalog) ComponentsOf(r *Release) []*ComponentVersion {
	out := make([]*ComponentVersion, 0, len(r.Components))
	for _, ref := range r.Components {
		if cv, ok := c.Component(ref.Name, ref.Version); ok {
			out = append(out, cv)
		}
	}
	return out
}

// Versions returns the versions of the default track, ascending.
func (c *Catalog) Versions() []Version { return c.TrackVersions("") }

// TrackVersions returns the versions of a track, ascending.
func (c *Catalog) TrackVersions(track string) []Version {
	var out []Version
	for i := range c.Releases {
		if c.Releases[i].Track == track {
			out = append(out, c.Releases[i].Version)
		}
	}
	return out
}

// Tracks returns the tracks that have releases, sorted ("" first when present).
func (c *Catalog) Tracks() []string {
	var out []string
	for i := range c.Releases {
		if n := len(out); n == 0 || out[n-1] != c.Releases[i].Track {
			out = append(out, c.Releases[i].Track)
		}
	}
	return out
}

// Rules returns the rules of every UpgradePath of track, in path-name then
// declared order.
func (c *Catalog) Rules(track string) []Rule {
	var out []Rule
	for i := range c.Paths {
		if c.Paths[i].Track == track {
			out = append(out, c.Paths[i].Rules...)
		}
	}
	return out
}

// VersionInfo returns the flags an UpgradePath of track lists for v.
func (c *Catalog) VersionInfo(track string, v Version) (*VersionInfo, bool) {
	for i := range c.Paths {
		if c.Paths[i].Track != track {
			continue
		}
		for j := range c.Paths[i].Versions {
			if c.Paths[i].Versions[j].Version.Equal(v) {
				return &c.Paths[i].Versions[j], true
			}
		}
	}
	return nil, false
}
