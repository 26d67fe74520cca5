package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// ComponentChanges is what a dry run of one manifest component reports.
type ComponentChanges struct {
	Component string
	Version   string
	Changes   ChangeSet
}

// DryRunHop is the plan's dry run against a cluster: it runs every manifest
// component of the hop, in name order, through a
// components.Manifest (made with mopts) over a dry-run Applier (WithDryRun
// and opts), and returns what each would do to the cluster, per object
// created, configured, unchanged or pruned. Nothing is written, the
// inventories included. Only the plan's first hop shows the truth: a later
// hop starts from the cluster its predecessors leave. Components of other
// types are left out. Errors name the component; the components after a
// failed one are still dry-run.
func DryRunHop(ctx context.Context, cfg *rest.Config, h *runner.HopPlan, mopts []components.ManifestOption, opts ...Option) ([]ComponentChanges, error) {
	var cur ChangeSet
	a, err := New(cfg, append(opts, WithDryRun(), WithReporter(func(cs ChangeSet) { cur = append(cur, cs...) }))...)
	if err != nil {
		return nil, err
	}
	m := components.NewManifest(a, mopts...)
	var (
		out  []ComponentChanges
		errs []error
	)
	for i := range h.Graph.Len() {
		n := h.Graph.Node(i)
		if n.To == nil || n.To.Type != release.TypeManifest {
			continue
		}
		cur = nil
		err := m.Run(ctx, runner.Task{Hop: h, Component: n.Name, From: n.From, To: n.To, Attempt: 1})
		if err != nil {
			errs = append(errs, fmt.Errorf("apply: dry run of %s: %w", n.Name, err))
		}
		out = append(out, ComponentChanges{Component: n.Name, Version: n.To.Version.Original(), Changes: cur})
	}
	return out, errors.Join(errs...)
}

// FormatChanges prints a dry run: a "component version" line, then its
// changes indented.
func FormatChanges(ccs []ComponentChanges) string {
	var b strings.Builder
	for _, cc := range ccs {
		fmt.Fprintf(&b, "%s %s\n", cc.Component, cc.Version)
		for _, c := range cc.Changes {
			fmt.Fprintf(&b, "  %s\n", c)
		}
	}
	return b.String()
}
