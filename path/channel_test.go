package path_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// Catalogs built in code with release.NewCatalog.

// Regression: a GA-to-GA upgrade routed through v26.06-rc.3 whenever it was
// the highest intermediate. Without a channel, a route between two GA
// versions enters no prerelease unless the caller allows prereleases.
func TestPrereleasesBetweenGA(t *testing.T) {
	s := spec{
		Versions: []string{"v26.03", "v26.04", "v26.06-rc.3", "v26.06", "v26.09"},
		Rules: []release.Rule{
			rule("v26.03", "v26.04"), rule("v26.03", "v26.06-rc.3"),
			rule("v26.04", "v26.09"), rule("v26.06-rc.3", "v26.09"),
			rule("v26.06-rc.3", "v26.06"),
		},
	}
	c := s.catalog(t)
	r, err := path.Resolve(c, at(v("v26.03")), at(v("v26.09")))
	require.NoError(t, err)
	assert.Equal(t, []string{"v26.03", "v26.04", "v26.09"}, hopsOf(r))
	r, err = path.Resolve(c, at(v("v26.03")), at(v("v26.09")), path.AllowPrereleases())
	require.NoError(t, err)
	assert.Equal(t, []string{"v26.03", "v26.06-rc.3", "v26.09"}, hopsOf(r), "allowed: the highest intermediate")

	// From or to a prerelease, the rule does not apply.
	r, err = path.Resolve(c, at(v("v26.06-rc.3")), at(v("v26.06")))
	require.NoError(t, err)
	assert.Equal(t, []string{"v26.06-rc.3", "v26.06"}, hopsOf(r))
	r, err = path.Resolve(c, at(v("v26.03")), at(v("v26.06-rc.3")))
	require.NoError(t, err)
	assert.Equal(t, []string{"v26.03", "v26.06-rc.3"}, hopsOf(r))

	// Only through the rc: no route, and the error says why.
	_, err = path.Resolve(c, at(v("v26.03")), at(v("v26.06")))
	nr := noRoute(t, err)
	require.Len(t, nr.Closed, 1)
	assert.Contains(t, err.Error(), "v26.03 -> v26.06-rc.3: v26.06-rc.3 is a prerelease")

	// Targets from GA: GA targets without prereleases, prerelease targets
	// with their route.
	ts, err := path.Targets(c, at(v("v26.03")))
	require.NoError(t, err)
	var got []string
	for _, x := range ts {
		got = append(got, fmt.Sprint(hopsOf(x.Route())))
	}
	assert.Equal(t, []string{"[v26.03 v26.04]", "[v26.03 v26.06-rc.3]", "[v26.03 v26.04 v26.09]"}, got)
}

func TestChannel(t *testing.T) {
	in := func(ver string, chans ...string) release.VersionInfo {
		return release.VersionInfo{Version: v(ver), Channels: chans}
	}
	s := spec{
		Versions: []string{"v1.0", "v1.1", "v1.2", "v1.3-rc.1", "v1.3"},
		Rules: []release.Rule{
			rule("v1.0", "v1.1"), rule("v1.0", "v1.2"), rule("v1.1", "v1.3"), rule("v1.2", "v1.3"),
			rule("v1.2", "v1.3-rc.1"), rule("v1.3-rc.1", "v1.3"),
		},
		Infos: []release.VersionInfo{
			in("v1.0"), // the from-version need not be in the channel
			in("v1.1", "stable", "fast"), in("v1.2", "fast"), in("v1.3-rc.1", "candidate"), in("v1.3", "stable", "fast", "candidate"),
		},
	}
	c := s.catalog(t)
	for _, tt := range []struct {
		channel string
		want    []string
	}{
		{"stable", []string{"v1.0", "v1.1", "v1.3"}},
		{"fast", []string{"v1.0", "v1.2", "v1.3"}},
		{"", []string{"v1.0", "v1.2", "v1.3"}},
	} {
		r, err := path.Resolve(c, at(v("v1.0")), at(v("v1.3")), path.WithChannel(tt.channel))
		require.NoError(t, err, "channel %q", tt.channel)
		assert.Equal(t, tt.want, hopsOf(r), "channel %q", tt.channel)
	}
	// The candidate channel has a prerelease in it, and no way in.
	_, err := path.Resolve(c, at(v("v1.0")), at(v("v1.3")), path.WithChannel("candidate"))
	nr := noRoute(t, err)
	assert.Contains(t, err.Error(), "is not in channel candidate")
	assert.NotEmpty(t, nr.Closed)
	r, err := path.Resolve(c, at(v("v1.2")), at(v("v1.3")), path.WithChannel("candidate"))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.2", "v1.3"}, hopsOf(r), "fewest hops inside the channel")

	_, err = path.Resolve(c, at(v("v1.0")), at(v("v1.3")), path.WithChannel("beta"))
	require.ErrorIs(t, err, path.ErrInvalidOption)
	assert.EqualError(t, err, `path: invalid option: channel "beta": no version is in it; the channels: candidate, fast, stable`)

	// An index built for a channel; a query may choose another.
	ix, err := path.NewIndex(c, path.WithChannel("stable"))
	require.NoError(t, err)
	r, err = ix.Resolve(v("v1.0"), v("v1.3"))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.1", "v1.3"}, hopsOf(r))
	r, err = ix.Resolve(v("v1.0"), v("v1.3"), path.WithChannel("fast"))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.2", "v1.3"}, hopsOf(r))
	ts, err := ix.Targets(v("v1.0"))
	require.NoError(t, err)
	require.Len(t, ts, 2)
	assert.Equal(t, "v1.1", ts[0].Version.String())
	assert.Equal(t, "v1.3", ts[1].Version.String())
}
