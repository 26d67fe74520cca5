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

func TestGuards(t *testing.T) {
	s := spec{
		Versions: []string{"v1.0", "v1.1", "v1.2", "v1.3"},
		K8s:      map[string]string{"v1.0": "v1.30.2", "v1.1": "v1.31.0", "v1.2": "v1.32.1", "v1.3": "v1.32.4"},
		Rules: []release.Rule{
			rule("v1.0", "v1.2"),
			rule("v1.0", "v1.1"),
			rule("v1.1", "v1.2"),
			rule("v1.2", "v1.3"),
		},
	}
	kube := path.KubernetesSkewGuard()
	got, err := resolve(t, s, "v1.0", "v1.2")
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.2"}, got, "no guard unless asked")
	got, err = resolve(t, s, "v1.0", "v1.2", path.WithGuards(kube))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.1", "v1.2"}, got, "kubernetes may move one minor per hop")
	got, err = resolve(t, s, "v1.0", "v1.3", path.WithGuards(kube))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.1", "v1.2", "v1.3"}, got)

	// Mandatory guard, only the skewed edge: no route, no override offered.
	only := s
	only.Rules = s.Rules[:1]
	_, err = resolve(t, only, "v1.0", "v1.2", path.WithGuards(kube))
	nr := noRoute(t, err)
	require.Len(t, nr.Closed, 1)
	require.Len(t, nr.Closed[0].Guards, 1)
	gv := nr.Closed[0].Guards[0]
	assert.Equal(t, path.KubernetesSkewGuardName, gv.Guard)
	assert.False(t, gv.Overridable)
	assert.Equal(t, "v1.30.2", gv.From.String())
	assert.Equal(t, "v1.32.1", gv.To.String())
	assert.Contains(t, err.Error(), "mandatory guard kubernetes-minor-skew: kubernetes-master moves from v1.30.2 to v1.32.1, 2 minor versions; at most 1 per hop")
	assert.Empty(t, nr.Overrides)
	assert.Nil(t, nr.Relaxed)
	_, err = resolve(t, only, "v1.0", "v1.2", path.WithGuards(kube), path.OverrideGuards(kube.Name))
	require.ErrorIs(t, err, path.ErrInvalidOption, "a mandatory guard cannot be overridden")

	// Overridable guard: the error offers the override, the route records it.
	soft := kube
	soft.Overridable = true
	_, err = resolve(t, only, "v1.0", "v1.2", path.WithGuards(soft))
	nr = noRoute(t, err)
	assert.Equal(t, []string{soft.Name}, nr.Overrides)
	assert.Contains(t, err.Error(), "override guard kubernetes-minor-skew to get a route")
	r, err := path.Resolve(only.catalog(t), at(v("v1.0")), at(v("v1.2")), path.WithGuards(soft), path.OverrideGuards(soft.Name))
	require.NoError(t, err)
	assert.Equal(t, []string{soft.Name}, r.Hops[0].Overrides)
	assert.Contains(t, r.String(), "overrides: kubernetes-minor-skew")
	// Overriding does not make the route prefer the overridden edge when a
	// route of as many hops exists; here the skewed edge is shorter.
	got, err = resolve(t, s, "v1.0", "v1.2", path.WithGuards(soft), path.OverrideGuards(soft.Name))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.2"}, got)
	got, err = resolve(t, s, "v1.0", "v1.2", path.WithGuards(soft))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.1", "v1.2"}, got)

	// Unknown guard names are refused.
	_, err = resolve(t, s, "v1.0", "v1.2", path.OverrideGuards("nope"))
	require.ErrorIs(t, err, path.ErrInvalidOption)
}

func TestGuardRules(t *testing.T) {
	g := path.Guard{Name: "g", Component: "c", MaxMinorSkew: 1}
	rel := func(cv string) *release.Release {
		r := &release.Release{Version: v("v1.0")}
		if cv != "" {
			r.Components = []release.ComponentRef{{Name: "c", Version: v(cv)}}
		}
		return r
	}
	tests := []struct {
		from, to string
		max      int
		bad      bool
	}{
		{"v1.30.0", "v1.31.9", 1, false},
		{"v1.30.0", "v1.32.0", 1, true},
		{"v1.32.0", "v1.30.0", 1, true}, // a downgrade moves too
		{"v1.32.0", "v1.31.0", 1, false},
		{"v1.30.0", "v1.30.5", 0, false},
		{"v1.30.0", "v1.31.0", 0, true},
		{"v1.30.0", "v2.30.0", 5, true}, // a major change always violates
		{"v1.30.0", "v1.33.0-rc.1", 3, false},
		{"", "v1.40.0", 1, false}, // the component is added: no check
		{"v1.30.0", "", 1, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s->%s/%d", tt.from, tt.to, tt.max), func(t *testing.T) {
			g.MaxMinorSkew = tt.max
			viol, bad := g.Check(rel(tt.from), rel(tt.to))
			assert.Equal(t, tt.bad, bad)
			if bad {
				assert.Equal(t, "g", viol.Guard)
				assert.NotEmpty(t, viol.Message)
			}
		})
	}
	_, bad := g.Check(nil, rel("v1.0.0"))
	assert.False(t, bad)

	c := spec{Versions: []string{"v1.0"}}.catalog(t)
	for _, bad := range []path.Guard{{Component: "c"}, {Name: "g"}, {Name: "g", Component: "c", MaxMinorSkew: -1}} {
		_, err := path.NewIndex(c, path.WithGuards(bad))
		require.ErrorIs(t, err, path.ErrInvalidOption, "%+v", bad)
	}
	_, err := path.NewIndex(c, path.WithGuards(g, g))
	require.ErrorIs(t, err, path.ErrInvalidOption)
	_, err = path.NewIndex(c, path.WithGuards(g), path.OverrideGuards("g"))
	require.ErrorIs(t, err, path.ErrInvalidOption, "g is mandatory")
}
