package main

// graph draws one hop's component graph: Mermaid, DOT, or a Graph
// document (-o json|yaml) whose nodes name their dependencies.

import (
	"context"
	"fmt"
)

func (c *cli) graph(context.Context) int {
	if code := c.outputIn("mermaid", "dot", "json", "yaml"); code != exitOK {
		return code
	}
	p, err := c.newPlan()
	if err != nil {
		return c.fail1(err)
	}
	if *c.hop < 1 || *c.hop > len(p.Hops) {
		return c.fail1(fmt.Errorf("--hop %d: the plan has %d %s", *c.hop, len(p.Hops), plural(len(p.Hops), "hop")))
	}
	g := p.Hops[*c.hop-1].Graph
	switch *c.output {
	case "dot":
		fmt.Fprint(c.stdout, g.DOT())
	case "json", "yaml":
		if err := c.print(kindGraph, g); err != nil {
			return c.fail1(err)
		}
	default:
		fmt.Fprint(c.stdout, g.Mermaid())
	}
	return exitOK
}
