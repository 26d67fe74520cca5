package path_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// Catalogs built in code with release.NewCatalog.

func resolve(t *testing.T, s spec, from, to string, opts ...path.Option) ([]string, error) {
	t.Helper()
	r, err := path.Resolve(s.catalog(t), at(v(from)), at(v(to)), opts...)
	return hopsOf(r), err
}

func TestBlockedEdge(t *testing.T) {
	base := spec{
		Versions: []string{"v1.0", "v1.1", "v1.2", "v1.3"},
		Rules: []release.Rule{
			rule("v1.0", "v1.3"),
			rule("v1.0", "v1.1"),
			rule("v1.1", "v1.3"),
		},
	}
	got, err := resolve(t, base, "v1.0", "v1.3")
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.3"}, got)

	// A blocked rule for the same edge wins, before or after the allowing rule.
	for _, at := range []int{0, 3} {
		s := base
		s.Rules = append(append(append([]release.Rule{}, base.Rules[:at]...), rule("v1.0", "v1.3", blocked("broken"))), base.Rules[at:]...)
		got, err := resolve(t, s, "v1.0", "v1.3")
		require.NoError(t, err)
		assert.Equal(t, []string{"v1.0", "v1.1", "v1.3"}, got, "blocked rule at %d", at)
	}

	// A blocked exact rule closes one edge of a range.
	s := spec{
		Versions: []string{"v1.0", "v1.1", "v1.2", "v1.3"},
		Rules: []release.Rule{
			rule(">= v1.0, < v1.3", "v1.3"),
			rule("v1.1", "v1.3", blocked("v1.1 corrupts the store")),
			rule("v1.1", "v1.2"),
		},
	}
	got, err = resolve(t, s, "v1.1", "v1.3")
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.1", "v1.2", "v1.3"}, got)
	got, err = resolve(t, s, "v1.0", "v1.3")
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.3"}, got)

	// When only the blocked edge joins, the error says so.
	s.Rules = s.Rules[:2]
	_, err = resolve(t, s, "v1.1", "v1.3")
	nr := noRoute(t, err)
	require.Len(t, nr.Closed, 1)
	assert.Equal(t, "v1.1 corrupts the store", nr.Closed[0].Blocked)
	assert.Equal(t, "v1.1", nr.Closed[0].Rule.From.String(), "the blocking rule is reported")
	assert.Contains(t, err.Error(), "v1.1 -> v1.3: blocked: v1.1 corrupts the store")
	assert.Nil(t, nr.Relaxed)
	assert.Empty(t, nr.Risks)
}

// Regression: a blocked range let the prereleases inside it through,
// because the prerelease rule that keeps allowing ranges safe made blocking
// ranges fail open.
func TestBlockedRangeBlocksPrereleases(t *testing.T) {
	s := spec{
		Versions: []string{"v1.0", "v1.1-rc.1", "v1.1", "v1.2", "v1.3"},
		Rules: []release.Rule{
			rule(">= v1.1-rc.1, < v1.3", "v1.3"),
			rule("< v1.2", "v1.3", blocked("upgrade through v1.2")),
			rule(">= v1.1-rc.1, < v1.2", "v1.2"),
		},
	}
	for _, from := range []string{"v1.1-rc.1", "v1.1"} {
		got, err := resolve(t, s, from, "v1.3")
		require.NoError(t, err)
		assert.Equal(t, []string{from, "v1.2", "v1.3"}, got, "Resolve(%s, v1.3)", from)
	}
	s.Rules = s.Rules[:2]
	_, err := resolve(t, s, "v1.1-rc.1", "v1.3")
	nr := noRoute(t, err)
	require.Len(t, nr.Closed, 1, "closed edges: %v", nr.Closed)
	assert.Equal(t, "upgrade through v1.2", nr.Closed[0].Blocked)
}

