package release

import (
	"fmt"
	"slices"
)

// InChannel reports whether the version belongs to the named channel.
func (vi *VersionInfo) InChannel(channel string) bool { return slices.Contains(vi.Channels, channel) }

// Channels returns the channels the UpgradePaths of track name, sorted.
func (c *Catalog) Channels(track string) []string {
	var out []string
	for i := range c.Paths {
		if c.Paths[i].Track != track {
			continue
		}
		for _, vi := range c.Paths[i].Versions {
			out = append(out, vi.Channels...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// validateChannels checks the channels of one versions entry: each named,
// each named once. at locates the j-th channel; bad reports whether it was
// unusable (left empty, reported already).
func validateChannels(vi VersionInfo, at func(j int) Problem, bad func(j int) bool, ps *problems) {
	for j, ch := range vi.Channels {
		switch {
		case ch == "" && bad(j):
		case ch == "":
			ps.add(at(j).with("channel has no name", "name it, e.g. stable: callers choose a channel by name"))
		case slices.Index(vi.Channels, ch) < j:
			ps.add(at(j).with(fmt.Sprintf("channel %s is listed twice for %s", ch, vi.Version), "remove one of them"))
		}
	}
}
