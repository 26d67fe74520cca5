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
	rel := to.Version.Original()

	// The full graph: every component of to, in name order.
	n := len(to.Components)
	refs := slices.Clone(to.Components)
	slices.SortStableFunc(refs, func(a, b release.ComponentRef) int { return strings.Compare(a.Name, b.Name) })
	var errs []error
	cvs := make([]*release.ComponentVersion, n)
	index := make(map[string]int, n)
	for i, ref := range refs {
		if i > 0 && refs[i-1].Name == ref.Name {
			errs = append(errs, errorf(ErrDuplicateNode, "dag: release %s ships %s twice", rel, ref.Name))
			continue
		}
		cv, ok := c.Component(ref.Name, ref.Version)
		if !ok {
			errs = append(errs, errorf(ErrUnknownComponent, "dag: release %s ships %s %s, which the catalog does not have", rel, ref.Name, ref.Version))
			continue
		}
		cvs[i] = cv
		index[ref.Name] = i
	}
	fromCVs := make([]*release.ComponentVersion, n)
	var removed []release.ComponentRef
	if from != nil {
		seen := map[string]bool{}
		for _, ref := range from.Components {
			if seen[ref.Name] {
				continue
			}
			seen[ref.Name] = true
			i, ok := index[ref.Name]
			if !ok {
				if _, shipped := to.Ships(ref.Name); !shipped {
					removed = append(removed, ref)
				}
				continue
			}
			cv, ok := c.Component(ref.Name, ref.Version)
			if !ok {
				errs = append(errs, errorf(ErrUnknownComponent, "dag: release %s ships %s %s, which the catalog does not have", from.Version, ref.Name, ref.Version))
				continue
			}
			fromCVs[i] = cv
		}
		slices.SortFunc(removed, func(a, b release.ComponentRef) int { return strings.Compare(a.Name, b.Name) })
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	active := make([]bool, n)
	var firsts []int // active `before: all` components
	for i, cv := range cvs {
		active[i] = o.includeUnchanged || fromCVs[i] == nil || !fromCVs[i].Version.Equal(cv.Version)
		if active[i] && cv.RunsFirst() {
			firsts = append(firsts, i)
		}
	}

	// Declared edges (i depends on j), plus the `before: all` ones.
	off := make([]int, n+1)
	var adj []int
	var bad []*DependencyError
	for i, cv := range cvs {
		start := len(adj)
		for _, d := range cv.Dependencies {
			j, ok := index[d]
			switch {
			case d == cv.Name:
				bad = append(bad, &DependencyError{Component: cv.Name, Dependency: d, Release: rel, Err: ErrSelfDependency})
			case !ok:
				bad = append(bad, &DependencyError{Component: cv.Name, Dependency: d, Release: rel, Err: ErrMissingDependency})
			default:
				adj = append(adj, j)
			}
		}
		if active[i] && !cv.RunsFirst() {
			adj = append(adj, firsts...)
		}
		adj = append(adj[:start], sortUnique(adj[start:])...)
		off[i+1] = len(adj)
	}
	if len(bad) > 0 {
		sortDependencyErrors(bad)
		for _, e := range bad {
			errs = append(errs, e)
		}
	}
	order, ok := topoOrder(n, off, adj)
	if !ok {
		names := make([]string, n)
		for i, r := range refs {
			names[i] = r.Name
		}
		candidate := make([]bool, n)
		for i := range candidate {
			candidate[i] = true
		}
		for _, v := range order {
			candidate[v] = false
		}
		errs = append(errs, findCycles(names, off, adj, candidate))
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}

	// Through unchanged components: front[u] is the set of changed
	// components an unchanged u leads to (directly or through more
	// unchanged ones), computed once per u in dependency order, so chains
	// cost linear time, never exponential. A single source is shared, not
	// copied.
	front := make([][]int, n)
	// reach appends the changed components u leads to onto buf; with share
	// it may instead return a front list itself, which must not be
	// appended to.
	reach := func(u int, buf []int, share bool) []int {
		var only []int
		sources := 0
		for _, d := range adj[off[u]:off[u+1]] {
			if active[d] {
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
	for _, u := range order {
		if !active[u] {
			front[u] = reach(u, nil, true)
		}
	}

	// The graph of the changed components.
	pos := make([]int, n) // full index -> node index (monotonic)
	var m int
	for i := range active {
		if active[i] {
			pos[i] = m
			m++
		}
	}
	g := &Graph{nodes: make([]Node, 0, m), index: make(map[string]int, m), depOff: make([]int, 1, m+1), from: from, to: to, removed: removed}
	var buf []int
	for i := range active {
		if !active[i] {
			continue
		}
		buf = reach(i, buf[:0], false)
		start := len(g.deps)
		for _, d := range buf {
			g.deps = append(g.deps, pos[d])
		}
		g.depOff = append(g.depOff, len(g.deps))
		deps := make([]string, 0, len(g.deps)-start)
		for _, d := range buf {
			deps = append(deps, refs[d].Name)
		}
		g.index[refs[i].Name] = len(g.nodes)
		g.nodes = append(g.nodes, Node{
			Name:     refs[i].Name,
			Deps:     deps,
			From:     fromCVs[i],
			To:       cvs[i],
			Duration: cvs[i].ExpectedDuration.Duration,
		})
	}
	if !g.finish() {
		panic("dag: internal error: cycle among changed components of an acyclic release")
	}
	return g, nil
}