// Regression (issue 25): a blocked range did not block a downgrade an
// exact rule allows, because range expansion stopped below To ("a range
// never gives a downgrade") for blocking ranges too.
func TestBlockedRangeBlocksDowngrade(t *testing.T) {
	for _, tc := range []struct {
		name, from string
		blocks     bool
	}{
		{name: "star", from: "*", blocks: true},
		{name: "lower bound", from: ">= v2.0.0", blocks: true},
		{name: "alternatives", from: "v1.5.0 || v2.0.0", blocks: true},
		{name: "range below", from: "< v1.5.0", blocks: false},
		{name: "other alternative", from: "v1.5.0 || v3.0.0", blocks: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, order := range []string{"blocked last", "blocked first"} {
				s := spec{
					Versions: []string{"v1.0.0", "v1.5.0", "v2.0.0", "v3.0.0"},
					Rules: []release.Rule{
						rule("v2.0.0", "v1.0.0"),
						rule(tc.from, "v1.0.0", blocked("data loss")),
					},
				}
				if order == "blocked first" {
					s.Rules[0], s.Rules[1] = s.Rules[1], s.Rules[0]
				}
				got, err := resolve(t, s, "v2.0.0", "v1.0.0")
				if !tc.blocks {
					require.NoError(t, err, "%s", order)
					assert.Equal(t, []string{"v2.0.0", "v1.0.0"}, got, "Resolve(v2.0.0, v1.0.0) with %s", order)
					continue
				}
				require.Error(t, err, "Resolve(v2.0.0, v1.0.0) = %v, want no route (%s)", got, order)
				nr := noRoute(t, err)
				require.Len(t, nr.Closed, 1, "closed edges: %v", nr.Closed)
				assert.Equal(t, "data loss", nr.Closed[0].Blocked, "%s", order)
				assert.Equal(t, tc.from, nr.Closed[0].Rule.From.String(), "the blocking rule is reported (%s)", order)
			}
		})
	}
}

func TestDuplicateEdgeRecordsFirstRule(t *testing.T) {
	s := spec{
		Versions: []string{"v1.0", "v1.1"},
		Rules: []release.Rule{
			rule("v1.0", "v1.1", pre("first")),
			rule(">= v1.0, < v1.1", "v1.1", pre("second")),
		},
	}
	r, err := path.Resolve(s.catalog(t), at(v("v1.0")), at(v("v1.1")))
	require.NoError(t, err)
	assert.Equal(t, "first", r.Hops[0].PreChecks[0].Name)

	s.Rules[0], s.Rules[1] = s.Rules[1], s.Rules[0]
	r, err = path.Resolve(s.catalog(t), at(v("v1.0")), at(v("v1.1")))
	require.NoError(t, err)
	assert.Equal(t, "second", r.Hops[0].PreChecks[0].Name)

	// Catalog order is UpgradePath name, then declared order.
	c, err := release.NewCatalog(
		[]release.Release{{Name: "a", Version: v("v1.0")}, {Name: "b", Version: v("v1.1")}}, nil,
		[]release.UpgradePath{
			{Name: "zz", Rules: []release.Rule{rule("v1.0", "v1.1", pre("from-zz"))}},
			{Name: "aa", Rules: []release.Rule{rule("v1.0", "v1.1", pre("from-aa"))}},
		})
	require.NoError(t, err)
	r, err = path.Resolve(c, at(v("v1.0")), at(v("v1.1")))
	require.NoError(t, err)
	assert.Equal(t, "from-aa", r.Hops[0].PreChecks[0].Name)
}

