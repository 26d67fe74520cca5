package path_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// When a channel or the prerelease rule is what stands in the way, the
// error says so, names the versions it excludes and the option that
// relaxes it; where the closed edges already say it, it adds nothing.
// Regression: a target outside the channel, or a route through two or
// more excluded versions, gave "no usable rule leads to v1.2", which
// blamed the rules.
func TestNoRouteNamesTheExclusion(t *testing.T) {
	in := func(ver string, chans ...string) release.VersionInfo {
		return release.VersionInfo{Version: v(ver), Channels: chans}
	}
	// v1.2 and its rc are only in fast; the route to them or through them
	// leaves stable.
	channels := spec{
		Versions: []string{"v1.0", "v1.1", "v1.2-rc.1", "v1.2", "v1.3", "v2.0"},
		Rules: []release.Rule{
			rule("v1.0", "v1.1"), rule("v1.1", "v2.0"),
			rule("v1.0", "v1.2-rc.1"), rule("v1.2-rc.1", "v1.2"), rule("v1.2", "v1.3"),
		},
		Infos: []release.VersionInfo{
			in("v1.0", "stable"), in("v1.1", "stable"), in("v1.2-rc.1", "fast"), in("v1.2", "fast"), in("v1.3", "stable"), in("v2.0", "stable"),
		},
	}
	// Two prereleases in a row between GA versions.
	prereleases := spec{
		Versions: []string{"v26.03", "v26.06-rc.1", "v26.06-rc.2", "v26.09"},
		Rules:    []release.Rule{rule("v26.03", "v26.06-rc.1"), rule("v26.06-rc.1", "v26.06-rc.2"), rule("v26.06-rc.2", "v26.09")},
	}
	// One prerelease: the closed edge names it.
	one := spec{
		Versions: []string{"v26.03", "v26.06-rc.3", "v26.09"},
		Rules:    []release.Rule{rule("v26.03", "v26.06-rc.3"), rule("v26.06-rc.3", "v26.09")},
	}
	// The target is in no channel and no rule leads to it.
	nowhere := spec{
		Versions: []string{"v1.0", "v1.1", "v1.2"},
		Rules:    []release.Rule{rule("v1.0", "v1.1")},
		Infos:    []release.VersionInfo{in("v1.0", "stable"), in("v1.1", "stable")},
	}
	tests := []struct {
		name     string
		s        spec
		from, to string
		opts     []path.Option
		excluded []path.ExcludedVersion
		channel  string
		err      string
		noRule   bool // no rule leads to the target: no route even without the exclusion
	}{{
		name: "target outside the channel", s: channels, from: "v1.0", to: "v1.2", opts: []path.Option{path.WithChannel("stable")},
		excluded: []path.ExcludedVersion{{Version: v("v1.2"), Channels: []string{"fast"}}}, channel: "stable",
		err: "path: no route from v1.0 to v1.2: v1.2 is not in channel stable (its channels: fast); choose a channel that lists it, or none (path.WithChannel)",
	}, {
		name: "route leaves the channel", s: channels, from: "v1.0", to: "v1.3", opts: []path.Option{path.WithChannel("stable")},
		excluded: []path.ExcludedVersion{{Version: v("v1.2-rc.1"), Channels: []string{"fast"}}, {Version: v("v1.2"), Channels: []string{"fast"}}}, channel: "stable",
		err: "path: no route from v1.0 to v1.3: every route leaves channel stable: the best one enters v1.2-rc.1 (channels: fast), v1.2 (channels: fast); " +
			"choose a channel that lists them, or none (path.WithChannel)",
	}, {
		name: "target in no channel, no rule to it", s: nowhere, from: "v1.0", to: "v1.2", opts: []path.Option{path.WithChannel("stable")},
		excluded: []path.ExcludedVersion{{Version: v("v1.2")}}, channel: "stable", noRule: true,
		err: "path: no route from v1.0 to v1.2: v1.2 is not in channel stable (it is in no channel); choose no channel (path.WithChannel)",
	}, {
		name: "prereleases in a row", s: prereleases, from: "v26.03", to: "v26.09",
		excluded: []path.ExcludedVersion{{Version: v("v26.06-rc.1")}, {Version: v("v26.06-rc.2")}},
		err: "path: no route from v26.03 to v26.09: every route enters a prerelease: the best one enters v26.06-rc.1, v26.06-rc.2; " +
			"a route between GA versions enters none unless prereleases are allowed (path.AllowPrereleases, or a channel listing it: path.WithChannel)",
	}, {
		name: "one prerelease, named by its closed edge", s: one, from: "v26.03", to: "v26.09",
		excluded: []path.ExcludedVersion{{Version: v("v26.06-rc.3")}},
		err: "path: no route from v26.03 to v26.09: closed edges: v26.03 -> v26.06-rc.3: v26.06-rc.3 is a prerelease: " +
			"a route between GA versions enters none unless prereleases are allowed (path.AllowPrereleases, or a channel listing it: path.WithChannel)",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.s.catalog(t)
			_, err := path.Resolve(c, at(v(tt.from)), at(v(tt.to)), tt.opts...)
			nr := noRoute(t, err)
			assert.EqualError(t, err, tt.err)
			assert.Equal(t, tt.excluded, nr.Excluded, "Excluded (-want +got)")
			assert.Equal(t, tt.channel, nr.Channel, "Channel")
			// What the message says to relax gives a route.
			_, err = path.Resolve(c, at(v(tt.from)), at(v(tt.to)), path.AllowPrereleases())
			if tt.noRule {
				assert.ErrorIs(t, err, path.ErrNoRoute, "no rule leads to %s", tt.to)
			} else {
				assert.NoError(t, err, "Resolve without the channel, with prereleases")
			}
		})
	}
}
