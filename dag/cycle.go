package dag

import (
	"strconv"
	"strings"

	"github.com/hopdag/hopdag/internal/cycles"
)

// CycleError reports every dependency cycle of a graph at once.
//
// There is one entry per strongly connected component, sorted by its first
// name. Each entry is a closed path along "depends on" edges that starts and
// ends at the component's smallest name and visits each of its members: a
// simple cycle a -> b -> c -> a is reported exactly so; a component made of
// several overlapping cycles is reported as one walk that may pass a node
// more than once (a -> b -> a -> c -> a). Removing any one dependency of a
// simple cycle breaks it.
//
// In Build, a changed `before: all` component counts as a dependency of
// every other changed component, so one that depends (even through
// unchanged components) on a component it must precede is reported as a
// cycle through that dependency: app -> setup -> app.
type CycleError struct {
	Cycles [][]string
}

// Error is like "dag: 2 cycles: a -> b -> c -> a; x -> y -> x".
func (e *CycleError) Error() string {
	var b strings.Builder
	b.WriteString("dag: ")
	b.WriteString(strconv.Itoa(len(e.Cycles)))
	if len(e.Cycles) == 1 {
		b.WriteString(" cycle: ")
	} else {
		b.WriteString(" cycles: ")
	}
	for i, c := range e.Cycles {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strings.Join(c, " -> "))
	}
	return b.String()
}

// Is reports whether target is ErrCycle.
func (e *CycleError) Is(target error) bool { return target == ErrCycle }

// cycles runs Tarjan on the nodes Kahn could not order.
func (g *Graph) cycles() *CycleError {
	names := make([]string, len(g.nodes))
	candidate := make([]bool, len(g.nodes))
	for i := range g.nodes {
		names[i] = g.nodes[i].Name
		candidate[i] = g.level[i] < 0
	}
	return findCycles(names, g.depOff, g.deps, candidate)
}

// findCycles returns a *CycleError for the graph given in compressed form
// (the successors of v are adj[off[v]:off[v+1]], ascending), restricted to
// the nodes with candidate[v] set (nodes Kahn could not order; nil means
// all). names[v] is v's name; indexes are in name order. It returns nil
// when there is no cycle. The walks come from internal/cycles, which the
// release package's validation uses too.
func findCycles(names []string, off, adj []int, candidate []bool) *CycleError {
	walks := cycles.Find(off, adj, candidate)
	if len(walks) == 0 {
		return nil
	}
	out := make([][]string, len(walks))
	for i, walk := range walks {
		path := make([]string, len(walk))
		for k, v := range walk {
			path[k] = names[v]
		}
		out[i] = path
	}
	return &CycleError{Cycles: out}
}
