package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/hopdag/hopdag/release"
)

// validationReport is validate's document (-o json|yaml, kind
// ValidationReport): the catalog, whether it loads, its problems and
// warnings with their file:line, and what it holds.
type validationReport struct {
	Catalog  string            `json:"catalog"`
	Valid    bool              `json:"valid"`
	Problems []release.Problem `json:"problems"`
	// Omitted counts the problems found but not listed (release.LoadError).
	Omitted  int               `json:"omitted,omitempty"`
	Warnings []release.Problem `json:"warnings"`
	// The counts of a valid catalog.
	Releases          int `json:"releases"`
	ComponentVersions int `json:"componentVersions"`
	UpgradeRules      int `json:"upgradeRules"`
}

// validate reports every problem of a catalog with its file:line, and its
// warnings: the report goes to stdout, as text or a ValidationReport; exit
// 1 when the catalog has problems.
func (c *cli) validate(context.Context) int {
	if code := c.outputIn("text", "json", "yaml"); code != exitOK {
		return code
	}
	cat, err := c.catalog()
	le, invalid := errors.AsType[*release.LoadError](err)
	if err != nil && !invalid {
		return c.fail1(err)
	}
	r := validationReport{Catalog: c.dir, Valid: !invalid, Problems: []release.Problem{}, Warnings: []release.Problem{}}
	if invalid {
		r.Problems, r.Omitted = le.Problems, le.Omitted
	} else {
		r.Warnings = append(r.Warnings, cat.Warnings()...)
		r.Releases, r.ComponentVersions = len(cat.Releases), len(cat.Components)
		for _, p := range cat.Paths {
			r.UpgradeRules += len(p.Rules)
		}
	}
	if *c.output != "text" {
		if err := c.print(kindValidationReport, r); err != nil {
			return c.fail1(err)
		}
	} else {
		c.validationText(r, le)
	}
	if invalid {
		return exitInvalid
	}
	return exitOK
}

// validationText writes the report as lines: each problem, or each warning
// and the counts.
func (c *cli) validationText(r validationReport, le *release.LoadError) {
	if le != nil {
		for _, p := range le.Problems {
			fmt.Fprintln(c.stdout, p.Error())
		}
		fmt.Fprintf(c.stdout, "%s: %d %s\n", c.dir, le.Total(), plural(le.Total(), "problem"))
		return
	}
	// Warnings (what the catalog says that does nothing) come first, each
	// with its file:line, as problems do; they do not fail validate.
	for _, w := range r.Warnings {
		fmt.Fprintln(c.stdout, "warning: "+w.Error())
	}
	fmt.Fprintf(c.stdout, "%s: ok: %d %s, %d %s, %d %s", c.dir, r.Releases, plural(r.Releases, "release"),
		r.ComponentVersions, plural(r.ComponentVersions, "component version"), r.UpgradeRules, plural(r.UpgradeRules, "upgrade rule"))
	if len(r.Warnings) > 0 {
		fmt.Fprintf(c.stdout, " (%d %s)", len(r.Warnings), plural(len(r.Warnings), "warning"))
	}
	fmt.Fprintln(c.stdout)
}
