package dag

import "slices"

// finish builds the dependents lists and the Kahn levels from nodes, depOff
// and deps. It reports false when some nodes could not be ordered (a
// cycle); level then holds -1 for them and levels is unset.
func (g *Graph) finish() bool {
	n := len(g.nodes)
	// Dependents, by counting: filling in ascending i keeps each list sorted.
	g.rdepOff = make([]int, n+1)
	for _, d := range g.deps {
		g.rdepOff[d+1]++
	}
	for i := 0; i < n; i++ {
		g.rdepOff[i+1] += g.rdepOff[i]
	}
	g.rdeps = make([]int, len(g.deps))
	pos := make([]int, n) // reused below as the Kahn queue
	copy(pos, g.rdepOff[:n])
	for i := 0; i < n; i++ {
		for _, d := range g.deps[g.depOff[i]:g.depOff[i+1]] {
			g.rdeps[pos[d]] = i
			pos[d]++
		}
	}

	// Kahn: level[v] = 1 + max level of its deps. pending counts the deps
	// not yet ordered.
	g.level = make([]int, n)
	pending := g.level
	queue := pos[:0]
	for i := 0; i < n; i++ {
		pending[i] = g.depOff[i+1] - g.depOff[i]
		if pending[i] == 0 {
			queue = append(queue, i)
		}
	}
	// pending and level share storage: a node's count has reached 0 by the
	// time it is dequeued and its level written, and its dependents, the
	// only ones to decrement it, are all still pending.
	maxLevel := 0
	for h := 0; h < len(queue); h++ {
		u := queue[h]
		lu := 0
		for _, d := range g.deps[g.depOff[u]:g.depOff[u+1]] {
			if l := g.level[d] + 1; l > lu {
				lu = l
			}
		}
		g.level[u] = lu
		if lu > maxLevel {
			maxLevel = lu
		}
		for _, v := range g.rdeps[g.rdepOff[u]:g.rdepOff[u+1]] {
			pending[v]--
			if pending[v] == 0 {
				queue = append(queue, v)
			}
		}
	}
	if len(queue) < n {
		// Mark the unordered nodes for the cycle search.
		done := make([]bool, n)
		for _, u := range queue {
			done[u] = true
		}
		for i := range g.level {
			if !done[i] {
				g.level[i] = -1
			}
		}
		return false
	}

	// Bucket by level in ascending index order: each batch comes out sorted.
	if n == 0 {
		return true
	}
	count := make([]int, maxLevel+2)
	for _, l := range g.level {
		count[l+1]++
	}
	for l := 0; l <= maxLevel; l++ {
		count[l+1] += count[l]
	}
	flat := queue[:n] // the queue is spent; reuse its storage
	fill := slices.Clone(count[:maxLevel+1])
	for i, l := range g.level {
		flat[fill[l]] = i
		fill[l]++
	}
	g.levels = make([][]int, maxLevel+1)
	for l := range g.levels {
		g.levels[l] = flat[count[l]:count[l+1]:count[l+1]]
	}
	return true
}

// Level returns the batch of node i: 0 when it has no dependencies, else
// 1 + the largest level of its dependencies.
func (g *Graph) Level(i int) int { return g.level[i] }

// Levels returns the Kahn batches: batch k holds the nodes of level k,
// sorted by name (== by index). Every dependency of a node is in an earlier
// batch. An empty graph has no batches.
func (g *Graph) Levels() [][]int { return g.levels }

// topoOrder returns the nodes in Kahn order (dependencies first) for the
// graph where v depends on adj[off[v]:off[v+1]], and whether every node was
// ordered; when not, the ordered prefix is returned.
func topoOrder(n int, off, adj []int) ([]int, bool) {
	roff := make([]int, n+1)
	for _, d := range adj {
		roff[d+1]++
	}
	for i := 0; i < n; i++ {
		roff[i+1] += roff[i]
	}
	radj := make([]int, len(adj))
	fill := slices.Clone(roff[:n])
	pending := make([]int, n)
	queue := make([]int, 0, n)
	for v := 0; v < n; v++ {
		for _, d := range adj[off[v]:off[v+1]] {
			radj[fill[d]] = v
			fill[d]++
		}
		pending[v] = off[v+1] - off[v]
		if pending[v] == 0 {
			queue = append(queue, v)
		}
	}
	for h := 0; h < len(queue); h++ {
		for _, v := range radj[roff[queue[h]]:roff[queue[h]+1]] {
			pending[v]--
			if pending[v] == 0 {
				queue = append(queue, v)
			}
		}
	}
	return queue, len(queue) == n
}
