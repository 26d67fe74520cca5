package dag

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

const propertyRuns = 300

// reachMatrix is the transitive closure of the input (Floyd-Warshall over
// names), written without the package's own code: reach[a][b] means a
// depends on b, directly or not.
func reachMatrix(nodes []Node) map[string]map[string]bool {
	reach := map[string]map[string]bool{}
	var all []string
	for _, nd := range nodes {
		all = append(all, nd.Name)
		reach[nd.Name] = map[string]bool{}
	}
	for _, nd := range nodes {
		for _, d := range nd.Deps {
			reach[nd.Name][d] = true
		}
	}
	for _, k := range all {
		for _, i := range all {
			if !reach[i][k] {
				continue
			}
			for _, j := range all {
				if reach[k][j] {
					reach[i][j] = true
				}
			}
		}
	}
	return reach
}

func TestPropertyLevels(t *testing.T) {
	for seed := uint64(0); seed < propertyRuns; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		nodes := randomDAG(r, 1+r.IntN(40), r.Float64()*0.3)
		g, err := New(nodes)
		require.NoError(t, err, "seed %d", seed)

		// Every node is in exactly one batch; batches are sorted.
		seen := make([]bool, g.Len())
		for l, batch := range g.Levels() {
			require.NotEmpty(t, batch)
			require.True(t, slices.IsSorted(batch), "seed %d: batch %d sorted", seed, l)
			for _, v := range batch {
				require.False(t, seen[v])
				seen[v] = true
				require.Equal(t, l, g.Level(v))
			}
		}
		require.NotContains(t, seen, false)

		// Every edge goes from an earlier to a later level, and a node's
		// level is 1 + the largest level of its dependencies.
		byName := map[string]Node{}
		for _, nd := range nodes {
			byName[nd.Name] = nd
		}
		for v := 0; v < g.Len(); v++ {
			want := 0
			for _, d := range g.Deps(v) {
				require.Less(t, g.Level(d), g.Level(v), "seed %d: edge %s -> %s", seed, g.Node(d).Name, g.Node(v).Name)
				want = max(want, g.Level(d)+1)
			}
			require.Equal(t, want, g.Level(v), "seed %d: level of %s", seed, g.Node(v).Name)
			// The graph keeps exactly the input's edges.
			in := slices.Clone(byName[g.Node(v).Name].Deps)
			slices.Sort(in)
			require.Equal(t, nilIfEmpty(slices.Compact(in)), nilIfEmpty(g.Node(v).Deps))
			for _, d := range g.Deps(v) {
				require.Contains(t, g.Dependents(d), v)
			}
		}
	}
}

func TestPropertyCriticalPath(t *testing.T) {
	for seed := uint64(0); seed < propertyRuns; seed++ {
		r := rand.New(rand.NewPCG(seed, 2))
		nodes := randomDAG(r, 1+r.IntN(40), r.Float64()*0.3)
		g, err := New(nodes)
		require.NoError(t, err)

		// Independent DP: memoised recursion over the input by name.
		byName := map[string]Node{}
		for _, nd := range nodes {
			byName[nd.Name] = nd
		}
		memo := map[string]time.Duration{}
		var longest func(string) time.Duration
		longest = func(name string) time.Duration {
			if d, ok := memo[name]; ok {
				return d
			}
			best := time.Duration(0)
			for _, d := range byName[name].Deps {
				best = max(best, longest(d))
			}
			memo[name] = best + byName[name].Duration
			return memo[name]
		}
		want := time.Duration(0)
		for _, nd := range nodes {
			want = max(want, longest(nd.Name))
		}

		path, length := g.CriticalPath()
		require.Equal(t, want, length, "seed %d", seed)
		require.NotEmpty(t, path)
		sum := time.Duration(0)
		for k, v := range path {
			sum += g.Node(v).Duration
			if k > 0 {
				require.Contains(t, g.Deps(v), path[k-1], "seed %d: the path follows edges", seed)
			}
		}
		require.Equal(t, length, sum)
		require.Empty(t, g.Deps(path[0]), "the path starts at a source")
	}
}

