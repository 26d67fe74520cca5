package dag

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// loadCatalog loads the shared sample catalog.
func loadCatalog(t testing.TB) *release.Catalog {
	t.Helper()
	c, err := release.LoadDir("../testdata/catalog")
	require.NoError(t, err)
	return c
}

// rel returns the release of the default track with version v.
func rel(t testing.TB, c *release.Catalog, v string) *release.Release {
	t.Helper()
	r, ok := c.Release(release.MustParseVersion(v))
	require.True(t, ok, "release %s", v)
	return r
}

// batches returns Levels by name.
func batches(g *Graph) [][]string {
	out := [][]string{}
	for _, l := range g.Levels() {
		var names []string
		for _, v := range l {
			names = append(names, g.Node(v).Name)
		}
		out = append(out, names)
	}
	return out
}

// names maps indexes to names.
func names(g *Graph, idx []int) []string {
	out := []string{}
	for _, i := range idx {
		out = append(out, g.Node(i).Name)
	}
	return out
}

// layered returns n nodes in depth layers of equal width; every node past
// the first layer depends on 1-4 distinct nodes of the previous layer.
// Names are c000000.. in layer order, which is the order of the slice
// unless shuffle is set. Durations are 1-100 s.
func layered(n, depth int, seed uint64, shuffle bool) []Node {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	width := (n + depth - 1) / depth
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i].Name = fmt.Sprintf("c%06d", i)
		nodes[i].Duration = time.Duration(1+r.IntN(100)) * time.Second
		layer := i / width
		if layer == 0 {
			continue
		}
		lo := (layer - 1) * width
		k := min(1+r.IntN(4), width)
		for len(nodes[i].Deps) < k {
			name := nodes[lo+r.IntN(width)].Name
			if !slices.Contains(nodes[i].Deps, name) {
				nodes[i].Deps = append(nodes[i].Deps, name)
			}
		}
	}
	if shuffle {
		r.Shuffle(n, func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	}
	return nodes
}

// randomDAG returns n nodes with random names where each node depends on
// each earlier node (in a random topological order) with probability p.
func randomDAG(r *rand.Rand, n int, p float64) []Node {
	perm := r.Perm(n)
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i].Name = fmt.Sprintf("n%03d", perm[i])
		nodes[i].Duration = time.Duration(r.IntN(10)) * time.Second
		for j := 0; j < i; j++ {
			if r.Float64() < p {
				nodes[i].Deps = append(nodes[i].Deps, nodes[j].Name)
			}
		}
	}
	r.Shuffle(n, func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	return nodes
}
