package path

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// Regression (issue 25): a no-route the catalog shows without a search
// (a targeted track's target that no allowed state can hold) explored the
// whole state product first: about n^3 states for 3 tracks of n versions.
func TestResolveTracksStaticNoRoute(t *testing.T) {
	const n = 20
	tests := []struct {
		name   string
		change func(c *release.Catalog, from State)
		want   string
	}{
		{"the target supports no version of a track", nil,
			"path: no route from a=v1.0.0,b=v1.0.0,c=v1.0.0 to a=v1.19.0: its target a v1.19.0 supports b >= v99.0.0, which admits none of the versions b can be at (20 versions, v1.0.0 to v1.19.0)"},
		{"the target supports only versions the other track cannot reach", func(c *release.Catalog, from State) {
			sup(c, "a", "v1.19.0")["b"] = release.MustParseConstraint("< v1.5.0")
			from["b"] = release.MustParseVersion("v1.10.0")
		}, "its target a v1.19.0 supports b < v1.5.0, which admits none of the versions b can be at (10 versions, v1.10.0 to v1.19.0)"},
		{"no version of a track supports the target", func(c *release.Catalog, from State) {
			sup(c, "a", "v1.19.0")["b"] = release.MustParseConstraint("*")
			for i := range n {
				r, _ := c.ReleaseOn("c", release.MustParseVersion(fmt.Sprintf("v1.%d.0", i)))
				r.Supports = map[string]release.Constraint{"a": release.MustParseConstraint("< v1.19.0")}
			}
		}, "no version c can be at (20 versions, v1.0.0 to v1.19.0) allows its target a v1.19.0: c v1.0.0 supports a < v1.19.0, and so on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, from, to := staticNoRoute(t, n)
			if tt.change != nil {
				tt.change(c, from)
			}
			_, states, err := resolve(c, from, to, nil)
			var se *NoRouteError
			require.True(t, errors.As(err, &se), "Resolve(%s, %s) = %v, want a *NoRouteError", from, to, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotEmpty(t, se.Static, "Static")
			assert.Zero(t, states, "states searched, want none (the product has %d)", n*n*n)
		})
	}
	// The same catalog with a target that supports b has a route, found by
	// the search.
	c, from, to := staticNoRoute(t, n)
	sup(c, "a", "v1.19.0")["b"] = release.MustParseConstraint("*")
	r, _, err := resolve(c, from, to, nil)
	require.NoError(t, err)
	assert.Len(t, r.Hops, n-1)
}

// sup returns the supports map of a release of c.
func sup(c *release.Catalog, track, version string) map[string]release.Constraint {
	r, _ := c.ReleaseOn(track, release.MustParseVersion(version))
	return r.Supports
}

// A search that reaches its limit of states says so, and how many.
func TestResolveTracksLimit(t *testing.T) {
	c, from, to := staticNoRoute(t, 20)
	sup(c, "a", "v1.19.0")["b"] = release.MustParseConstraint("*")
	_, need, err := resolve(c, from, to, nil)
	require.NoError(t, err)
	tests := []struct {
		limit int
		route bool
	}{
		{limit: 100, route: false},
		{limit: need, route: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			r, states, err := resolve(c, from, to, []Option{func(o *options) { o.stateLimit = tt.limit }})
			assert.LessOrEqual(t, states, tt.limit, "states settled")
			if tt.route {
				require.NoError(t, err)
				assert.Len(t, r.Hops, 19)
				return
			}
			var se *NoRouteError
			require.True(t, errors.As(err, &se), "Resolve with a limit of %d = %v, want a *NoRouteError", tt.limit, err)
			assert.ErrorIs(t, err, ErrNoRoute)
			assert.Equal(t, tt.limit, se.Limit)
			assert.Equal(t, "path: no route from a=v1.0.0,b=v1.0.0,c=v1.0.0 to a=v1.19.0 found: the search stopped at its limit of "+fmt.Sprint(tt.limit)+" states (16 x the 60 versions of the tracks squared, at most 2097152); give a target version for more tracks, or resolve in steps through an intermediate state", err.Error())
		})
	}
	assert.Equal(t, []int{65536, 65536, 2073600, 2097152}, []int{stateLimit(10), stateLimit(64), stateLimit(360), stateLimit(600)})
}
