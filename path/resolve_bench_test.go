package path_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// Benchmarks on a generated graph of 10,000 versions and 100,000 rules, 30%
// of them ranges. Run them with
//
//	go test -run '^$' -bench . -benchmem ./path
//
// BenchmarkResolveVsBFS reports, in one run, Resolve on a built index and a
// plain BFS over a precomputed adjacency list on the same pairs, and their
// ratio (resolve/bfs). BenchmarkNewIndex builds the index at 50,000 and
// 100,000 rules and reports ns/rule, which stays flat when the build is
// linear in the number of rules.

const (
	benchVersions = 10_000
	benchRules    = 100_000
	benchPairs    = 256
)

type benchData struct {
	versions []release.Version
	rules    []release.Rule
	catalogs map[int]*release.Catalog // by number of rules (a prefix of rules)
	ix       *path.Index              // on benchRules rules
	adj      [][]int32                // usable edges of ix, built independently
	pairs    [][2]int32               // reachable (from, to) pairs
	sources  []int32                  // for Targets
	setup    time.Duration            // catalog construction time
}

var (
	benchOnce sync.Once
	bench     *benchData
)

func benchVersion(i int) release.Version {
	return release.MustParseVersion(fmt.Sprintf("v%d.%d.%d", 1+i/1000, (i/10)%100, i%10))
}

func benchSetup(b *testing.B) *benchData {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	benchOnce.Do(func() {
		start := time.Now()
		d := &benchData{catalogs: map[int]*release.Catalog{}}
		rng := rand.New(rand.NewPCG(2026, 3))
		d.versions = make([]release.Version, benchVersions)
		rels := make([]release.Release, benchVersions)
		for i := range d.versions {
			d.versions[i] = benchVersion(i)
			rels[i] = release.Release{Name: fmt.Sprintf("r%d", i), Version: d.versions[i]}
		}
		var spans []benchSpan
		d.rules, spans = benchRuleSet(rng, d.versions)
		for _, n := range []int{benchRules / 2, benchRules} {
			c, err := release.NewCatalog(rels, nil, []release.UpgradePath{{Name: "bench", Rules: d.rules[:n]}})
			if err != nil {
				b.Fatal(err)
			}
			d.catalogs[n] = c
		}
		d.setup = time.Since(start)

		var err error
		d.ix, err = path.NewIndex(d.catalogs[benchRules])
		if err != nil {
			b.Fatal(err)
		}
		d.adj = benchAdjacency(d.rules, spans)
		d.benchPairs(b, rng)
		for i := range 8 {
			d.sources = append(d.sources, int32(i*benchVersions/16))
		}
		bench = d
	})
	if bench == nil {
		b.Fatal("benchmark setup failed")
	}
	return bench
}

// benchSpan is what the generator knows of a rule: it goes from the
// versions [lo, hi) to to.
type benchSpan struct{ lo, hi, to int }

// benchRuleSet generates benchRules rules over versions: exact upgrades,
// explicit downgrades and ranges, some blocked, deprecated or risky.
func benchRuleSet(rng *rand.Rand, versions []release.Version) ([]release.Rule, []benchSpan) {
	// Jumps are log-uniform in [1, 2000]: most rules go a few versions
	// ahead, some far, as release lines do.
	jump := func() int { return int(math.Exp(rng.Float64() * math.Log(2000))) }
	rules := make([]release.Rule, 0, benchRules)
	spans := make([]benchSpan, 0, benchRules)
	for len(rules) < benchRules {
		var r release.Rule
		var sp benchSpan
		switch k := rng.IntN(100); {
		case k < 69: // exact upgrade
			sp.lo = rng.IntN(benchVersions)
			sp.hi, sp.to = sp.lo+1, sp.lo+jump()
			r.From = release.ExactConstraint(versions[sp.lo])
		case k < 70: // explicit downgrade
			sp.lo = rng.IntN(benchVersions)
			sp.hi, sp.to = sp.lo+1, sp.lo-1-rng.IntN(20)
			r.From = release.ExactConstraint(versions[sp.lo])
		default: // range of 2 to 16 versions
			sp.lo = rng.IntN(benchVersions)
			sp.hi = sp.lo + 2 + rng.IntN(15)
			sp.to = sp.hi - 1 + jump()
			if sp.hi >= benchVersions {
				continue
			}
			r.From = release.MustParseConstraint(fmt.Sprintf(">= %s, < %s", versions[sp.lo], versions[sp.hi]))
		}
		if sp.to < 0 || sp.to >= benchVersions {
			continue
		}
		r.To = versions[sp.to]
		switch k := rng.IntN(100); {
		case k < 3:
			r.Blocked = "generated"
		case k < 8:
			r.Deprecated = "generated"
		case k < 10:
			r.Risks = []release.Risk{{Name: "generated"}}
		}
		rules = append(rules, r)
		spans = append(spans, sp)
	}
	return rules, spans
}

