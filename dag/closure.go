package dag

import "slices"

// Ancestors returns every node i depends on, directly or not, ascending.
func (g *Graph) Ancestors(i int) []int { return g.closure(i, g.depOff, g.deps) }

// Descendants returns every node that depends on i, directly or not,
// ascending.
func (g *Graph) Descendants(i int) []int { return g.closure(i, g.rdepOff, g.rdeps) }

func (g *Graph) closure(i int, off, adj []int) []int {
	seen := make([]bool, len(g.nodes))
	var out []int
	stack := []int{i}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range adj[off[v]:off[v+1]] {
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
				stack = append(stack, w)
			}
		}
	}
	slices.Sort(out)
	return out
}
