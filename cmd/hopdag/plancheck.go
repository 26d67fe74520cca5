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

// runRefusal is why hopdag run would refuse p at its plan step whatever
// its flags, or nil: plan is the dry run of any executor (a Go program
// may run inline components, register checks and rollback), so it only
// warns. It checks p as run's plan step does (runner.Executor.Validate:
// a runner for every component, what a rollback needs), with the
// command line's runners: exec, manifest (through any applier), helm, and
// every hop check given (--check).
func runRefusal(p *runner.Plan) error {
	router := components.NewRouter().Register(release.TypeExec, components.NewExec()).
		Register(release.TypeManifest, components.NewManifest(components.NewDir(os.TempDir()))).
		Register(release.TypeHelm, helmAtPlan{})
	var opts []runner.Option
	for _, h := range p.Hops {
		for _, ch := range slices.Concat(h.PreChecks, h.PostChecks) {
			opts = append(opts, runner.WithCheck(ch.Name, func(context.Context, runner.CheckTask) error { return nil }))
		}
	}
	err := runner.New(router, opts...).Validate(p)
	if err == nil {
		return nil
	}
	// Validate's problems: keep those no flag of run changes (a component
	// type without a runner, a rollback the components cannot do), not
	// those of templates (they depend on --set).
	var kept []error
	for _, e := range flatten(err) {
		if _, ok := errors.AsType[*components.NotRegisteredError](e); ok || errors.Is(e, runner.ErrCannotRollBack) {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return errors.Join(kept...)
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
	err := runRefusal(p)
	if err == nil {
		return
	}
	msg := strings.ReplaceAll(message(err), "\n", "\n  ")
	fmt.Fprintf(c.stderr, "hopdag plan: warning: hopdag run would refuse this plan (a Go program with runners of its own can run it):\n  %s\n", msg)
}