func TestPropertyClosureAndReduction(t *testing.T) {
	for seed := uint64(0); seed < propertyRuns; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		nodes := randomDAG(r, 1+r.IntN(30), r.Float64()*0.5)
		g, err := New(nodes)
		require.NoError(t, err)
		reach := reachMatrix(nodes)
		red := g.TransitiveReduction()
		require.Equal(t, batches(g), batches(red))
		p1, l1 := g.CriticalPath()
		p2, l2 := red.CriticalPath()
		require.Equal(t, p1, p2)
		require.Equal(t, l1, l2)
		for v := 0; v < g.Len(); v++ {
			name := g.Node(v).Name
			var anc, desc []string
			for w := 0; w < g.Len(); w++ {
				if reach[name][g.Node(w).Name] {
					anc = append(anc, g.Node(w).Name)
				}
				if reach[g.Node(w).Name][name] {
					desc = append(desc, g.Node(w).Name)
				}
			}
			require.Equal(t, anc, nilIfEmpty(names(g, g.Ancestors(v))), "seed %d: ancestors of %s", seed, name)
			require.Equal(t, desc, nilIfEmpty(names(g, g.Descendants(v))), "seed %d: descendants of %s", seed, name)
			require.Equal(t, g.Ancestors(v), red.Ancestors(v), "the reduction keeps reachability")
			// An edge v -> d stays iff no other dependency of v reaches d.
			var want []string
			for _, d := range g.Node(v).Deps {
				implied := false
				for _, d2 := range g.Node(v).Deps {
					if d2 != d && reach[d2][d] {
						implied = true
					}
				}
				if !implied {
					want = append(want, d)
				}
			}
			require.Equal(t, want, nilIfEmpty(red.Node(v).Deps), "seed %d: reduced deps of %s", seed, name)
		}
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// Disjoint cycles planted next to a random DAG (their nodes may depend on
// the DAG, never the reverse, so each cycle is its own component) are all
// reported, exactly, each rotated to its smallest name.
func TestPropertyPlantedCycles(t *testing.T) {
	for seed := uint64(0); seed < propertyRuns; seed++ {
		r := rand.New(rand.NewPCG(seed, 4))
		nodes := randomDAG(r, r.IntN(30), 0.2)
		base := len(nodes)
		var want [][]string
		for c := 0; c < 1+r.IntN(4); c++ {
			size := 2 + r.IntN(5)
			ring := make([]string, size)
			for k := range ring {
				ring[k] = fmt.Sprintf("cyc%d-%c", c, 'a'+rune(r.IntN(26)))
				for slices.Contains(ring[:k], ring[k]) {
					ring[k] = fmt.Sprintf("cyc%d-%c", c, 'a'+rune(r.IntN(26)))
				}
			}
			for k := range ring {
				nd := Node{Name: ring[k], Deps: []string{ring[(k+1)%size]}}
				if base > 0 && r.IntN(2) == 0 {
					nd.Deps = append(nd.Deps, nodes[r.IntN(base)].Name)
				}
				nodes = append(nodes, nd)
			}
			// Rotate to the smallest name and close the path.
			m := 0
			for k := range ring {
				if ring[k] < ring[m] {
					m = k
				}
			}
			path := append(slices.Clone(ring[m:]), ring[:m]...)
			want = append(want, append(path, path[0]))
		}
		sort.Slice(want, func(i, j int) bool { return want[i][0] < want[j][0] })
		r.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })

		_, err := New(nodes)
		var ce *CycleError
		require.ErrorAs(t, err, &ce, "seed %d", seed)
		require.Equal(t, want, ce.Cycles, "seed %d", seed)
	}
}