// benchAdjacency is the baseline's adjacency, from the generator's own
// record of each rule: blocked edges out, risky edges out (no risk is
// accepted).
func benchAdjacency(rules []release.Rule, spans []benchSpan) [][]int32 {
	type key struct{ f, t int32 }
	const seen, blocked, risky = 1, 2, 4
	state := map[key]uint8{}
	for i, sp := range spans {
		r := &rules[i]
		for f := sp.lo; f < sp.hi; f++ {
			if f == sp.to || (sp.hi-sp.lo > 1 && f > sp.to) {
				continue // a range never gives a downgrade
			}
			k := key{int32(f), int32(sp.to)}
			st := state[k]
			if st&seen == 0 { // the first rule of an edge is recorded
				st |= seen
				if len(r.Risks) > 0 {
					st |= risky
				}
			}
			if r.Blocked != "" { // any blocked rule closes it
				st |= blocked
			}
			state[k] = st
		}
	}
	adj := make([][]int32, benchVersions)
	for k, st := range state {
		if st == seen {
			adj[k.f] = append(adj[k.f], k.t)
		}
	}
	for i := range adj {
		slices.Sort(adj[i])
	}
	return adj
}

// benchPairs picks benchPairs (source, reachable target) pairs: a random
// source, and a random version it reaches, cross-checking the index with
// the baseline on each: the same versions are reachable; a route may be
// longer than the BFS's when it avoids deprecated edges (5% of the
// rules), never shorter.
func (d *benchData) benchPairs(b *testing.B, rng *rand.Rand) {
	var bs bfsState
	bs.init(benchVersions)
	for len(d.pairs) < benchPairs {
		src := int32(rng.IntN(benchVersions / 2))
		dist := bs.all(d.adj, src)
		var reach []int32
		for v, dd := range dist {
			if dd > 0 {
				reach = append(reach, int32(v))
			}
		}
		if len(reach) == 0 {
			continue
		}
		dst := reach[rng.IntN(len(reach))]
		d.pairs = append(d.pairs, [2]int32{src, dst})
		r, err := d.ix.Resolve(d.versions[src], d.versions[dst])
		if err != nil || len(r.Hops) < int(dist[dst]) {
			b.Fatalf("%s -> %s: index and baseline disagree: %v, BFS %d hops", d.versions[src], d.versions[dst], err, dist[dst])
		}
	}
}

// bfsState is the baseline: a plain BFS with preallocated marks.
type bfsState struct {
	stamp  uint32
	seen   []uint32
	parent []int32
	dist   []int32
	queue  []int32
}

func (s *bfsState) init(n int) {
	s.seen, s.parent, s.dist = make([]uint32, n), make([]int32, n), make([]int32, n)
}

// path returns the versions of a shortest route from src to dst, or nil.
func (s *bfsState) path(adj [][]int32, src, dst int32) []int32 {
	s.stamp++
	s.seen[src] = s.stamp
	s.queue = append(s.queue[:0], src)
	for h := 0; h < len(s.queue); h++ {
		x := s.queue[h]
		for _, y := range adj[x] {
			if s.seen[y] == s.stamp {
				continue
			}
			s.seen[y], s.parent[y] = s.stamp, x
			if y == dst {
				var route []int32
				for v := dst; v != src; v = s.parent[v] {
					route = append(route, v)
				}
				route = append(route, src)
				slices.Reverse(route)
				return route
			}
			s.queue = append(s.queue, y)
		}
	}
	return nil
}

