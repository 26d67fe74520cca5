package main

import (
	"context"
	"fmt"

	"github.com/hopdag/hopdag/runner"
)

func (c *cli) newPlan() (*runner.Plan, error) {
	cat, err := c.catalog()
	if err != nil {
		return nil, err
	}
	p, err := c.planOf(cat)
	if p != nil {
		p.Catalog = c.bundle.source
	}
	return p, err
}

func (c *cli) plan(ctx context.Context) int {
	if code := c.outputIn("text", "json", "yaml"); code != exitOK {
		return code
	}
	if c.clusterGiven() && *c.output != "text" {
		return c.usageError("--kubeconfig and --context add the cluster dry run to the text plan: leave out -o " + *c.output)
	}
	p, err := c.newPlan()
	if err != nil {
		return c.fail1(err)
	}
	if *c.output != "text" {
		if err := c.print(kindPlan, p); err != nil {
			return c.fail1(err)
		}
	} else {
		fmt.Fprint(c.stdout, inlineNote(p)+p.String())
	}
	c.warnRun(p)
	if c.clusterGiven() {
		return c.planDryRun(ctx, p)
	}
	return exitOK
}
