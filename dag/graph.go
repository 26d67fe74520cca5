package dag

import (
	"slices"
	"strings"
	"time"

	"github.com/hopdag/hopdag/release"
)

// Node is one component of a hop's graph.
type Node struct {
	// Name is the component's name; it is unique in the graph.
	Name string
	// Deps are the direct dependencies kept in the graph, sorted: the
	// declared ones that change, those reached through chains of unchanged
	// components, and the `before: all` components.
	Deps []string
	// From is the version before the hop; nil when the component is new in
	// the to-release (or when the graph was built with New without it).
	From *release.ComponentVersion
	// To is the version after the hop; it may be nil only for graphs built
	// with New.
	To *release.ComponentVersion
	// Duration is the expected duration (To.ExpectedDuration when built from
	// releases), used by CriticalPath.
	Duration time.Duration
}

// Graph is an immutable, index-based DAG. Node indexes are 0..Len()-1 in
// name order. Build it with Build or New.
type Graph struct {
	nodes   []Node
	index   map[string]int
	depOff  []int // Deps(i) = deps[depOff[i]:depOff[i+1]]
	deps    []int
	rdepOff []int // Dependents(i) = rdeps[rdepOff[i]:rdepOff[i+1]]
	rdeps   []int
	level   []int   // level of each node
	levels  [][]int // subslices of one flat array

	from, to *release.Release
	removed  []release.ComponentRef
}

// New builds a graph from names and dependencies: the generic constructor,
// for callers (and tests) that have no catalog. Only Name, Deps, From, To
// and Duration of each node are read; nodes may come in any order, Deps in
// any order and with repeats. It adds no edges of its own (`before: all` is
// Build's business).
//
// It refuses empty and duplicate names (ErrDuplicateNode), and reports all
// at once: dependencies on names that are not nodes (*DependencyError,
// ErrMissingDependency), self-dependencies (ErrSelfDependency), and every
// cycle (*CycleError).
func New(nodes []Node) (*Graph, error) {
	n := len(nodes)
	g := &Graph{nodes: make([]Node, n), index: make(map[string]int, n)}
	sorted := true
	for i := 1; i < n; i++ {
		if nodes[i-1].Name >= nodes[i].Name {
			sorted = false
			break
		}
	}
	if sorted {
		copy(g.nodes, nodes)
	} else {
		perm := make([]int32, n)
		for i := range perm {
			perm[i] = int32(i)
		}
		slices.SortFunc(perm, func(a, b int32) int { return strings.Compare(nodes[a].Name, nodes[b].Name) })
		for i, p := range perm {
			g.nodes[i] = nodes[p]
		}
	}
	total := 0
	for i := range g.nodes {
		nd := &g.nodes[i]
		if nd.Name == "" {
			return nil, errorf(ErrDuplicateNode, "dag: a node has no name")
		}
		if i > 0 && g.nodes[i-1].Name == nd.Name {
			return nil, errorf(ErrDuplicateNode, "dag: node %s is listed twice", nd.Name)
		}
		g.index[nd.Name] = i
		total += len(nd.Deps)
	}

	// Resolve names once into one flat, per-node sorted and deduplicated
	// array; Node.Deps are views of one flat array of names.
	g.depOff = make([]int, n+1)
	g.deps = make([]int, 0, total)
	var bad []*DependencyError
	for i := range g.nodes {
		nd := &g.nodes[i]
		start := len(g.deps)
		for _, d := range nd.Deps {
			j, ok := g.index[d]
			switch {
			case !ok:
				bad = append(bad, &DependencyError{Component: nd.Name, Dependency: d, Err: ErrMissingDependency})
			case j == i:
				bad = append(bad, &DependencyError{Component: nd.Name, Dependency: d, Err: ErrSelfDependency})
			default:
				g.deps = append(g.deps, j)
			}
		}
		g.deps = append(g.deps[:start], sortUnique(g.deps[start:])...)
		g.depOff[i+1] = len(g.deps)
	}
	names := make([]string, len(g.deps))
	for k, j := range g.deps {
		names[k] = g.nodes[j].Name
	}
	for i := range g.nodes {
		g.nodes[i].Deps = names[g.depOff[i]:g.depOff[i+1]:g.depOff[i+1]]
	}

	var errs []error
	if len(bad) > 0 {
		sortDependencyErrors(bad)
		bad = slices.CompactFunc(bad, func(a, b *DependencyError) bool {
			return a.Component == b.Component && a.Dependency == b.Dependency
		})
		for _, e := range bad {
			errs = append(errs, e)
		}
	}
	if ordered := g.finish(); !ordered {
		errs = append(errs, g.cycles())
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return g, nil
}

// sortUnique sorts s in place and drops repeats. Dependency lists are
// mostly a handful of entries: those get an insertion sort.
func sortUnique(s []int) []int {
	if len(s) > 16 {
		slices.Sort(s)
		return slices.Compact(s)
	}
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	if len(s) < 2 {
		return s
	}
	k := 1
	for i := 1; i < len(s); i++ {
		if s[i] != s[k-1] {
			s[k] = s[i]
			k++
		}
	}
	return s[:k]
}

// Len returns the number of nodes.
func (g *Graph) Len() int { return len(g.nodes) }

// Node returns node i (0 <= i < Len()).
func (g *Graph) Node(i int) *Node { return &g.nodes[i] }

// Index returns the index of the named node.
func (g *Graph) Index(name string) (int, bool) {
	i, ok := g.index[name]
	return i, ok
}

// Names returns the node names in index order.
func (g *Graph) Names() []string {
	out := make([]string, len(g.nodes))
	for i := range g.nodes {
		out[i] = g.nodes[i].Name
	}
	return out
}

// Deps returns the direct dependencies of node i, ascending.
func (g *Graph) Deps(i int) []int { return g.deps[g.depOff[i]:g.depOff[i+1]:g.depOff[i+1]] }

// Dependents returns the direct dependents of node i, ascending.
func (g *Graph) Dependents(i int) []int {
	return g.rdeps[g.rdepOff[i]:g.rdepOff[i+1]:g.rdepOff[i+1]]
}

// NumEdges returns the number of dependency edges.
func (g *Graph) NumEdges() int { return len(g.deps) }

// Removed returns the components the from-release ships and the
// to-release does not, sorted by name: listed on the hop, not run.
func (g *Graph) Removed() []release.ComponentRef { return g.removed }

// Releases returns the releases the graph was built from (nil for New, and
// from is nil when Build was given none).
func (g *Graph) Releases() (from, to *release.Release) { return g.from, g.to }
