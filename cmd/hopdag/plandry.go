package main

import (
	"context"
	"fmt"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// planFlags: a plan given a cluster (--kubeconfig or --context) ends with
// the server-side dry run of its first hop's manifest components, with the
// values (--set), the installation (--instance) and the forcing
// (--force-conflicts) a run would use.
type planFlags struct {
	instance       *string
	forceConflicts *bool
}

func (c *cli) planFlags() {
	c.pf = &planFlags{
		instance:       c.fs.String("instance", components.DefaultInstance, "with a cluster: the installation, as hopdag run's --instance (what the dry run would prune is this installation's)"),
		forceConflicts: c.fs.Bool("force-conflicts", false, forceConflictsUsage),
	}
	c.addSetFlag("template values (.Values.KEY), as hopdag run's: the commands and manifests render with them to check what run would refuse, and with a cluster the dry run's manifests")
	c.kubeFlags()
}

// clusterGiven reports whether the command line names a cluster.
func (c *cli) clusterGiven() bool {
	return c.kf != nil && (*c.kf.kubeconfig != "" || *c.kf.context != "")
}

// planDryRun prints what the plan's first hop would do to the cluster,
// object by object: the truth only for that hop (a later hop starts from
// the cluster the earlier ones leave), so the others are named, not
// guessed at.
func (c *cli) planDryRun(ctx context.Context, p *runner.Plan) int {
	if c.kube.DryRun == nil {
		return c.fail1(fmt.Errorf("this hopdag has no Kubernetes applier: it cannot dry-run against a cluster"))
	}
	if msg := checkInstance(*c.pf.instance); msg != "" {
		return c.usageError(msg)
	}
	values, err := c.withCatalogValue(c.set.values)
	if err != nil {
		return c.fail1(err)
	}
	if len(p.Hops) == 0 {
		fmt.Fprintln(c.stdout, "\nDry run: no hop, nothing to apply.")
		return exitOK
	}
	h := p.Hops[0]
	manifests := 0
	for i := range h.Graph.Len() {
		if n := h.Graph.Node(i); n.To != nil && n.To.Type == release.TypeManifest {
			manifests++
		}
	}
	fmt.Fprintf(c.stdout, "\nDry run of hop 1 (%s) against the cluster: server-side, nothing is written.\n", h.Name())
	if manifests == 0 {
		fmt.Fprintln(c.stdout, "  no manifest component changes in this hop")
	}
	out, err := c.kube.DryRun(ctx, c.kubeConfig(), h, manifestOptions(values, *c.pf.instance, *c.pf.forceConflicts))
	fmt.Fprint(c.stdout, out)
	if len(p.Hops) > 1 {
		fmt.Fprintf(c.stdout, "Hops 2 to %d start from the cluster hop 1 leaves: run them with hopdag run --dry-run, hop by hop (--until), to see theirs.\n", len(p.Hops))
	}
	if err != nil {
		return c.fail1(err)
	}
	return exitOK
}
