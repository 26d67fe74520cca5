package dag

import (
	"strconv"
	"strings"
)

// DOT renders the graph for Graphviz: one rank per batch, edges from each
// dependency to its dependents (the transitive reduction, so that
// `before: all` does not draw an edge to every node), the critical path in
// bold red. The output is deterministic.
func (g *Graph) DOT() string {
	critN, critE, crit := g.critical()
	red := g.TransitiveReduction()
	var b strings.Builder
	title := g.title()
	label := dotEscape(g.summary(crit))
	if title != "" {
		label = dotEscape(title) + "\\n" + label
	}
	b.WriteString("digraph hop {\n")
	b.WriteString("\tgraph [rankdir=LR, labelloc=t, fontname=\"Helvetica\", label=\"" + label + "\"];\n")
	b.WriteString("\tnode [shape=box, style=rounded, fontname=\"Helvetica\"];\n")
	b.WriteString("\tedge [color=\"#555555\"];\n")
	for l, batch := range g.levels {
		b.WriteString("\n\t// batch " + strconv.Itoa(l+1) + "\n")
		b.WriteString("\t{\n\t\trank=same;\n")
		for _, v := range batch {
			nd := &g.nodes[v]
			lines := labelLines(nd, "->")
			for i := range lines {
				lines[i] = dotEscape(lines[i])
			}
			b.WriteString("\t\t" + dotQuote(nd.Name) + " [label=\"" + strings.Join(lines, "\\n") + "\"")
			if critN[v] {
				b.WriteString(", color=\"" + critColor + "\", penwidth=2")
			}
			b.WriteString("];\n")
		}
		b.WriteString("\t}\n")
	}
	if red.NumEdges() > 0 {
		b.WriteString("\n")
	}
	for d := range red.nodes {
		for _, v := range red.Dependents(d) {
			b.WriteString("\t" + dotQuote(g.nodes[d].Name) + " -> " + dotQuote(g.nodes[v].Name))
			if critE[d*len(g.nodes)+v] {
				b.WriteString(" [color=\"" + critColor + "\", penwidth=2]")
			}
			b.WriteString(";\n")
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// dotQuote quotes s as a DOT string.
func dotQuote(s string) string { return `"` + dotEscape(s) + `"` }

// dotEscape escapes backslashes and quotes for a quoted DOT string.
func dotEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}
