package release

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/internal/cycles"
	"github.com/hopdag/hopdag/internal/english"
)

// validateCycles reports the dependency cycles among the components each
// release ships, with the file:line of every ComponentVersion on the cycle.
// A cycle is found with internal/cycles, as the dag package finds it when
// it builds a plan, so the walk is the same: it starts at the smallest
// component name and takes the smallest unvisited dependency first. A
// cycle that several releases ship (the same component versions) is
// reported once, naming the first release and how many more ship it.
//
// Cost: linear in the releases' components and dependencies.
func validateCycles(c *Catalog, sn *specNodes, ps *problems) {
	if !nameCycles(c) {
		return // no release can have a cycle
	}
	type found struct {
		walk     []*ComponentVersion
		release  *Release
		releases int
	}
	var order []string
	seen := map[string]*found{}
	var (
		names []string
		cvs   []*ComponentVersion
		off   []int
		adj   []int
		index = map[string]int{}
	)
	for ri := range c.Releases {
		r := &c.Releases[ri]
		names, cvs = names[:0], cvs[:0]
		clear(index)
		for _, ref := range r.Components {
			if _, dup := index[ref.Name]; dup {
				continue
			}
			cv, ok := c.Component(ref.Name, ref.Version)
			if !ok {
				continue
			}
			index[ref.Name] = -1
			names = append(names, ref.Name)
			cvs = append(cvs, cv)
		}
		if len(names) < 2 {
			continue
		}
		// Number the components in name order, as dag does.
		perm := make([]int, len(names))
		for i := range perm {
			perm[i] = i
		}
		slices.SortFunc(perm, func(a, b int) int { return strings.Compare(names[a], names[b]) })
		sorted := make([]*ComponentVersion, len(perm))
		for i, p := range perm {
			sorted[i] = cvs[p]
			index[names[p]] = i
		}
		off = append(off[:0], 0)
		adj = adj[:0]
		for _, cv := range sorted {
			start := len(adj)
			for _, d := range cv.Dependencies {
				if j, ok := index[d]; ok && d != cv.Name {
					adj = append(adj, j)
				}
			}
			slices.Sort(adj[start:])
			adj = append(adj[:start], slices.Compact(adj[start:])...)
			off = append(off, len(adj))
		}
		for _, walk := range cycles.Find(off, adj, nil) {
			path := make([]*ComponentVersion, len(walk))
			keys := make([]string, len(walk))
			for i, v := range walk {
				path[i] = sorted[v]
				keys[i] = sorted[v].Key()
			}
			key := strings.Join(keys, " ")
			if f, ok := seen[key]; ok {
				f.releases++
				continue
			}
			seen[key] = &found{walk: path, release: r, releases: 1}
			order = append(order, key)
		}
	}
	for _, key := range order {
		f := seen[key]
		var b strings.Builder
		for i, cv := range f.walk {
			if i > 0 {
				b.WriteString(" -> ")
			}
			b.WriteString(cv.Name + " " + cv.Version.Original())
			if cv.Source.File != "" {
				b.WriteString(" (" + cv.Source.String() + ")")
			}
		}
		more := ""
		if f.releases > 1 {
			more = fmt.Sprintf(" and %d more %s", f.releases-1, english.Plural(f.releases-1, "release"))
		}
		// The problem is at the first dependency of the cycle.
		first, next := f.walk[0], f.walk[1]
		p := sn.at(first.Source, "dependencies", slices.Index(first.Dependencies, next.Name))
		ps.add(p.with(
			fmt.Sprintf("dependency cycle: %s (in release %s%s)", b.String(), f.release.Version, more),
			"remove one of the dependencies on the cycle (each is in spec.dependencies of the component before it)"))
	}
}

// nameCycles reports whether the graph of component names, with an edge
// for every dependency any version declares, has a cycle. A release's
// dependency graph is a subgraph of it, so when it has none, no release
// has one, and the releases need not be checked one by one.
func nameCycles(c *Catalog) bool {
	index := map[string]int{}
	var names []string
	for i := range c.Components {
		if _, ok := index[c.Components[i].Name]; !ok {
			index[c.Components[i].Name] = len(names)
			names = append(names, c.Components[i].Name)
		}
	}
	succ := make([][]int, len(names))
	for i := range c.Components {
		cv := &c.Components[i]
		from := index[cv.Name]
		for _, d := range cv.Dependencies {
			if j, ok := index[d]; ok && j != from {
				succ[from] = append(succ[from], j)
			}
		}
	}
	off := make([]int, 1, len(names)+1)
	var adj []int
	for _, s := range succ {
		slices.Sort(s)
		adj = append(adj, slices.Compact(s)...)
		off = append(off, len(adj))
	}
	return len(cycles.Find(off, adj, nil)) > 0
}

// validateBeforeAll reports a `before: all` component that depends on a
// component of its release that does not run first: every such component
// depends on it (dag adds those edges), so the dependency closes a cycle
// whenever both change in a hop. Any path from a component that runs
// first to one that does not has such an edge, so direct dependencies are
// all there is to check. Each is reported at the ComponentVersion, the
// same for every release that ships the two, so it is listed once. Like
// validateCycles it is Load's: a catalog built in code meets it in dag.
func validateBeforeAll(c *Catalog, sn *specNodes, ps *problems) {
	firsts := false
	for i := range c.Components {
		firsts = firsts || (c.Components[i].RunsFirst() && len(c.Components[i].Dependencies) > 0)
	}
	if !firsts {
		return
	}
	shipped := map[string]*ComponentVersion{}
	for ri := range c.Releases {
		r := &c.Releases[ri]
		clear(shipped)
		for _, ref := range r.Components {
			if cv, ok := c.Component(ref.Name, ref.Version); ok {
				shipped[ref.Name] = cv
			}
		}
		for _, cv := range shipped {
			if !cv.RunsFirst() {
				continue
			}
			for k, d := range cv.Dependencies {
				if dep, ok := shipped[d]; ok && !dep.RunsFirst() && !sn.badField(dep.Source, "before") {
					ps.add(sn.at(cv.Source, "dependencies", k).with(
						fmt.Sprintf("component %s %s runs before all others (before: all) but depends on %s, which does not: %s runs after %s and %s before it, a dependency cycle whenever both change in a hop", cv.Name, cv.Version, d, d, cv.Name, cv.Name),
						fmt.Sprintf("remove %s from spec.dependencies, or give %s before: all too", d, d)))
				}
			}
		}
	}
}
