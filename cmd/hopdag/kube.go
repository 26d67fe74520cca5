package main

import (
	"context"
	"io"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/runner"
)

// kubeConfig says which cluster: --kubeconfig and --context (empty: the
// usual resolution, $KUBECONFIG then ~/.kube/config, and its current
// context), whether applies are server-side dry runs (--dry-run), and
// where the applier prints what it did to each object (run's stdout; nil:
// nowhere).
type kubeConfig struct {
	Kubeconfig string
	Context    string
	DryRun     bool
	TakeOver   bool // apply.WithTakeOver (--take-over)
	Report     io.Writer
}

// kubeWiring is what needs a Kubernetes client: the seam where the kube
// module plugs in. kube/apply gives Applier (server-side apply, prune from
// the inventory, kstatus readiness; DryRun as a server-side dry run) and
// kube/store gives Store (kube://namespace/name), kube/helm gives Helm (the
// runner of helm components; chartRoot is the directory local chart paths
// are relative to). A nil func means this build has none, and the flags
// that need it say so.
type kubeWiring struct {
	Applier func(cfg kubeConfig) (components.Applier, error)
	// DryRun is the plan's dry run of hop h against the cluster: what each
	// manifest component would do to each object, as text.
	DryRun func(ctx context.Context, cfg kubeConfig, h *runner.HopPlan, mopts []components.ManifestOption) (string, error)
	Store  func(cfg kubeConfig, namespace, name string) (*backend, error)
	Helm   func(cfg kubeConfig, chartRoot string, values map[string]any) (runner.Runner, error)
}

// builtinKube is the wiring of this build (kube_wiring.go): kube/apply's
// Applier, kube/store for kube://namespace/name state, and kube/helm.
func builtinKube() kubeWiring {
	return kubeWiring{Applier: newKubeApplier, DryRun: dryRunHop, Store: newKubeStore, Helm: newHelmRunner}
}

// kubeFlags are the flags that say which cluster (run, status, abandon).
type kubeFlags struct {
	kubeconfig *string
	context    *string
}

func (c *cli) kubeFlags() {
	c.kf = &kubeFlags{
		kubeconfig: c.fs.String("kubeconfig", "", "kubeconfig of the cluster for manifest components and kube:// state (default: $KUBECONFIG, then ~/.kube/config)"),
		context:    c.fs.String("context", "", "kubeconfig context (default: the current one)"),
	}
}

func (c *cli) kubeConfig() kubeConfig {
	cfg := kubeConfig{Kubeconfig: *c.kf.kubeconfig, Context: *c.kf.context}
	if c.rf != nil {
		cfg.DryRun, cfg.TakeOver = c.rf.isDryRun(), *c.rf.takeOver
		cfg.Report = c.stdout
	}
	return cfg
}
