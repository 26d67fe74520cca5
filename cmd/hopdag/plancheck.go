package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// runRefusal is why hopdag run would refuse p at its plan step, or nil:
// plan is the dry run of any executor (a Go program may run inline
// components, register checks and rollback), so it only warns. It checks p
// as run's plan step does (runner.Executor.Validate: a runner for every
// component, their templates, the objects two manifest components render,
// what a rollback needs), with the command line's runners: exec, manifest
// (through any applier), helm, and every hop check given (--check).
//
// The templates render with values: --set, and .Values.catalog as run
// sets it. Without --set, on a catalog whose templates read values, the
// problems of templates and of shared objects (the objects of a component
// that does not render are not compared) depend on the --set of the run,
// so they are left out (a rollback command's template too); those no flag
// of run changes (a component type without a runner, a rollback the
// components cannot do) are always kept.
func (c *cli) runRefusal(p *runner.Plan) error {
	values, err := c.withCatalogValue(c.set.values)
	if err != nil {
		return err
	}
	router := components.NewRouter().Register(release.TypeExec, components.NewExec(components.WithExecValues(values))).
		Register(release.TypeManifest, components.NewManifest(components.NewDir(os.TempDir()), components.WithValues(values))).
		Register(release.TypeHelm, helmAtPlan{})
	var opts []runner.Option
	for _, h := range p.Hops {
		for _, ch := range slices.Concat(h.PreChecks, h.PostChecks) {
			opts = append(opts, runner.WithCheck(ch.Name, func(context.Context, runner.CheckTask) error { return nil }))
		}
	}
	err = runner.New(router, opts...).Validate(p)
	if err == nil {
		return nil
	}
	problems := flatten(err)
	withValues := c.set.values != nil || !slices.ContainsFunc(problems, readsMissingValue)
	var kept []error
	for _, e := range problems {
		byValues := errors.Is(e, components.ErrTemplate) || errors.Is(e, components.ErrSharedObject)
		nr, ok := errors.AsType[*components.NotRegisteredError](e)
		if ok && nr.Kind == "type" && nr.Name == release.TypeInline {
			// Said once, in the plan's header (inlineNote).
			continue
		}
		if ok || withValues && byValues ||
			errors.Is(e, runner.ErrCannotRollBack) && (withValues || !readsMissingValue(e)) {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return errors.Join(kept...)
}

// readsMissingValue reports whether the problem e is (or holds) a template
// reading a value that is not set.
func readsMissingValue(e error) bool {
	return errors.Is(e, components.ErrTemplate) && missingValueAnywhere.MatchString(e.Error())
}

// helmAtPlan stands for kube/helm at plan time: the command line runs
// helm components and Helm rolls them back; whether a chart resolves is
// run's plan step (it needs Helm's cache and the network).
type helmAtPlan struct{}

func (helmAtPlan) Run(context.Context, runner.Task) error {
	return errors.New("hopdag plan runs nothing")
}

func (helmAtPlan) Rollback(context.Context, runner.Task) error {
	return errors.New("hopdag plan runs nothing")
}

// flatten is the problems of Validate's error: ErrInvalidPlan wrapped
// with the errors.Join of the problems.
func flatten(err error) []error {
	var out []error
	if w, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range w.Unwrap() {
			if j, ok := e.(interface{ Unwrap() []error }); ok && e != runner.ErrInvalidPlan {
				out = append(out, j.Unwrap()...)
			}
		}
	}
	return out
}

// warnRun prints runRefusal's problems as a warning naming hopdag run.
func (c *cli) warnRun(p *runner.Plan) {
	err := c.runRefusal(p)
	if err == nil {
		return
	}
	msg := strings.ReplaceAll(message(err), "\n", "\n  ")
	fmt.Fprintf(c.stderr, "hopdag plan: warning: hopdag run would refuse this plan (a Go program with runners of its own can run it):\n  %s\n", msg)
}

// inlineNote is the plan's first line when it has inline components: they
// are Go functions, run by a Go program that registers them or simulated
// by hopdag run --simulate; "" otherwise.
func inlineNote(p *runner.Plan) string {
	var names []string
	for _, h := range p.Hops {
		for i := 0; i < h.Graph.Len(); i++ {
			if n := h.Graph.Node(i); n.To != nil && n.To.Type == release.TypeInline && !slices.Contains(names, n.Name) {
				names = append(names, n.Name)
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return fmt.Sprintf("note: inline %s %s %s Go: a program that registers %s runs %s, hopdag run --simulate simulates %s\n",
		plural(len(names), "component"), andList(names), choose(len(names), "is", "are"), choose(len(names), "its handler", "their handlers"),
		choose(len(names), "it", "them"), choose(len(names), "it", "them"))
}
