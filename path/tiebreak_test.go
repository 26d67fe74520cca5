package path_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// Catalogs built in code with release.NewCatalog.

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
