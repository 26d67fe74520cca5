package path_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// A refusal behind risks on a catalog of a hundred versions, where three
// risks with long messages close the fifty edges between two chains, says
// each risk's message once, then the edges it closes, capped. Regression
// (issue 30): it was one line of 4.5 KB that repeated every risk message
// for every closed edge it named.
func TestNoRouteGroupsRisks(t *testing.T) {
	const n = 100
	var s spec
	for i := range n {
		s.Versions = append(s.Versions, fmt.Sprintf("v1.%d", i))
	}
	long := func(name string) release.Risk {
		return release.Risk{Name: name, Message: name + ": " + strings.Repeat("the upgrade rewrites the node configuration and drains every node; ", 3)}
	}
	shared := func(r *release.Rule) { r.Risks = []release.Risk{long("r1"), long("r2"), long("r3")} }
	for i := range n/2 - 1 {
		s.Rules = append(s.Rules, rule(s.Versions[i], s.Versions[i+1]), rule(s.Versions[n/2+i], s.Versions[n/2+i+1]))
	}
	for i := range n / 2 {
		s.Rules = append(s.Rules, rule(s.Versions[i], s.Versions[n/2+i], shared))
	}
	c := s.catalog(t)
	from, to := at(v(s.Versions[0])), at(v(s.Versions[n-1]))
	_, err := path.Resolve(c, from, to)
	var nr *path.NoRouteError
	require.True(t, errors.As(err, &nr), "Resolve(%s, %s) = %v, want a *NoRouteError", from, to, err)
	require.Len(t, nr.Closed, n/2, "Resolve(%s, %s): closed edges", from, to)
	msg := err.Error()
	for _, r := range []string{"r1", "r2", "r3"} {
		assert.Equal(t, 1, strings.Count(msg, long(r).Message), "Resolve(%s, %s): the message of risk %s, want once in:\n%s", from, to, r, msg)
	}
	assert.Contains(t, msg, "closed edges: 50 edges (v1.0 -> v1.50, v1.1 -> v1.51, v1.2 -> v1.52, v1.3 -> v1.53, v1.4 -> v1.54, v1.5 -> v1.55, v1.6 -> v1.56, v1.7 -> v1.57 and 42 more): "+
		"risk r1 not accepted ("+long("r1").Message+"); risk r2 not accepted ("+long("r2").Message+"); risk r3 not accepted ("+long("r3").Message+")",
		"Resolve(%s, %s): the edges the risks close, then each risk", from, to)
	assert.True(t, strings.HasPrefix(msg, "path: no route from v1.0 to v1.99: accept risks r1 and r2 and r3, together, to get a route; closed edges: 50 edges ("), "Resolve(%s, %s) = %s", from, to, msg)
	// Each edge named with every message, as it was: 8 x 3 messages.
	var old []string
	for _, ce := range nr.Closed[:8] {
		old = append(old, ce.String())
	}
	t.Logf("refusal: %d bytes (each edge with its risks: %d bytes)", len(msg), len(strings.Join(old, "; ")))
	assert.Less(t, len(msg), 1500, "Resolve(%s, %s): the refusal's size, want under 1,500 bytes:\n%s", from, to, msg)
}

// Closed edges of several reasons: a reason of one edge keeps the shape
// "from -> to: reason"; at most 8 reasons are named, then "and N more
// reasons".
func TestNoRouteClosedReasons(t *testing.T) {
	tests := []struct {
		name  string
		rules []release.Rule
		want  string
	}{
		{"one blocked edge", []release.Rule{rule("v1.0", "v1.1", blocked("broken"))},
			"path: no route from v1.0 to v1.1: closed edges: v1.0 -> v1.1: blocked: broken"},
		{"one edge, two risks", []release.Rule{rule("v1.0", "v1.1", risks("a", "b"))},
			"path: no route from v1.0 to v1.1: accept risks a and b, together, to get a route; closed edges: v1.0 -> v1.1: risk a not accepted (beware of a); risk b not accepted (beware of b)"},
		{"ten risks on one edge", []release.Rule{rule("v1.0", "v1.1", risks("a", "b", "c", "d", "e", "f", "g", "h", "i", "j"))},
			"path: no route from v1.0 to v1.1: accept risks a and b and c and d and e and f and g and h and i and j, together, to get a route; closed edges: " +
				"v1.0 -> v1.1: risk a not accepted (beware of a); risk b not accepted (beware of b); risk c not accepted (beware of c); " +
				"risk d not accepted (beware of d); risk e not accepted (beware of e); risk f not accepted (beware of f); " +
				"risk g not accepted (beware of g); risk h not accepted (beware of h); and 2 more reasons"},
		{"two edges, one shared risk, one of their own", []release.Rule{rule("v1.0", "v1.1", risks("shared", "a")), rule("v1.0", "v1.2", risks("shared", "b")), rule("v1.2", "v1.1")},
			"path: no route from v1.0 to v1.1: accept risks shared and a, together, to get a route; closed edges: " +
				"2 edges (v1.0 -> v1.1, v1.0 -> v1.2): risk shared not accepted (beware of shared); v1.0 -> v1.1: risk a not accepted (beware of a); v1.0 -> v1.2: risk b not accepted (beware of b)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := spec{Versions: []string{"v1.0", "v1.1", "v1.2"}, Rules: tt.rules}.catalog(t)
			_, err := path.Resolve(c, at(v("v1.0")), at(v("v1.1")))
			require.Error(t, err, "Resolve(v1.0, v1.1)")
			assert.Equal(t, tt.want, err.Error(), "Resolve(v1.0, v1.1)")
		})
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
