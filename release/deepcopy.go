package release

import (
	"maps"
	"slices"
)

// DeepCopy methods in the shape controller-gen writes, so an operator can
// embed these types in its own CRD types. Version, Constraint and Duration
// are immutable values, and Retries, Manifest, Source, ComponentRef,
// Compatibility, Risk and Check hold no references: all are copied by
// assignment.

// DeepCopyInto copies c into out.
func (c *ComponentVersion) DeepCopyInto(out *ComponentVersion) {
	*out = *c
	out.Dependencies = slices.Clone(c.Dependencies)
	if c.Retries != nil {
		r := *c.Retries
		out.Retries = &r
	}
	if c.HealthChecks != nil {
		out.HealthChecks = make([]HealthCheck, len(c.HealthChecks))
		for i := range c.HealthChecks {
			c.HealthChecks[i].DeepCopyInto(&out.HealthChecks[i])
		}
	}
	out.Params = maps.Clone(c.Params)
	if c.Command != nil {
		out.Command = c.Command.DeepCopy()
	}
	out.Manifests = slices.Clone(c.Manifests)
	c.Lifecycle.deepCopyInto(&out.Lifecycle)
	if c.Helm != nil {
		h := *c.Helm
		out.Helm = &h
	}
}

// DeepCopy returns a copy of c that shares no memory with it.
func (c *ComponentVersion) DeepCopy() *ComponentVersion {
	if c == nil {
		return nil
	}
	out := new(ComponentVersion)
	c.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies h into out.
func (h *HealthCheck) DeepCopyInto(out *HealthCheck) {
	*out = *h
	out.Params = maps.Clone(h.Params)
}

// DeepCopy returns a copy of c that shares no memory with it.
func (c *Command) DeepCopy() *Command {
	if c == nil {
		return nil
	}
	return &Command{Args: slices.Clone(c.Args), Env: maps.Clone(c.Env), Dir: c.Dir}
}

// DeepCopyInto copies r into out.
func (r *Release) DeepCopyInto(out *Release) {
	*out = *r
	out.Components = slices.Clone(r.Components)
	out.Supports = maps.Clone(r.Supports)
	out.Compatibility = slices.Clone(r.Compatibility)
}

// DeepCopy returns a copy of r that shares no memory with it.
func (r *Release) DeepCopy() *Release {
	if r == nil {
		return nil
	}
	out := new(Release)
	r.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies r into out.
func (r *Rule) DeepCopyInto(out *Rule) {
	*out = *r
	out.Risks = slices.Clone(r.Risks)
	out.PreChecks = slices.Clone(r.PreChecks)
	out.PostChecks = slices.Clone(r.PostChecks)
	r.RuleControl.deepCopyInto(&out.RuleControl)
}

// DeepCopy returns a copy of r that shares no memory with it.
func (r *Rule) DeepCopy() *Rule {
	if r == nil {
		return nil
	}
	out := new(Rule)
	r.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies p into out.
func (p *UpgradePath) DeepCopyInto(out *UpgradePath) {
	*out = *p
	if p.Rules != nil {
		out.Rules = make([]Rule, len(p.Rules))
		for i := range p.Rules {
			p.Rules[i].DeepCopyInto(&out.Rules[i])
		}
	}
	if p.Versions != nil {
		out.Versions = make([]VersionInfo, len(p.Versions))
		for i := range p.Versions {
			p.Versions[i].DeepCopyInto(&out.Versions[i])
		}
	}
}

// DeepCopy returns a copy of p that shares no memory with it.
func (p *UpgradePath) DeepCopy() *UpgradePath {
	if p == nil {
		return nil
	}
	out := new(UpgradePath)
	p.DeepCopyInto(out)
	return out
}

// DeepCopy returns a copy of h that shares no memory with it.
func (h *HealthCheck) DeepCopy() *HealthCheck {
	if h == nil {
		return nil
	}
	out := new(HealthCheck)
	h.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies c into out.
func (c *Command) DeepCopyInto(out *Command) { *out = *c.DeepCopy() }

// DeepCopyInto copies vi into out.
func (vi *VersionInfo) DeepCopyInto(out *VersionInfo) {
	*out = *vi
	if vi.Installable != nil {
		b := *vi.Installable
		out.Installable = &b
	}
	out.Channels = slices.Clone(vi.Channels)
}

// DeepCopy returns a copy of vi that shares no memory with it.
func (vi *VersionInfo) DeepCopy() *VersionInfo {
	if vi == nil {
		return nil
	}
	out := new(VersionInfo)
	vi.DeepCopyInto(out)
	return out
}

// DeepCopy returns a copy of c that shares no memory with it: a catalog an
// operator may change without touching the one it was loaded as.
func (c *Catalog) DeepCopy() *Catalog {
	if c == nil {
		return nil
	}
	out := &Catalog{}
	for i := range c.Releases {
		out.Releases = append(out.Releases, *c.Releases[i].DeepCopy())
	}
	for i := range c.Components {
		out.Components = append(out.Components, *c.Components[i].DeepCopy())
	}
	for i := range c.Paths {
		out.Paths = append(out.Paths, *c.Paths[i].DeepCopy())
	}
	out.warnings = slices.Clone(c.warnings)
	out.index()
	return out
}
