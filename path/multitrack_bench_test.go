package path

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hopdag/hopdag/release"
)

// BenchmarkResolveState3x200 resolves a route across 3 tracks of 200
// versions each (every version upgrades to the next three; each track's
// release i supports the next track's versions i-10 to i+10), from the first
// state to the last. It reports the time per Resolve and the states the
// search explored (metric states), against the 8,000,000 states of the
// product.
//
//	go test -run '^$' -bench ResolveState -benchmem ./path
func BenchmarkResolveState3x200(b *testing.B) {
	const tracks, n, band = 3, 200, 10
	ver := func(i int) release.Version { return release.MustParseVersion(fmt.Sprintf("v%d.%d.0", 1+i/50, i%50)) }
	var rels []release.Release
	var paths []release.UpgradePath
	names := []string{"platform", "kubernetes", "storage"}
	for t := range tracks {
		var rules []release.Rule
		for i := range n {
			r := release.Release{Name: fmt.Sprintf("%s-%d", names[t], i), Version: ver(i), Track: names[t]}
			if t+1 < tracks {
				lo, hi := max(0, i-band), min(n-1, i+band)
				r.Supports = map[string]release.Constraint{names[t+1]: release.MustParseConstraint(fmt.Sprintf(">= %s, <= %s", ver(lo), ver(hi)))}
			}
			rels = append(rels, r)
			if i > 0 {
				rules = append(rules, release.Rule{From: release.MustParseConstraint(fmt.Sprintf(">= %s, < %s", ver(max(0, i-3)), ver(i))), To: ver(i)})
			}
		}
		paths = append(paths, release.UpgradePath{Name: names[t], Track: names[t], Rules: rules})
	}
	c, err := release.NewCatalog(rels, nil, paths)
	if err != nil {
		b.Fatal(err)
	}
	from, to := State{}, State{}
	for _, name := range names {
		from[name], to[name] = ver(0), ver(n-1)
	}
	b.ReportAllocs()
	states, hops := 0, 0
	for b.Loop() {
		r, explored, err := resolve(c, from, to, nil)
		if err != nil {
			b.Fatal(err)
		}
		states, hops = explored, len(r.Hops)
	}
	b.ReportMetric(float64(states), "states")
	b.ReportMetric(float64(hops), "hops")
}

// staticNoRoute is issue 25's case: tracks a, b and c of n versions (each
// version upgrades to the next), only a targeted (its last version), b and
// c free; every release of a supports every version of b but the target's,
// which supports none (">= v99.0.0"). No route exists, which the catalog
// shows without a search; a search alone explores about n^3 states.
func staticNoRoute(tb testing.TB, n int) (*release.Catalog, State, State) {
	tb.Helper()
	ver := func(i int) release.Version { return release.MustParseVersion(fmt.Sprintf("v1.%d.0", i)) }
	var rels []release.Release
	var paths []release.UpgradePath
	for _, name := range []string{"a", "b", "c"} {
		var rules []release.Rule
		for i := range n {
			r := release.Release{Name: fmt.Sprintf("%s-%d", name, i), Version: ver(i), Track: name}
			switch {
			case name == "a" && i == n-1:
				r.Supports = map[string]release.Constraint{"b": release.MustParseConstraint(">= v99.0.0")}
			case name == "a":
				r.Supports = map[string]release.Constraint{"b": release.MustParseConstraint("*")}
			}
			rels = append(rels, r)
			if i > 0 {
				rules = append(rules, release.Rule{From: release.MustParseConstraint(ver(i - 1).String()), To: ver(i)})
			}
		}
		paths = append(paths, release.UpgradePath{Name: name, Track: name, Rules: rules})
	}
	c, err := release.NewCatalog(rels, nil, paths)
	if err != nil {
		tb.Fatal(err)
	}
	return c, State{"a": ver(0), "b": ver(0), "c": ver(0)}, State{"a": ver(n - 1)}
}

// BenchmarkResolveStateStaticNoRoute times the no-route answer of
// staticNoRoute with 3 tracks of 120 versions and reports the states the
// search explored (issue 25: 8.5 s and 509 MB).
//
//	go test -run '^$' -bench ResolveStateStaticNoRoute -benchmem ./path
func BenchmarkResolveStateStaticNoRoute(b *testing.B) {
	c, from, to := staticNoRoute(b, 120)
	b.ReportAllocs()
	states := 0
	for b.Loop() {
		_, explored, err := resolve(c, from, to, nil)
		if !errors.Is(err, ErrNoRoute) {
			b.Fatalf("Resolve(%s, %s) = %v, want ErrNoRoute", from, to, err)
		}
		states = explored
	}
	b.ReportMetric(float64(states), "states")
}
