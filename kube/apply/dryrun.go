package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// reasonDryRunNamespace is the Reason of a dry run's Created Change for an
// object in a namespace the same dry run creates.
const reasonDryRunNamespace = "its namespace is created by this dry run; not checked by the server"

// dryRunNamespaces is the set of the namespaces a dry-run Applier has
// reported Created (they do not exist, or are being deleted): an object
// in one of them cannot be dry-run applied, since the API server refuses
// content in a namespace that does not exist or is terminating. The set
// lives as long as the Applier, so that it holds for the later Applies of
// the same dry run: the next stage of one Apply, the next component, the
// next hop. Safe for concurrent use.
type dryRunNamespaces struct {
	mu    sync.Mutex
	names map[string]bool
}

func (s *dryRunNamespaces) add(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names == nil {
		s.names = map[string]bool{}
	}
	s.names[name] = true
}

func (s *dryRunNamespaces) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[name]
}

// namespaceRefused reports whether err is the API server refusing content
// in namespace ns because it does not exist, or because it is being
// deleted.
func namespaceRefused(err error, ns string) bool {
	return namespaceNotFound(err, ns) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// namespaceNotFound reports whether err is the API server's NotFound of
// namespace ns (its NamespaceLifecycle admission refusing content in a
// namespace that does not exist).
func namespaceNotFound(err error, ns string) bool {
	var se apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Group == "" && d.Kind == "namespaces" && d.Name == ns
}

// ComponentChanges is what a dry run of one manifest component reports.
type ComponentChanges struct {
	Component string
	Version   string
	Changes   ChangeSet
}

// DryRunHop is the plan's dry run against a cluster: it runs every manifest
// component of the hop, one at a time, dependencies first (the graph's
// levels, in name order within a level), through a
// components.Manifest (made with mopts) over one dry-run Applier (WithDryRun
// and opts), and returns what each would do to the cluster, per object
// created, configured, unchanged or pruned, in that order. Nothing is
// written, the inventories included. A namespace a component creates is
// known to the components after it (see WithDryRun). Only the plan's first
// hop shows the truth: a later hop starts from the cluster its
// predecessors leave. Components of other types are left out. Errors name
// the component; the components after a failed one are still dry-run.
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
	for _, i := range slices.Concat(h.Graph.Levels()...) {
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
