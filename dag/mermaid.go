package dag

import (
	"strconv"
	"strings"
)

// Mermaid renders the graph as a Mermaid flowchart: one subgraph per batch,
// edges from each dependency to its dependents (the transitive reduction),
// the critical path's nodes and edges in bold red. Node ids are n<index>.
// The output is deterministic.
func (g *Graph) Mermaid() string {
	critN, critE, crit := g.critical()
	red := g.TransitiveReduction()
	var b strings.Builder
	title := g.summary(crit)
	if t := g.title(); t != "" {
		title = t + ": " + title
	}
	b.WriteString("---\ntitle: " + strconv.Quote(strings.ReplaceAll(title, "->", "→")) + "\n---\nflowchart LR\n")
	for l, batch := range g.levels {
		id := strconv.Itoa(l + 1)
		b.WriteString("  subgraph batch" + id + " [\"batch " + id + "\"]\n    direction TB\n")
		for _, v := range batch {
			lines := labelLines(&g.nodes[v], "→")
			for i := range lines {
				lines[i] = mermaidEscape(lines[i])
			}
			b.WriteString("    n" + strconv.Itoa(v) + "[\"" + strings.Join(lines, "<br/>") + "\"]\n")
		}
		b.WriteString("  end\n")
	}
	var critLinks []string
	link := 0
	for d := range red.nodes {
		for _, v := range red.Dependents(d) {
			b.WriteString("  n" + strconv.Itoa(d) + " --> n" + strconv.Itoa(v) + "\n")
			if critE[d*len(g.nodes)+v] {
				critLinks = append(critLinks, strconv.Itoa(link))
			}
			link++
		}
	}
	if len(critN) > 0 {
		var ids []string
		for v := range g.nodes {
			if critN[v] {
				ids = append(ids, "n"+strconv.Itoa(v))
			}
		}
		b.WriteString("  classDef critical stroke:" + critColor + ",stroke-width:3px\n")
		b.WriteString("  class " + strings.Join(ids, ",") + " critical\n")
	}
	if len(critLinks) > 0 {
		b.WriteString("  linkStyle " + strings.Join(critLinks, ",") + " stroke:" + critColor + ",stroke-width:3px\n")
	}
	return b.String()
}

// mermaidEscape makes s safe inside a quoted Mermaid label.
func mermaidEscape(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;").Replace(s)
}
