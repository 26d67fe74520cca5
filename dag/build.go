package dag

import (
	"errors"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/release"
)

// Option configures Build.
type Option func(*options)

type options struct {
	includeUnchanged bool
}

// IncludeUnchanged makes every component of the to-release a node, changed
// or not: a forced re-run. Dependencies then all stay direct.
func IncludeUnchanged() Option { return func(o *options) { o.includeUnchanged = true } }

// Build returns the graph of the hop from -> to: one node per component of
// to whose version differs from from's (a component from does not ship is
// new, and counts as changed; from may be nil, and then every component is
// new). Components from ships and to does not are listed by Removed.
//
// Edges come from the dependencies of to's ComponentVersions. A dependency
// on a component that does not change makes no node, but its own
// dependencies, followed through any chain of unchanged components, become
// dependencies instead, so the order is kept. Components with `before: all`
// that change are dependencies of every other node that is not itself
// `before: all`.
//
// Errors, all in one (errors.Join when there are several): every
// dependency on a component to does not ship and every self-dependency
// (*DependencyError), and every cycle of to's dependency graph, including
// cycles through unchanged components and those that `before: all` makes
// (*CycleError). A release that ships a component version the catalog lacks
// fails with ErrUnknownComponent, one that ships a component twice with
// ErrDuplicateNode.
func Build(c *release.Catalog, from, to *release.Release, opts ...Option) (*Graph, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if c == nil || to == nil {
		return nil, errors.New("dag: Build needs a catalog and a to-release")
	}
	f := newFull(to)
	errs := f.components(c, to)
	errs = append(errs, f.fromComponents(c, from, to)...)
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	f.mark(o.includeUnchanged)
	errs = f.edges()
	if err := f.cycles(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	g := f.graph(f.fronts(), from, to)
	if !g.finish() {
		panic("dag: internal error: cycle among changed components of an acyclic release")
	}
	return g, nil
}

// full is the graph of every component of a to-release, in name order,
// that Build takes the unchanged components out of. Its edges are in
// compressed form: the dependencies of i are adj[off[i]:off[i+1]].
type full struct {
	rel     string // the to-release, for errors
	refs    []release.ComponentRef
	cvs     []*release.ComponentVersion // to's, by index
	fromCVs []*release.ComponentVersion // from's, nil for a new component
	index   map[string]int
	removed []release.ComponentRef // shipped by from, not by to, by name
	active  []bool                 // changed (or forced): a node
	firsts  []int                  // active `before: all` components
	off     []int
	adj     []int
	order   []int // a dependency order of all components (all of them when acyclic)
}

// newFull returns the full graph of to's components, sorted by name,
// without versions or edges yet.
func newFull(to *release.Release) *full {
	refs := slices.Clone(to.Components)
	slices.SortStableFunc(refs, func(a, b release.ComponentRef) int { return strings.Compare(a.Name, b.Name) })
	n := len(refs)
	return &full{
		rel:     to.Version.Original(),
		refs:    refs,
		cvs:     make([]*release.ComponentVersion, n),
		fromCVs: make([]*release.ComponentVersion, n),
		index:   make(map[string]int, n),
	}
}

// components looks up the ComponentVersion of every component to ships.
// It returns one error per component shipped twice (ErrDuplicateNode) and
// per version the catalog lacks (ErrUnknownComponent).
func (f *full) components(c *release.Catalog, to *release.Release) []error {
	var errs []error
	for i, ref := range f.refs {
		if i > 0 && f.refs[i-1].Name == ref.Name {
			errs = append(errs, errorf(ErrDuplicateNode, "dag: release %s ships %s twice", f.rel, ref.Name))
			continue
		}
		cv, ok := c.Component(ref.Name, ref.Version)
		if !ok {
			errs = append(errs, errorf(ErrUnknownComponent, "dag: release %s ships %s %s, which the catalog does not have", f.rel, ref.Name, ref.Version))
			continue
		}
		f.cvs[i] = cv
		f.index[ref.Name] = i
	}
	return errs
}

// fromComponents looks up the ComponentVersion from ships of every
// component of to, and lists the components from ships and to does not.
// It returns one error per version the catalog lacks.
func (f *full) fromComponents(c *release.Catalog, from, to *release.Release) []error {
	if from == nil {
		return nil
	}
	var errs []error
	seen := map[string]bool{}
	for _, ref := range from.Components {
		if seen[ref.Name] {
			continue
		}
		seen[ref.Name] = true
		i, ok := f.index[ref.Name]
		if !ok {
			if _, shipped := to.Ships(ref.Name); !shipped {
				f.removed = append(f.removed, ref)
			}
			continue
		}
		cv, ok := c.Component(ref.Name, ref.Version)
		if !ok {
			errs = append(errs, errorf(ErrUnknownComponent, "dag: release %s ships %s %s, which the catalog does not have", from.Version, ref.Name, ref.Version))
			continue
		}
		f.fromCVs[i] = cv
	}
	slices.SortFunc(f.removed, func(a, b release.ComponentRef) int { return strings.Compare(a.Name, b.Name) })
	return errs
}

// mark sets which components are nodes: those whose version changes (or
// all, with includeUnchanged), and among them the `before: all` ones.
func (f *full) mark(includeUnchanged bool) {
	f.active = make([]bool, len(f.cvs))
	for i, cv := range f.cvs {
		f.active[i] = includeUnchanged || f.fromCVs[i] == nil || !f.fromCVs[i].Version.Equal(cv.Version)
		if f.active[i] && cv.RunsFirst() {
			f.firsts = append(f.firsts, i)
		}
	}
}

// edges sets the declared edges (i depends on j), plus the `before: all`
// ones, and returns every self-dependency and dependency on a component to
// does not ship (a *DependencyError each), sorted.
func (f *full) edges() []error {
	f.off = make([]int, len(f.cvs)+1)
	var bad []*DependencyError
	for i, cv := range f.cvs {
		start := len(f.adj)
		for _, d := range cv.Dependencies {
			j, ok := f.index[d]
			switch {
			case d == cv.Name:
				bad = append(bad, &DependencyError{Component: cv.Name, Dependency: d, Release: f.rel, Err: ErrSelfDependency})
			case !ok:
				bad = append(bad, &DependencyError{Component: cv.Name, Dependency: d, Release: f.rel, Err: ErrMissingDependency})
			default:
				f.adj = append(f.adj, j)
			}
		}
		if f.active[i] && !cv.RunsFirst() {
			f.adj = append(f.adj, f.firsts...)
		}
		f.adj = append(f.adj[:start], sortUnique(f.adj[start:])...)
		f.off[i+1] = len(f.adj)
	}
	sortDependencyErrors(bad)
	errs := make([]error, 0, len(bad))
	for _, e := range bad {
		errs = append(errs, e)
	}
	return errs
}

// cycles sets the dependency order and returns a *CycleError of every
// cycle when there is one (nil when there is none).
func (f *full) cycles() error {
	n := len(f.cvs)
	var ok bool
	f.order, ok = topoOrder(n, f.off, f.adj)
	if ok {
		return nil
	}
	names := make([]string, n)
	for i, r := range f.refs {
		names[i] = r.Name
	}
	candidate := make([]bool, n)
	for i := range candidate {
		candidate[i] = true
	}
	for _, v := range f.order {
		candidate[v] = false
	}
	return findCycles(names, f.off, f.adj, candidate)
}

// fronts returns, through unchanged components, front[u]: the set of
// changed components an unchanged u leads to (directly or through more
// unchanged ones), computed once per u in dependency order, so chains
// cost linear time, never exponential. A single source is shared, not
// copied.
func (f *full) fronts() [][]int {
	front := make([][]int, len(f.cvs))
	for _, u := range f.order {
		if !f.active[u] {
			front[u] = f.reach(front, u, nil, true)
		}
	}
	return front
}

// reach appends the changed components u leads to onto buf; with share
// it may instead return a front list itself, which must not be appended
// to.
func (f *full) reach(front [][]int, u int, buf []int, share bool) []int {
	var only []int
	sources := 0
	for _, d := range f.adj[f.off[u]:f.off[u+1]] {
		if f.active[d] {
			buf = append(buf, d)
			sources += 2
		} else if len(front[d]) > 0 {
			buf = append(buf, front[d]...)
			only = front[d]
			sources++
		}
	}
	if sources == 1 && share {
		return only
	}
	return sortUnique(buf)
}

// graph returns the graph of the changed components, not yet finished.
func (f *full) graph(front [][]int, from, to *release.Release) *Graph {
	pos := make([]int, len(f.active)) // full index -> node index (monotonic)
	var m int
	for i := range f.active {
		if f.active[i] {
			pos[i] = m
			m++
		}
	}
	g := &Graph{nodes: make([]Node, 0, m), index: make(map[string]int, m), depOff: make([]int, 1, m+1), from: from, to: to, removed: f.removed}
	var buf []int
	for i := range f.active {
		if !f.active[i] {
			continue
		}
		buf = f.reach(front, i, buf[:0], false)
		start := len(g.deps)
		for _, d := range buf {
			g.deps = append(g.deps, pos[d])
		}
		g.depOff = append(g.depOff, len(g.deps))
		deps := make([]string, 0, len(g.deps)-start)
		for _, d := range buf {
			deps = append(deps, f.refs[d].Name)
		}
		g.index[f.refs[i].Name] = len(g.nodes)
		g.nodes = append(g.nodes, Node{
			Name:     f.refs[i].Name,
			Deps:     deps,
			From:     f.fromCVs[i],
			To:       f.cvs[i],
			Duration: f.cvs[i].ExpectedDuration.Duration,
		})
	}
	return g
}
