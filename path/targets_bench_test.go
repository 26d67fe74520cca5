package path_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// chainCatalog is a linear chain of n versions: v1.0.0 -> v1.0.1 -> ...
func chainCatalog(b testing.TB, n int) (*release.Catalog, []release.Version) {
	b.Helper()
	vs := make([]release.Version, n)
	rels := make([]release.Release, n)
	rules := make([]release.Rule, 0, n)
	for i := range vs {
		vs[i] = release.MustParseVersion(fmt.Sprintf("v1.%d.%d", i/100, i%100))
		rels[i] = release.Release{Name: fmt.Sprintf("r%d", i), Version: vs[i]}
		if i > 0 {
			rules = append(rules, release.Rule{From: release.ExactConstraint(vs[i-1]), To: vs[i]})
		}
	}
	c, err := release.NewCatalog(rels, nil, []release.UpgradePath{{Name: "chain", Rules: rules}})
	if err != nil {
		b.Fatal(err)
	}
	return c, vs
}

// BenchmarkTargetsChain is Targets from the first version of a linear chain
// (every version a target, the longest route n-1 hops), index build
// included, as a user calls path.Targets. It reports ns/op and B/op (the
// issue's target: 4,000 versions under 50 ms and 20 MB; quadratic memory
// took 5.4 s and 3.5 GB), and, measured in the same run, Resolve to the last
// version (resolve-ns/op) and the ratio targets/resolve, which stays near 1
// when Targets is linear. Building one route is timed too (route-ns/op).
//
//	go test -run '^$' -bench TargetsChain -benchmem ./path
func BenchmarkTargetsChain(b *testing.B) {
	for _, n := range []int{1000, 2000, 4000} {
		b.Run(fmt.Sprintf("versions=%d", n), func(b *testing.B) {
			c, vs := chainCatalog(b, n)
			b.ReportAllocs()
			var tTargets, tResolve, tRoute time.Duration
			for b.Loop() {
				t0 := time.Now()
				ts, err := path.Targets(c, at(vs[0]))
				t1 := time.Now()
				if err != nil || len(ts) != n-1 {
					b.Fatalf("Targets = %d targets, %v; want %d", len(ts), err, n-1)
				}
				r := ts[len(ts)-1].Route()
				t2 := time.Now()
				if len(r.Hops) != n-1 {
					b.Fatalf("route to the last version has %d hops, want %d", len(r.Hops), n-1)
				}
				b.StopTimer()
				t3 := time.Now()
				if _, err := path.Resolve(c, at(vs[0]), at(vs[n-1])); err != nil {
					b.Fatal(err)
				}
				tResolve += time.Since(t3)
				b.StartTimer()
				tTargets += t1.Sub(t0)
				tRoute += t2.Sub(t1)
			}
			b.ReportMetric(float64(tResolve.Nanoseconds())/float64(b.N), "resolve-ns/op")
			b.ReportMetric(float64(tRoute.Nanoseconds())/float64(b.N), "route-ns/op")
			b.ReportMetric(float64(tTargets)/float64(tResolve), "targets/resolve")
		})
	}
}

// Regression guard for Targets' memory on long chains (the figures are the
// benchmark's job): materialising every route made a 2,000-version chain
// allocate 885 MB (quadratic: about 3.5 GB at 4,000); the predecessor tree
// allocates about 4 MB at 4,000 versions, index build included (the
// benchmark's 6 MB also builds one 3,999-hop route). The bound
// is the target, 20 MB at 4,000 versions, counted in bytes
// allocated (not time, which a busy machine skews): it fails if routes are
// built eagerly again, or if Targets comes to allocate five times what the
// tree needs.
func TestTargetsChainMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 4,000-version catalog")
	}
	const n, limit = 4000, 20 << 20
	c, vs := chainCatalog(t, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ts, err := path.Targets(c, at(vs[0]))
	runtime.ReadMemStats(&after)
	if err != nil || len(ts) != n-1 {
		t.Fatalf("Targets = %d targets, %v; want %d", len(ts), err, n-1)
	}
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("Targets on a %d-version chain allocated %.1f MB", n, float64(got)/(1<<20))
	if got > limit {
		t.Errorf("Targets on a %d-version chain allocated %.1f MB, want under %d MB (routes built eagerly?)", n, float64(got)/(1<<20), limit>>20)
	}
}

// The next hop of every target of a long chain costs linear time and
// memory: Next, unlike Route, does not walk each route (a table of next
// hops was quadratic through Route: 2,000 routes of 1,000 hops on average).
func TestTargetsNextChain(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 2,000-version catalog")
	}
	c, vs := chainCatalog(t, 2000)
	ts, err := path.Targets(c, at(vs[0]))
	if err != nil || len(ts) != 1999 {
		t.Fatalf("Targets = %d targets, %v; want 1999", len(ts), err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i, x := range ts {
		if n, l := x.Next(), x.Last(); !n.From.Equal(vs[0]) || !n.To.Equal(vs[1]) || !l.From.Equal(vs[i]) || !l.To.Equal(vs[i+1]) {
			t.Fatalf("target %s: Next %s, Last %s; want %s -> %s and %s -> %s", x.Version, n, l, vs[0], vs[1], vs[i], vs[i+1])
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("Next and Last of 1,999 targets allocated %d MB, want under 16 MB (routes walked per target?)", got>>20)
	}
	var zero path.Target
	if zero.Next() != nil || zero.Last() != nil {
		t.Errorf("the zero Target: Next %v, Last %v; want nil", zero.Next(), zero.Last())
	}
}