func TestRiskyEdge(t *testing.T) {
	s := spec{
		Versions: []string{"v1.0", "v1.1", "v1.2"},
		Rules: []release.Rule{
			rule("v1.0", "v1.2", risks("cni-reset", "api-removal")),
			rule("v1.0", "v1.1"),
			rule("v1.1", "v1.2"),
		},
	}
	// The safe route is longer; accepting the risks shortens it.
	got, err := resolve(t, s, "v1.0", "v1.2")
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.1", "v1.2"}, got)
	got, err = resolve(t, s, "v1.0", "v1.2", path.AcceptRisks("cni-reset"))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.1", "v1.2"}, got, "every risk of the edge must be accepted")
	got, err = resolve(t, s, "v1.0", "v1.2", path.AcceptRisks("cni-reset"), path.AcceptRisks("api-removal"))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.2"}, got)

	// Only the risky edge: the error names the risks still to accept.
	s.Rules = s.Rules[:1]
	_, err = resolve(t, s, "v1.0", "v1.2")
	nr := noRoute(t, err)
	assert.Equal(t, []string{"cni-reset", "api-removal"}, nr.Risks)
	assert.Contains(t, err.Error(), "accept risks cni-reset and api-removal, together, to get a route")
	_, err = resolve(t, s, "v1.0", "v1.2", path.AcceptRisks("api-removal"))
	nr = noRoute(t, err)
	assert.Equal(t, []string{"cni-reset"}, nr.Risks)
	require.Len(t, nr.Closed, 1)
	assert.Equal(t, "cni-reset", nr.Closed[0].Risks[0].Name)
	assert.Len(t, nr.Closed[0].Risks, 1)

	// Two risky edges in a row: the error names both risks.
	s = spec{
		Versions: []string{"v1.0", "v1.1", "v1.2"},
		Rules: []release.Rule{
			rule("v1.0", "v1.1", risks("r1")),
			rule("v1.1", "v1.2", risks("r2")),
		},
	}
	_, err = resolve(t, s, "v1.0", "v1.2")
	nr = noRoute(t, err)
	assert.Equal(t, []string{"r1", "r2"}, nr.Risks)
	assert.Empty(t, nr.Closed, "no single closed edge joins the two sides")
	assert.Contains(t, err.Error(), "accept risks r1 and r2, together, to get a route")
	got, err = resolve(t, s, "v1.0", "v1.2", path.AcceptRisks(nr.Risks...))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.1", "v1.2"}, got)

	// Targets with nothing but a risky edge out explains the empty list.
	ts, err := path.Targets(s.catalog(t), at(v("v1.0")))
	assert.Empty(t, ts)
	nr = noRoute(t, err)
	assert.Equal(t, []string{"r1"}, nr.Risks)
	assert.Contains(t, err.Error(), "risk r1 not accepted")
}

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

func TestDowngrades(t *testing.T) {
	s := spec{
		Versions: []string{"v1.0", "v1.1", "v1.2", "v1.3"},
		Rules: []release.Rule{
			rule("*", "v1.0"),       // never a downgrade edge
			rule(">= v1.0", "v1.1"), // only from v1.0
			rule("v1.3", "v1.1"),    // an explicit downgrade
			rule("= v1.2", "v1.1"),  // exact, with an operator
			rule(">= v1.0, < v1.3", "v1.3"),
		},
	}
	got, err := resolve(t, s, "v1.3", "v1.1")
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.3", "v1.1"}, got)
	got, err = resolve(t, s, "v1.2", "v1.1")
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.2", "v1.1"}, got)
	_, err = resolve(t, s, "v1.3", "v1.0")
	nr := noRoute(t, err)
	assert.True(t, nr.Downgrade)
	assert.Equal(t, []string{"v1.1"}, strs(nr.Reachable), "v1.3 -> v1.1 -> v1.3 is a cycle")
	assert.Empty(t, nr.Reaching)
	assert.Contains(t, err.Error(), "downgrade")

	ts, err := path.Targets(s.catalog(t), at(v("v1.3")))
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.Equal(t, "v1.1", ts[0].Version.String())

	// An explicit downgrade edge is used inside an upgrade route when shorter.
	s = spec{
		Versions: []string{"v1.0", "v1.1", "v1.2", "v2.0"},
		Rules: []release.Rule{
			rule("v1.2", "v1.1"),
			rule("v1.1", "v2.0"),
		},
	}
	got, err = resolve(t, s, "v1.2", "v2.0")
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.2", "v1.1", "v2.0"}, got)
}