// all returns the hop distance of every version from src (-1: unreachable).
func (s *bfsState) all(adj [][]int32, src int32) []int32 {
	s.stamp++
	for i := range s.dist {
		s.dist[i] = -1
	}
	s.seen[src], s.dist[src] = s.stamp, 0
	s.queue = append(s.queue[:0], src)
	for h := 0; h < len(s.queue); h++ {
		x := s.queue[h]
		for _, y := range adj[x] {
			if s.seen[y] != s.stamp {
				s.seen[y], s.dist[y] = s.stamp, s.dist[x]+1
				s.queue = append(s.queue, y)
			}
		}
	}
	return s.dist
}

func BenchmarkNewIndex(b *testing.B) {
	d := benchSetup(b)
	b.Logf("catalog construction (release.NewCatalog, both sizes, not timed): %v", d.setup)
	for _, n := range []int{benchRules / 2, benchRules} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			c := d.catalogs[n]
			var ix *path.Index
			for b.Loop() {
				var err error
				if ix, err = path.NewIndex(c); err != nil {
					b.Fatal(err)
				}
			}
			open, closed := ix.Edges()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/rule")
			b.ReportMetric(float64(open+closed), "edges")
		})
	}
}

func BenchmarkResolve(b *testing.B) {
	d := benchSetup(b)
	i := 0
	for b.Loop() {
		p := d.pairs[i%len(d.pairs)]
		if _, err := d.ix.Resolve(d.versions[p[0]], d.versions[p[1]]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkBFS(b *testing.B) {
	d := benchSetup(b)
	var bs bfsState
	bs.init(benchVersions)
	i := 0
	for b.Loop() {
		p := d.pairs[i%len(d.pairs)]
		if bs.path(d.adj, p[0], p[1]) == nil {
			b.Fatal("no route")
		}
		i++
	}
}

// BenchmarkResolveVsBFS times Resolve and the plain BFS on the same pairs in
// the same run and reports both and their ratio. The BFS ignores
// deprecation; Resolve avoids deprecated edges (5% of the rules) when a
// route without them exists, so its route may be longer and its search
// wider: the ratio includes that work.
func BenchmarkResolveVsBFS(b *testing.B) {
	d := benchSetup(b)
	var bs bfsState
	bs.init(benchVersions)
	var tResolve, tBFS time.Duration
	hops := 0
	for i := 0; b.Loop(); i++ {
		p := d.pairs[i%len(d.pairs)]
		t0 := time.Now()
		r, err := d.ix.Resolve(d.versions[p[0]], d.versions[p[1]])
		t1 := time.Now()
		route := bs.path(d.adj, p[0], p[1])
		t2 := time.Now()
		if err != nil || route == nil || len(r.Hops) < len(route)-1 {
			b.Fatalf("%v %v", err, route)
		}
		tResolve += t1.Sub(t0)
		tBFS += t2.Sub(t1)
		hops += len(r.Hops)
	}
	b.ReportMetric(float64(tResolve.Nanoseconds())/float64(b.N), "resolve-ns/op")
	b.ReportMetric(float64(tBFS.Nanoseconds())/float64(b.N), "bfs-ns/op")
	b.ReportMetric(float64(tResolve)/float64(tBFS), "resolve/bfs")
	b.ReportMetric(float64(hops)/float64(b.N), "hops/op")
}

func BenchmarkTargets(b *testing.B) {
	d := benchSetup(b)
	var bs bfsState
	bs.init(benchVersions)
	var tTargets, tBFS time.Duration
	n := 0
	for i := 0; b.Loop(); i++ {
		src := d.sources[i%len(d.sources)]
		t0 := time.Now()
		ts, err := d.ix.Targets(d.versions[src])
		t1 := time.Now()
		bs.all(d.adj, src)
		t2 := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		tTargets += t1.Sub(t0)
		tBFS += t2.Sub(t1)
		n += len(ts)
	}
	b.ReportMetric(float64(n)/float64(b.N), "targets/op")
	b.ReportMetric(float64(tBFS.Nanoseconds())/float64(b.N), "bfs-all-ns/op")
	b.ReportMetric(float64(tTargets)/float64(tBFS), "targets/bfs-all")
}
