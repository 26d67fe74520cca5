package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// The runners of a real run (hopdag run without --simulate): what runs
// exec, manifest and helm components and the hop checks.

// router returns the runners of a real run: exec components run as
// commands, manifest components go through --apply-dir's Dir applier or
// the Kubernetes applier, helm components through kube/helm on the
// cluster of --kubeconfig. What it cannot run (inline components, a
// manifest without an applier, a type without a runner, hop checks) is
// refused here, before anything runs, all at once.
func (c *cli) router(plan *runner.Plan, values map[string]any) (*components.Router, error) {
	byType := map[string][]string{}
	handlers := map[string]bool{}
	checks := map[string]bool{}
	var helms []*release.ComponentVersion
	for _, h := range plan.Hops {
		for i := 0; i < h.Graph.Len(); i++ {
			n := h.Graph.Node(i)
			if n.To == nil {
				continue
			}
			byType[n.To.Type] = append(byType[n.To.Type], n.To.Name+" "+n.To.Version.Original())
			if n.To.Type == release.TypeInline {
				handlers[n.To.Handler] = true
			}
			if n.To.Type == release.TypeHelm {
				helms = append(helms, n.To)
			}
		}
		for _, ch := range slices.Concat(h.PreChecks, h.PostChecks) {
			if _, ok := c.rf.checks[ch.Name]; !ok {
				checks[ch.Name] = true
			}
		}
	}
	var problems []string
	if names := byType[release.TypeInline]; len(names) > 0 {
		problems = append(problems, fmt.Sprintf("inline %s %s %s Go %s: a Go program must register %s (%s); see below",
			plural(len(names), "component"), list(names), choose(len(names), "is a", "are"), plural(len(names), "function"),
			choose(len(handlers), "its handler", "their handlers"), list(slices.Sorted(maps.Keys(handlers)))))
	}
	if names := byType[release.TypeExec]; len(names) > 0 && c.rf.isDryRun() {
		problems = append(problems, fmt.Sprintf("exec %s %s: a command has no dry run, and --dry-run must change nothing; use hopdag plan to see what would run",
			plural(len(names), "component"), list(names)))
	}
	execRunner, err := c.execRunner(values)
	if err != nil {
		return nil, err
	}
	router := components.NewRouter().Register(release.TypeExec, execRunner)
	if names := byType[release.TypeManifest]; len(names) > 0 {
		applier, err := c.applier()
		if err != nil {
			problems = append(problems, fmt.Sprintf("manifest %s %s: %v", plural(len(names), "component"), list(names), err))
		} else {
			router.Register(release.TypeManifest, components.NewManifest(applier, manifestOptions(values, *c.rf.instance, *c.rf.forceConflicts)...))
		}
	}
	if names := byType[release.TypeHelm]; len(names) > 0 {
		if p := c.helmProblem(helms, names); p != "" {
			problems = append(problems, p)
		} else if h, err := c.kube.Helm(c.kubeConfig(), c.dir, values); err != nil {
			problems = append(problems, fmt.Sprintf("helm %s %s: %v", plural(len(names), "component"), list(names), err))
		} else {
			router.Register(release.TypeHelm, h)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(byType)) {
		if t != release.TypeInline && t != release.TypeManifest && t != release.TypeExec && t != release.TypeHelm {
			problems = append(problems, fmt.Sprintf("%s %s: the command line has no runner for type %q; run them from a Go program that registers one (components.Router.Register)",
				plural(len(byType[t]), "component"), list(byType[t]), t))
		}
	}
	if len(checks) > 0 {
		names := slices.Sorted(maps.Keys(checks))
		problems = append(problems, fmt.Sprintf("hop %s %s %s no implementation: give %s as a command (--check NAME=COMMAND), or run the plan from a Go program that registers %s (runner.WithCheck)",
			plural(len(names), "check"), list(names), choose(len(names), "has", "have"), choose(len(names), "it", "each"), choose(len(names), "it", "them")))
	}
	if len(problems) == 0 {
		return router, nil
	}
	msg := "this plan cannot run from the command line:\n  " + strings.Join(problems, "\n  ")
	if len(byType[release.TypeInline]) > 0 {
		msg += "\n" + embedding(slices.Sorted(maps.Keys(handlers)))
	}
	return nil, errors.New(msg)
}

// embedding is the Go program that runs what the command line cannot.
func embedding(handlers []string) string {
	h := "my-handler"
	if len(handlers) > 0 {
		h = handlers[0]
	}
	return fmt.Sprintf(`Embed the library instead (see examples/embedded and the README):

	inline := components.NewInline().Register(%q, myUpgrade) // a runner.Runner per handler
	router := components.NewRouter().Register(release.TypeInline, inline).
		Register(release.TypeExec, components.NewExec())
	exec := runner.New(router, runner.WithCheck("cluster-healthy", myCheck))
	catalog, _ := release.LoadDir("my-catalog")
	plan, err := runner.NewPlan(catalog, from, to, runner.ForExecutor(exec))
	// ... handle err, then, with the status in a directory:
	store, err := state.OpenFile("my-upgrade-state")
	status, err := state.Run(ctx, store, store, exec, plan)`, h)
}

// forceConflictsUsage is --force-conflicts of run and plan.
const forceConflictsUsage = "with a cluster: manifest components take over the fields of their objects that another field manager owns (server-side apply with force, as kubectl apply --server-side --force-conflicts); without it such a field fails the component, naming its manager"

// manifestOptions are the options of the manifest runner of run and of
// plan's dry run: the --set values, the --instance, and with
// --force-conflicts every apply forced (components.ApplyOptions.Force).
func manifestOptions(values map[string]any, instance string, force bool) []components.ManifestOption {
	opts := []components.ManifestOption{components.WithValues(values), components.WithInstance(instance)}
	if force {
		opts = append(opts, components.WithApplyOptions(components.ApplyOptions{Force: true}))
	}
	return opts
}

// applier returns the Applier of manifest components.
func (c *cli) applier() (components.Applier, error) {
	if dir := *c.rf.applyDir; dir != "" {
		return components.NewDir(dir, components.WithTakeOver(*c.rf.takeOver)), nil
	}
	if c.kube.Applier == nil {
		return nil, errors.New("this hopdag has no Kubernetes applier (kube/apply); pass --apply-dir DIR to write their objects to files, or --simulate")
	}
	return c.kube.Applier(c.kubeConfig())
}

// helmProblem says why the helm components names (helms) cannot run here,
// or "": they need a cluster (not --apply-dir), have no dry run, and a
// chart given as a path needs the catalog to be a directory (the path is
// relative to it).
func (c *cli) helmProblem(helms []*release.ComponentVersion, names []string) string {
	what := fmt.Sprintf("helm %s %s", plural(len(names), "component"), list(names))
	switch {
	case c.kube.Helm == nil:
		return what + ": this hopdag has no Helm runner (kube/helm); run them from a Go program that registers one"
	case c.rf.isDryRun():
		return what + ": Helm releases have no server-side dry run here, and --dry-run must change nothing; use hopdag plan to see what would run"
	case *c.rf.applyDir != "":
		return what + ": a Helm release needs a cluster (--kubeconfig, --context), not --apply-dir"
	}
	if fi, err := os.Stat(c.dir); c.dir != "-" && err == nil && fi.IsDir() {
		return ""
	}
	var local []string
	for _, cv := range helms {
		if h := cv.Helm; h != nil && h.Repo == "" && !strings.HasPrefix(h.Chart, "oci://") && !filepath.IsAbs(h.Chart) {
			local = append(local, cv.Name+" "+cv.Version.Original()+" ("+h.Chart+")")
		}
	}
	if len(local) > 0 {
		return fmt.Sprintf("helm %s %s: a chart path is relative to the catalog directory, and %s is not one; give the chart as oci:// or a repository chart, or run from the catalog directory",
			plural(len(local), "component"), list(local), c.dir)
	}
	return ""
}

func list(names []string) string {
	const most = 6
	if len(names) > most {
		return strings.Join(names[:most], ", ") + fmt.Sprintf(" and %d more", len(names)-most)
	}
	return strings.Join(names, ", ")
}

// checkFuncs runs each --check command through the exec runner (under the
// guard) as a pseudo-component named after the check, with HOPDAG_CHECK,
// HOPDAG_CHECK_STAGE and HOPDAG_HOP in its environment.
func (c *cli) checkFuncs(values map[string]any) ([]runner.Option, error) {
	if len(c.rf.checks) == 0 {
		return nil, nil
	}
	x, err := c.execRunner(values)
	if err != nil {
		return nil, err
	}
	var opts []runner.Option
	for _, name := range slices.Sorted(maps.Keys(c.rf.checks)) {
		command := c.rf.checks[name]
		opts = append(opts, runner.WithCheck(name, func(ctx context.Context, ct runner.CheckTask) error {
			cv := &release.ComponentVersion{Name: name, Type: release.TypeExec, Command: &release.Command{
				Args: []string{"sh", "-c", command},
				Env:  map[string]string{"HOPDAG_CHECK": name, "HOPDAG_CHECK_STAGE": ct.Stage},
			}}
			return x.Run(ctx, runner.Task{Hop: ct.Hop, HopIndex: ct.HopIndex, Component: name, To: cv, Attempt: 1, Logger: ct.Logger})
		}))
	}
	return opts, nil
}