func TestRangePrereleases(t *testing.T) {
	s := spec{
		Versions: []string{"v1.0", "v1.1-rc.1", "v1.1-rc.2", "v1.1", "v1.2-rc.1", "v1.2"},
		Rules: []release.Rule{
			rule(">= v1.1-rc.1, < v1.1", "v1.1"),
			rule(">= v1.0, < v1.2", "v1.2"),
		},
	}
	c := s.catalog(t)
	ts, err := path.Targets(c, at(v("v1.1-rc.2")))
	require.NoError(t, err)
	var got []string
	for _, x := range ts {
		got = append(got, x.Version.String())
	}
	assert.Equal(t, []string{"v1.1", "v1.2"}, got, "rc.2 is named by the first range only")
	_, err = path.Targets(c, at(v("v1.2-rc.1")))
	require.ErrorIs(t, err, path.ErrNoRoute, "no range names a v1.2 prerelease")
	r, err := path.Resolve(c, at(v("v1.1-rc.1")), at(v("v1.2")))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.1-rc.1", "v1.1", "v1.2"}, hopsOf(r))

	// Several alternatives, !=, and a constraint that no version matches.
	s = spec{
		Versions: []string{"v1.0", "v1.1", "v1.2", "v1.3", "v2.0"},
		Rules: []release.Rule{
			rule("v1.0 || >= v1.2, != v1.3, < v2.0 || v1.2", "v2.0"),
			rule("> v5.0", "v1.1"),
			rule(">= v1.1, <= v1.1", "v1.2"),
		},
	}
	c = s.catalog(t)
	for from, want := range map[string]int{"v1.0": 1, "v1.1": 2, "v1.2": 1, "v1.3": -1} {
		r, err := path.Resolve(c, at(v(from)), at(v("v2.0")))
		if want < 0 {
			require.ErrorIs(t, err, path.ErrNoRoute, from)
			continue
		}
		require.NoError(t, err, from)
		assert.Len(t, r.Hops, want, from)
	}
}

func TestNotInstallableIntermediate(t *testing.T) {
	s := spec{
		Versions: []string{"v1.0", "v1.1", "v1.2", "v1.3", "v1.4"},
		Rules: []release.Rule{
			rule("v1.0", "v1.3"),
			rule("v1.3", "v1.4"),
			rule("v1.0", "v1.1"),
			rule("v1.1", "v1.2"),
			rule("v1.2", "v1.4"),
		},
		Infos: []release.VersionInfo{notInstallable("v1.3")},
	}
	got, err := resolve(t, s, "v1.0", "v1.4")
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.1", "v1.2", "v1.4"}, got)
	got, err = resolve(t, s, "v1.3", "v1.4")
	require.NoError(t, err, "the current version need not be installable")
	assert.Equal(t, []string{"v1.3", "v1.4"}, got)
	_, err = resolve(t, s, "v1.0", "v1.3")
	nr := noRoute(t, err)
	assert.True(t, nr.NotInstallable)
	require.Len(t, nr.Closed, 1)
	assert.True(t, nr.Closed[0].NotInstallable)
}

func TestTieBreak(t *testing.T) {
	tests := []struct {
		name  string
		rules []release.Rule
		want  []string
	}{
		{"highest intermediate", []release.Rule{
			rule("v1.0", "v1.1"), rule("v1.0", "v1.2"), rule("v1.1", "v2.0"), rule("v1.2", "v2.0"),
		}, []string{"v1.0", "v1.2", "v2.0"}},
		{"compared hop by hop, first hop first", []release.Rule{
			rule("v1.0", "v1.1"), rule("v1.0", "v1.2"),
			rule("v1.1", "v1.4"), rule("v1.2", "v1.3"),
			rule("v1.3", "v2.0"), rule("v1.4", "v2.0"),
		}, []string{"v1.0", "v1.2", "v1.3", "v2.0"}},
		{"then the second hop", []release.Rule{
			rule("v1.0", "v1.1"),
			rule("v1.1", "v1.3"), rule("v1.1", "v1.4"),
			rule("v1.3", "v2.0"), rule("v1.4", "v2.0"),
		}, []string{"v1.0", "v1.1", "v1.4", "v2.0"}},
		{"deprecated edge avoided before highest", []release.Rule{
			rule("v1.0", "v1.1"), rule("v1.0", "v1.2", deprecated("old")), rule("v1.1", "v2.0"), rule("v1.2", "v2.0"),
		}, []string{"v1.0", "v1.1", "v2.0"}},
		{"fewest deprecated edges, wherever they are", []release.Rule{
			rule("v1.0", "v1.1", deprecated("a")), rule("v1.1", "v2.0", deprecated("b")),
			rule("v1.0", "v1.2", deprecated("c")), rule("v1.2", "v2.0"),
			rule("v1.0", "v1.3"), rule("v1.3", "v2.0", deprecated("d")),
		}, []string{"v1.0", "v1.3", "v2.0"}},
		// Regression: a deprecated one-hop edge used to beat a clean
		// two-hop route (deprecation only broke ties of equal length).
		{"clean route before fewest hops", []release.Rule{
			rule("v1.0", "v2.0", deprecated("old")), rule("v1.0", "v1.1"), rule("v1.1", "v2.0"),
		}, []string{"v1.0", "v1.1", "v2.0"}},
		{"fewest deprecated, then fewest hops", []release.Rule{
			rule("v1.0", "v2.0", deprecated("old")),
			rule("v1.0", "v1.1", deprecated("a")), rule("v1.1", "v1.2"), rule("v1.2", "v2.0"),
		}, []string{"v1.0", "v2.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec{Versions: []string{"v1.0", "v1.1", "v1.2", "v1.3", "v1.4", "v2.0"}, Rules: tt.rules}
			got, err := resolve(t, s, "v1.0", "v2.0")
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			// Rule order does not change the choice.
			for i, j := 0, len(s.Rules)-1; i < j; i, j = i+1, j-1 {
				s.Rules[i], s.Rules[j] = s.Rules[j], s.Rules[i]
			}
			got, err = resolve(t, s, "v1.0", "v2.0")
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "rules reversed")
		})
	}
}

