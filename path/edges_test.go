package path_test

import (
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
