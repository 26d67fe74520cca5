package dag

import (
	"maps"
	"slices"
)

// TransitiveReduction returns the graph with every dependency that another
// path already implies removed (for display: A -> C goes when A -> B -> C
// is there). Nodes, levels and the critical path are unchanged. It costs up
// to one search per node, bounded below by the levels of its dependencies.
func (g *Graph) TransitiveReduction() *Graph {
	n := len(g.nodes)
	r := &Graph{nodes: slices.Clone(g.nodes), index: maps.Clone(g.index), depOff: make([]int, n+1), deps: make([]int, 0, len(g.deps)),
		from: g.from, to: g.to, removed: g.removed}
	mark := make([]int, n) // mark[v] == u+1: v is implied for node u
	var ds, stack []int
	for u := 0; u < n; u++ {
		ds = append(ds[:0], g.Deps(u)...)
		// Latest level first: a dependency can only be implied by one of a
		// higher level, which has then already been searched.
		slices.SortStableFunc(ds, func(a, b int) int { return g.level[b] - g.level[a] })
		minLevel := 0
		if len(ds) > 0 {
			minLevel = g.level[ds[len(ds)-1]]
		}
		start := len(r.deps)
		for _, d := range ds {
			if mark[d] == u+1 {
				continue
			}
			r.deps = append(r.deps, d)
			stack = append(stack[:0], d)
			for len(stack) > 0 {
				v := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				for _, w := range g.Deps(v) {
					if mark[w] != u+1 && g.level[w] >= minLevel {
						mark[w] = u + 1
						stack = append(stack, w)
					}
				}
			}
		}
		slices.Sort(r.deps[start:])
		r.depOff[u+1] = len(r.deps)
	}
	names := make([]string, len(r.deps))
	for k, j := range r.deps {
		names[k] = g.nodes[j].Name
	}
	for i := range r.nodes {
		r.nodes[i].Deps = names[r.depOff[i]:r.depOff[i+1]:r.depOff[i+1]]
	}
	r.finish()
	return r
}