// Random graphs with random back edges: the reported walks are exactly the
// non-trivial strongly connected components of a brute-force closure, each
// a closed walk along real edges from its smallest member that covers it.
func TestPropertyCyclesAreTheComponents(t *testing.T) {
	for seed := uint64(0); seed < propertyRuns; seed++ {
		r := rand.New(rand.NewPCG(seed, 5))
		nodes := randomDAG(r, 2+r.IntN(30), 0.15)
		for k := 0; k < 1+r.IntN(4); k++ {
			i, j := r.IntN(len(nodes)), r.IntN(len(nodes))
			if i != j {
				nodes[i].Deps = append(nodes[i].Deps, nodes[j].Name)
			}
		}
		reach := reachMatrix(nodes)
		// Brute-force components of size > 1, each as sorted names.
		var want [][]string
		done := map[string]bool{}
		var all []string
		for _, nd := range nodes {
			all = append(all, nd.Name)
		}
		slices.Sort(all)
		for _, a := range all {
			if done[a] || !reach[a][a] {
				continue
			}
			comp := []string{a}
			for _, b := range all {
				if b != a && reach[a][b] && reach[b][a] {
					comp = append(comp, b)
				}
			}
			for _, b := range comp {
				done[b] = true
			}
			want = append(want, comp)
		}

		g, err := New(nodes)
		if len(want) == 0 {
			require.NoError(t, err, "seed %d", seed)
			continue
		}
		var ce *CycleError
		require.ErrorAs(t, err, &ce, "seed %d", seed)
		require.Len(t, ce.Cycles, len(want), "seed %d", seed)
		require.Nil(t, g)
		edges := map[[2]string]bool{}
		for _, nd := range nodes {
			for _, d := range nd.Deps {
				edges[[2]string{nd.Name, d}] = true
			}
		}
		for k, walk := range ce.Cycles {
			require.Equal(t, want[k][0], walk[0], "seed %d: starts at the smallest member", seed)
			require.Equal(t, walk[0], walk[len(walk)-1], "closed")
			for s := 1; s < len(walk); s++ {
				require.True(t, edges[[2]string{walk[s-1], walk[s]}], "seed %d: %s -> %s is an edge", seed, walk[s-1], walk[s])
			}
			members := slices.Clone(walk)
			slices.Sort(members)
			require.Equal(t, want[k], slices.Compact(members), "seed %d: covers the component", seed)
		}
	}
}

func TestPropertyHeimdalrRoundTrip(t *testing.T) {
	for seed := uint64(0); seed < propertyRuns/3; seed++ {
		r := rand.New(rand.NewPCG(seed, 6))
		g, err := New(randomDAG(r, 1+r.IntN(30), r.Float64()*0.3))
		require.NoError(t, err)
		h, err := ToHeimdalr(g)
		require.NoError(t, err)
		require.Equal(t, g.Len(), h.GetOrder())
		require.Equal(t, g.NumEdges(), h.GetSize())
		back, err := FromHeimdalr(h)
		require.NoError(t, err)
		require.Equal(t, g.Names(), back.Names())
		for v := 0; v < g.Len(); v++ {
			require.Equal(t, g.Node(v).Deps, back.Node(v).Deps)
			require.Equal(t, g.Node(v).Duration, back.Node(v).Duration)
		}
		require.Equal(t, g.Levels(), back.Levels())
		require.Equal(t, g.DOT(), back.DOT())
	}
}

// Build on random catalogs: the dependencies of a changed component are
// exactly the changed components it reaches through unchanged ones only
// (brute force over paths), plus the changed `before: all` components.
func TestPropertyBuildThroughUnchanged(t *testing.T) {
	for seed := uint64(0); seed < propertyRuns/3; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		shape := randomDAG(r, 1+r.IntN(25), 0.2)
		var olds, news []release.ComponentVersion
		changed := map[string]bool{}
		firsts := map[string]bool{}
		for _, nd := range shape {
			old := comp(nd.Name, "v1.0.0", nd.Deps...)
			cur := old
			if r.IntN(2) == 0 {
				cur = comp(nd.Name, "v1.1.0", nd.Deps...)
				changed[nd.Name] = true
			}
			if len(nd.Deps) == 0 && r.IntN(8) == 0 {
				// Without dependencies a `before: all` component closes no cycle.
				old, cur = first(old), first(cur)
				firsts[nd.Name] = true
			}
			olds, news = append(olds, old), append(news, cur)
		}
		c, from, to := catalogOf(t, olds, news)
		g, err := Build(c, from, to)
		require.NoError(t, err, "seed %d", seed)
		byName := map[string]Node{}
		for _, nd := range shape {
			byName[nd.Name] = nd
		}
		for v := 0; v < g.Len(); v++ {
			name := g.Node(v).Name
			require.True(t, changed[name])
			want := map[string]bool{}
			var walk func(string)
			walk = func(n string) {
				for _, d := range byName[n].Deps {
					if changed[d] {
						want[d] = true
					} else {
						walk(d)
					}
				}
			}
			walk(name)
			if !firsts[name] {
				for f := range firsts {
					if changed[f] {
						want[f] = true
					}
				}
			}
			var wantList []string
			for d := range want {
				wantList = append(wantList, d)
			}
			slices.Sort(wantList)
			assert.Equal(t, wantList, nilIfEmpty(g.Node(v).Deps), "seed %d: deps of %s", seed, name)
		}
		require.Equal(t, len(changed), g.Len())
	}
}
