package main

import (
	"context"
	"fmt"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/path"
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
		fmt.Fprintln(c.stdout, laterHops(p, *c.from, *c.to))
	}
	if err != nil {
		return c.fail1(err)
	}
	return exitOK
}

// laterHops says why plan's dry run stops at the first hop of p, a plan
// from --from to --to of several hops, and how to see the next one's: the
// later hops start from the cluster the first leaves, which no dry run
// changes (hopdag run --dry-run would show them against the cluster as it
// is), so hop 1 must run first (--until), then a plan from where it left
// the system dry-runs the next.
func laterHops(p *runner.Plan, from, to string) string {
	first := p.Hops[0]
	next := first.To.Original()
	if first.Track != "" {
		// Across tracks, --from is the whole state: hop 1 moves one track.
		st, err := path.ParseState(from)
		if err != nil {
			return fmt.Sprintf("Hops 2 to %d start from the cluster hop 1 leaves, which no dry run changes: run hop 1 (hopdag run with --until %s), then hopdag plan from the state it leaves dry-runs the next.", len(p.Hops), runner.StepName(first, "", ""))
		}
		st[first.Track] = first.To
		next = st.String()
	}
	which := fmt.Sprintf("Hops 2 to %d start", len(p.Hops))
	if len(p.Hops) == 2 {
		which = "Hop 2 (" + p.Hops[1].Name() + ") starts"
	}
	return fmt.Sprintf("%s from the cluster hop 1 leaves, which no dry run changes: run hop 1 (hopdag run with --until %s), then hopdag plan --from %s --to %s dry-runs the next.",
		which, runner.StepName(first, "", ""), next, to)
}
