package dag

import (
	"strings"
	"time"

	"github.com/hopdag/hopdag/internal/english"
)

const critColor = "#d62728"

// title is "from -> to", "-> to" when from is nil, or "" for New graphs.
func (g *Graph) title() string {
	switch {
	case g.to == nil:
		return ""
	case g.from == nil:
		return "-> " + g.to.Version.Original()
	}
	return g.from.Version.Original() + " -> " + g.to.Version.Original()
}

// versions is "v1 -> v2", "v2 (new)", "v2 (re-run)" or "", with arrow
// between the versions.
func versions(nd *Node, arrow string) string {
	switch {
	case nd.To == nil && nd.From == nil:
		return ""
	case nd.To == nil:
		return nd.From.Version.Original() + " " + arrow
	case nd.From == nil:
		return nd.To.Version.Original() + " (new)"
	case nd.From.Version.Equal(nd.To.Version):
		return nd.To.Version.Original() + " (re-run)"
	}
	return nd.From.Version.Original() + " " + arrow + " " + nd.To.Version.Original()
}

// labelLines are the lines of a node's label: name, versions, duration.
func labelLines(nd *Node, arrow string) []string {
	lines := []string{nd.Name}
	if v := versions(nd, arrow); v != "" {
		lines = append(lines, v)
	}
	if nd.Duration > 0 {
		lines = append(lines, nd.Duration.String())
	}
	return lines
}

// summary is "7 components in 4 batches, critical path 11m35s".
func (g *Graph) summary(crit time.Duration) string {
	s := english.Count(len(g.nodes), "component") + " in " + english.Count(len(g.levels), "batch")
	if crit > 0 {
		s += ", critical path " + crit.String()
	}
	if len(g.removed) > 0 {
		var rs []string
		for _, r := range g.removed {
			rs = append(rs, r.Name+" "+r.Version.Original())
		}
		s += "; removed: " + strings.Join(rs, ", ")
	}
	return s
}
