package dag

import "time"

// CriticalPath returns the longest path by Duration, dependencies first,
// and its length: the lower bound on the makespan of any schedule, however
// parallel. Ties go to the path with more nodes, then to smaller indexes,
// so the answer is deterministic (and is the longest chain when no
// durations are known). An empty graph has no path.
func (g *Graph) CriticalPath() ([]int, time.Duration) {
	n := len(g.nodes)
	if n == 0 {
		return nil, 0
	}
	dist := make([]time.Duration, n)
	hops := make([]int, n)
	prev := make([]int, n)
	end := -1
	for _, batch := range g.levels {
		for _, v := range batch {
			best := -1
			for _, d := range g.Deps(v) {
				if best < 0 || dist[d] > dist[best] || (dist[d] == dist[best] && hops[d] > hops[best]) {
					best = d
				}
			}
			prev[v] = best
			dist[v], hops[v] = g.nodes[v].Duration, 1
			if best >= 0 {
				dist[v] += dist[best]
				hops[v] += hops[best]
			}
			if end < 0 || dist[v] > dist[end] || (dist[v] == dist[end] && (hops[v] > hops[end] || (hops[v] == hops[end] && v < end))) {
				end = v
			}
		}
	}
	path := make([]int, hops[end])
	for i, v := len(path)-1, end; v >= 0; i, v = i-1, prev[v] {
		path[i] = v
	}
	return path, dist[end]
}

// criticalNames is CriticalPath with names.
func (g *Graph) criticalNames() ([]string, time.Duration) {
	path, d := g.CriticalPath()
	out := make([]string, len(path))
	for i, v := range path {
		out[i] = g.nodes[v].Name
	}
	return out, d
}

// critical returns the critical path as node and edge sets (edge key:
// dep*n + dependent) and its length.
func (g *Graph) critical() (map[int]bool, map[int]bool, time.Duration) {
	path, d := g.CriticalPath()
	nodes := make(map[int]bool, len(path))
	edges := make(map[int]bool, len(path))
	for k, v := range path {
		nodes[v] = true
		if k > 0 {
			edges[path[k-1]*len(g.nodes)+v] = true
		}
	}
	return nodes, edges, d
}