func TestTracks(t *testing.T) {
	rels := []release.Release{
		{Name: "a", Version: v("v1.0")}, {Name: "b", Version: v("v1.1")},
		{Name: "c", Version: v("v1.0"), Track: "lts"}, {Name: "d", Version: v("v1.5"), Track: "lts"},
	}
	paths := []release.UpgradePath{
		{Name: "default", Rules: []release.Rule{rule("v1.0", "v1.1")}},
		{Name: "lts", Track: "lts", Rules: []release.Rule{rule("v1.0", "v1.5")}},
	}
	c, err := release.NewCatalog(rels, nil, paths)
	require.NoError(t, err)
	r, err := path.Resolve(c, path.State{"lts": v("v1.0")}, path.State{"lts": v("v1.5")})
	require.NoError(t, err)
	assert.Equal(t, "lts", r.Track)
	assert.Equal(t, []string{"v1.0", "v1.5"}, hopsOf(r))
	assert.Contains(t, r.String(), "on track lts")
	_, err = path.Resolve(c, at(v("v1.0")), at(v("v1.5")))
	require.ErrorIs(t, err, path.ErrUnknownVersion)
	_, err = path.Resolve(c, path.State{"lts": v("v1.0")}, path.State{"lts": v("v1.1")})
	require.ErrorIs(t, err, path.ErrUnknownVersion)
}

func TestIndex(t *testing.T) {
	c := loadTestdata(t)
	_, err := path.NewIndex(nil)
	require.Error(t, err)

	ix, err := path.NewIndex(c)
	require.NoError(t, err)
	assert.Equal(t, "", ix.Track())
	assert.Len(t, ix.Versions(), 8)
	assert.Empty(t, ix.Guards())
	open, closed := ix.Edges()
	assert.Equal(t, 10, open, "each range gives 2 edges")
	assert.Equal(t, 1, closed)

	_, err = ix.Resolve(v("v26.06"), v("v26.09-rc.1"))
	require.ErrorIs(t, err, path.ErrNoRoute)
	r, err := ix.Resolve(v("v26.06"), v("v26.09-rc.1"), path.AcceptRisks("containerd-v2-config"))
	require.NoError(t, err)
	assert.Len(t, r.Hops, 1)
	_, err = ix.Resolve(v("v26.06"), v("v26.09-rc.1"))
	require.ErrorIs(t, err, path.ErrNoRoute, "per-query options do not stick")
	_, err = ix.Resolve(v("v26.06"), v("v26.09"), path.WithTrack(""))
	require.NoError(t, err, "repeating the index's track is fine")
	_, err = ix.Resolve(v("v26.06"), v("v26.09"), path.WithTrack("lts"))
	require.ErrorIs(t, err, path.ErrInvalidOption)
	_, err = ix.Targets(v("v26.06"), path.WithGuards(path.KubernetesSkewGuard()))
	require.ErrorIs(t, err, path.ErrInvalidOption)

	// Options given to NewIndex apply to every query.
	ix, err = path.NewIndex(c, path.AcceptRisks("containerd-v2-config"), path.WithGuards(path.KubernetesSkewGuard()))
	require.NoError(t, err)
	assert.Len(t, ix.Guards(), 1)
	r, err = ix.Resolve(v("v26.06"), v("v26.09-rc.1"))
	require.NoError(t, err)
	assert.Len(t, r.Hops, 1)
	ts, err := ix.Targets(v("v26.06"))
	require.NoError(t, err)
	assert.Len(t, ts, 3)
}

