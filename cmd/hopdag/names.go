package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/simulate"
)

// Names the flags take: a risk to accept (--accept), a component to fail
// (--fail), a hop check to run as a command (--check). A name the catalog
// or the plan does not have is a mistyped one: it would change nothing,
// so it is refused as a usage error (exit 2) that lists the names there
// are, before anything runs.

// usageProblem is an error that is the command line's fault: fail1 prints
// it as a usage error.
type usageProblem struct{ msg string }

func (e *usageProblem) Error() string { return e.msg }

// checkAccept refuses --accept names that no rule of cat declares as a
// risk.
func (c *cli) checkAccept(cat *release.Catalog) error {
	if c.accept == nil {
		return nil
	}
	known := map[string]bool{}
	for _, p := range cat.Paths {
		for _, r := range p.Rules {
			for _, risk := range r.Risks {
				known[risk.Name] = true
			}
		}
	}
	return unknown("--accept", simulate.List(*c.accept), known, func(names []string) string {
		switch {
		case len(known) == 0:
			return "the catalog declares no risks"
		case len(names) == 1:
			return "the catalog declares no such risk; its risks are "
		}
		return "the catalog declares no such risks; its risks are "
	})
}

// checkPlanNames refuses --fail names that are no component of p and
// --check names that no rule of cat declares (a check of another route
// goes: a script may give the same checks to every upgrade).
func (c *cli) checkPlanNames(cat *release.Catalog, p *runner.Plan) error {
	components, checks := map[string]bool{}, map[string]bool{}
	for _, h := range p.Hops {
		for i := 0; i < h.Graph.Len(); i++ {
			components[h.Graph.Node(i).Name] = true
		}
	}
	for _, path := range cat.Paths {
		for _, r := range path.Rules {
			for _, ch := range slices.Concat(r.PreChecks, r.PostChecks) {
				checks[ch.Name] = true
			}
		}
	}
	var errs []error
	if c.fail != nil {
		errs = append(errs, unknown("--fail", simulate.List(*c.fail), components, func(names []string) string {
			return fmt.Sprintf("the plan has no %s %s; its components are ", plural(len(names), "component"), strings.Join(names, ", "))
		}))
	}
	errs = append(errs, unknown("--check", slices.Sorted(maps.Keys(c.rf.checks)), checks, func(names []string) string {
		if len(checks) == 0 {
			return "the catalog declares no hop checks"
		}
		return fmt.Sprintf("no rule of the catalog declares hop %s %s; its checks are ", plural(len(names), "check"), strings.Join(names, ", "))
	}))
	if err := errors.Join(errs...); err != nil {
		return &usageProblem{err.Error()}
	}
	return nil
}

// unknown returns a usageProblem naming the names of flag that known does
// not hold, in their order: "FLAG NAMES: " + say(the names), followed by
// the known names, sorted, when say's text ends in a space; nil when all
// are known.
func unknown(flag string, names []string, known map[string]bool, say func(names []string) string) error {
	var bad []string
	for _, n := range names {
		if !known[n] && !slices.Contains(bad, n) {
			bad = append(bad, n)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	msg := say(bad)
	if strings.HasSuffix(msg, " ") {
		msg += strings.Join(slices.Sorted(maps.Keys(known)), ", ")
	}
	return &usageProblem{fmt.Sprintf("%s %s: %s", flag, strings.Join(bad, ", "), msg)}
}
