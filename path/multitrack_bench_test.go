package path

import (
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
		r, explored, err := resolveState(c, from, to, nil)
		if err != nil {
			b.Fatal(err)
		}
		states, hops = explored, len(r.Hops)
	}
	b.ReportMetric(float64(states), "states")
	b.ReportMetric(float64(hops), "hops")
}