func TestIndexConcurrent(t *testing.T) {
	c := loadTestdata(t)
	ix, err := path.NewIndex(c)
	require.NoError(t, err)
	want := map[string]string{}
	for _, a := range c.Versions() {
		for _, b := range c.Versions() {
			r, err := ix.Resolve(a, b, path.AcceptRisks("containerd-v2-config"))
			want[a.String()+b.String()] = fmt.Sprint(r, err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 20 {
				for _, a := range c.Versions() {
					for _, b := range c.Versions() {
						r, err := ix.Resolve(a, b, path.AcceptRisks("containerd-v2-config"))
						if got := fmt.Sprint(r, err); got != want[a.String()+b.String()] {
							errs <- errors.New(got)
							return
						}
					}
					if _, err := ix.Targets(a); err != nil && !errors.Is(err, path.ErrNoRoute) {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestNoRouteDiagnostics(t *testing.T) {
	s := spec{
		Versions: []string{"v1.0", "v1.1", "v1.2", "v1.3", "v1.4", "v2.0"},
		Rules: []release.Rule{
			rule("v1.0", "v1.1"),
			rule("v1.1", "v1.2"),
			rule("v1.3", "v1.4"),
			rule("v1.4", "v2.0"),
			rule("v1.2", "v1.4", blocked("no")),
			rule("v1.1", "v1.3", risks("r")),
			rule("v1.0", "v2.0", blocked("too far")),
			rule("v1.2", "v1.3", blocked("not joining")), // v1.3 reaches v2.0, so it does join
		},
	}
	_, err := resolve(t, s, "v1.0", "v2.0")
	nr := noRoute(t, err)
	assert.Equal(t, []string{"v1.2", "v1.1"}, strs(nr.Reachable), "furthest first")
	assert.Equal(t, []string{"v1.3", "v1.4"}, strs(nr.Reaching))
	var closed []string
	for _, ce := range nr.Closed {
		closed = append(closed, ce.From.String()+">"+ce.To.String())
	}
	assert.Equal(t, []string{"v1.0>v2.0", "v1.1>v1.3", "v1.2>v1.3", "v1.2>v1.4"}, closed)
	assert.Equal(t, []string{"r"}, nr.Risks)
	assert.Equal(t, []string{"v1.0", "v1.1", "v1.3", "v1.4", "v2.0"}, hopsOf(nr.Relaxed))

	// Nothing closed joins them: the message lists both sides.
	s.Rules = s.Rules[:4]
	_, err = resolve(t, s, "v1.0", "v2.0")
	nr = noRoute(t, err)
	assert.Empty(t, nr.Closed)
	assert.Equal(t, "path: no route from v1.0 to v2.0: reachable from v1.0: v1.2, v1.1; v2.0 is reachable from: v1.3, v1.4", err.Error())
}

func TestSpellings(t *testing.T) {
	s := spec{
		Versions: []string{"v26.03", "v26.06-rc.1", "v26.06"},
		Rules: []release.Rule{
			rule("26.3.0", "26.6.0-rc.01"),
			rule(">= 26.6.0-rc.1, < 26.06", "26.6"),
		},
	}
	c := s.catalog(t)
	r, err := path.Resolve(c, at(v("26.03.00")), at(v("v26.6")), path.AllowPrereleases())
	require.NoError(t, err)
	assert.Equal(t, []string{"v26.03", "v26.06-rc.1", "v26.06"}, hopsOf(r), "routes use the catalog's spelling")
	assert.Equal(t, "26.6.0-rc.01", r.Hops[0].Rule.To.String(), "the rule keeps its own")
}

// Regression: a deprecated version won the tie-break when it was the higher
// intermediate. It is never a chosen intermediate when another route
// exists, even a longer one; when every route needs it, the hop says why.
func TestDeprecatedVersionAvoided(t *testing.T) {
	cve := release.VersionInfo{Version: v("v1.2"), Deprecated: "CVE-2026-1234: do not install"}
	s := spec{
		Versions: []string{"v1.0", "v1.1", "v1.2", "v1.3", "v2.0"},
		Rules: []release.Rule{
			rule("v1.0", "v1.1"), rule("v1.0", "v1.2"), rule("v1.1", "v2.0"), rule("v1.2", "v2.0"),
		},
		Infos: []release.VersionInfo{cve},
	}
	got, err := resolve(t, s, "v1.0", "v2.0")
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.1", "v2.0"}, got, "equal length: the deprecated v1.2 loses")

	s.Rules = []release.Rule{
		rule("v1.0", "v1.2"), rule("v1.2", "v2.0"),
		rule("v1.0", "v1.1"), rule("v1.1", "v1.3"), rule("v1.3", "v2.0"),
	}
	got, err = resolve(t, s, "v1.0", "v2.0")
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.1", "v1.3", "v2.0"}, got, "longer: the deprecated v1.2 still loses")

	// Only through v1.2: used, and the hop says why.
	s.Rules = s.Rules[:2]
	r, err := path.Resolve(s.catalog(t), at(v("v1.0")), at(v("v2.0")))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v1.2", "v2.0"}, hopsOf(r))
	assert.Equal(t, "CVE-2026-1234: do not install", r.Hops[0].ToDeprecated)
	assert.Equal(t, "every route from v1.0 to v2.0 uses 1 deprecated edge or intermediate version", r.Hops[0].Why)
	assert.Empty(t, r.Hops[1].Why)

	// A deprecated target is the caller's choice: no explanation.
	r, err = path.Resolve(s.catalog(t), at(v("v1.0")), at(v("v1.2")))
	require.NoError(t, err)
	assert.Empty(t, r.Hops[0].Why)
}

func TestDeprecatedEdgeWhy(t *testing.T) {
	s := spec{
		Versions: []string{"v1.0", "v1.1", "v2.0"},
		Rules:    []release.Rule{rule("v1.0", "v1.1", deprecated("old")), rule("v1.1", "v2.0")},
	}
	r, err := path.Resolve(s.catalog(t), at(v("v1.0")), at(v("v2.0")))
	require.NoError(t, err)
	assert.Equal(t, "every route from v1.0 to v2.0 uses 1 deprecated edge or intermediate version", r.Hops[0].Why)
	assert.Contains(t, r.String(), `deprecated: "old" (every route from v1.0 to v2.0 uses 1 deprecated edge or intermediate version)`)
	ts, err := path.Targets(s.catalog(t), at(v("v1.0")))
	require.NoError(t, err)
	require.Len(t, ts, 2)
	assert.Equal(t, 1, ts[1].Deprecated)
	assert.Equal(t, r, ts[1].Route())
}

// Regression: reachable versions were listed ascending and cut after 8, so
// the ones nearest the target were dropped.
func TestNoRouteListsFurthestFirst(t *testing.T) {
	s := spec{}
	for i := 0; i <= 20; i++ {
		s.Versions = append(s.Versions, fmt.Sprintf("v1.%d", i))
		if i > 0 && i < 20 {
			s.Rules = append(s.Rules, rule(fmt.Sprintf("v1.%d", i-1), fmt.Sprintf("v1.%d", i)))
		}
	}
	s.Versions = append(s.Versions, "v2.0")
	_, err := resolve(t, s, "v1.0", "v2.0")
	nr := noRoute(t, err)
	assert.Equal(t, "v1.19", nr.Reachable[0].String())
	assert.Contains(t, err.Error(), "reachable from v1.0: v1.19, v1.18, v1.17, v1.16, v1.15, v1.14, v1.13, v1.12 and 11 more")
}

// Regression: when a risk and a guard must both be relaxed, the error said
// "accepting risk r1 gives a route; overriding guard soft gives a route",
// though neither does alone. It names the set, together, and only what is
// needed.
func TestNoRouteMinimalRelaxations(t *testing.T) {
	soft := path.Guard{Name: "soft", Component: k8s, MaxMinorSkew: 0, Overridable: true}
	s := spec{
		Versions: []string{"v1.0", "v1.1", "v1.2", "v2.0"},
		K8s:      map[string]string{"v1.0": "v1.30.0", "v1.1": "v1.31.0", "v1.2": "v1.31.0", "v2.0": "v1.31.1"},
		Rules: []release.Rule{
			rule("v1.0", "v1.1", risks("r1")), // risky and guarded (1.30 -> 1.31)
			rule("v1.1", "v2.0"),
			rule("v1.0", "v1.2", risks("r1", "r2")), // guarded too, and one more risk
			rule("v1.2", "v2.0"),
		},
	}
	c := s.catalog(t)
	_, err := path.Resolve(c, at(v("v1.0")), at(v("v2.0")), path.WithGuards(soft))
	nr := noRoute(t, err)
	assert.Equal(t, []path.Relaxation{{Kind: path.AcceptRisk, Name: "r1"}, {Kind: path.OverrideGuard, Name: "soft"}}, nr.Relaxations)
	assert.Equal(t, []string{"r1"}, nr.Risks)
	assert.Equal(t, []string{"soft"}, nr.Overrides)
	assert.Contains(t, err.Error(), "accept risk r1 and override guard soft, together, to get a route")
	assert.Equal(t, []string{"v1.0", "v1.1", "v2.0"}, hopsOf(nr.Relaxed))
	for _, alone := range []path.Option{path.AcceptRisks("r1"), path.OverrideGuards("soft")} {
		_, err := path.Resolve(c, at(v("v1.0")), at(v("v2.0")), path.WithGuards(soft), alone)
		require.ErrorIs(t, err, path.ErrNoRoute, "one relaxation alone gives no route")
	}
	// The relaxed-everything route may need more than a minimal set: when
	// the highest route is v1.2 (r1, r2), r2 is dropped because v1.1 needs
	// only r1.
	s.Rules = []release.Rule{
		rule("v1.0", "v1.2", risks("r1", "r2")), rule("v1.2", "v2.0"),
		rule("v1.0", "v1.1", risks("r1")), rule("v1.1", "v2.0"),
	}
	_, err = path.Resolve(s.catalog(t), at(v("v1.0")), at(v("v2.0")))
	nr = noRoute(t, err)
	assert.Equal(t, []string{"r1"}, nr.Risks)
	assert.Equal(t, []string{"v1.0", "v1.1", "v2.0"}, hopsOf(nr.Relaxed))

	// A CLI renders its own words.
	text := nr.Explain(func(rs []path.Relaxation, together bool) string { return "pass --accept " + rs[0].Name })
	assert.Contains(t, text, "pass --accept r1")
	assert.NotContains(t, text, "accept risk")
}

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

// The highest route may need two relaxations where a lower one needs one:
// the error names the smallest set.
func TestNoRouteSmallestRelaxations(t *testing.T) {
	s := spec{
		Versions: []string{"v1.0", "v1.1", "v1.2", "v2.0"},
		Rules: []release.Rule{
			rule("v1.0", "v1.2", risks("r1")), rule("v1.2", "v2.0", risks("r2")),
			rule("v1.0", "v1.1"), rule("v1.1", "v2.0", risks("r3")),
		},
	}
	_, err := path.Resolve(s.catalog(t), at(v("v1.0")), at(v("v2.0")))
	nr := noRoute(t, err)
	assert.Equal(t, []string{"r3"}, nr.Risks)
	assert.Equal(t, []string{"v1.0", "v1.1", "v2.0"}, hopsOf(nr.Relaxed))
	assert.Contains(t, err.Error(), "accept risk r3 to get a route")
}
