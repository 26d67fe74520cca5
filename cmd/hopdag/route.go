package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// Routing on the command line: --from and --to take a version or a state
// (track=version,...), --channel and --prereleases choose what a route may
// enter, and errors name the flags that would give a route.

// routeFlags are the routing flags of targets, plan, graph and run.
type routeFlags struct {
	channel     *string
	prereleases *bool
}

func (c *cli) addRouteFlags() {
	c.rtf.channel = c.fs.String("channel", "", "stay inside this channel: enter only versions that list it in the UpgradePath versions")
	c.rtf.prereleases = c.fs.Bool("prereleases", false, "let a route between two GA versions pass through prereleases")
}

// routeOptions are the path options of the routing flags.
func (c *cli) routeOptions() []path.Option {
	var out []path.Option
	if c.rtf.channel != nil && *c.rtf.channel != "" {
		out = append(out, path.WithChannel(*c.rtf.channel))
	}
	if c.rtf.prereleases != nil && *c.rtf.prereleases {
		out = append(out, path.AllowPrereleases())
	}
	return out
}

// states parses --from and --to as states (path.ParseState): a version
// is the state of a one-track system.
func (c *cli) states() (from, to path.State, err error) {
	if from, err = path.ParseState(*c.from); err != nil {
		return nil, nil, fmt.Errorf("--from: %w", err)
	}
	if c.to != nil {
		if to, err = path.ParseState(*c.to); err != nil {
			return nil, nil, fmt.Errorf("--to: %w", err)
		}
	}
	return from, to, nil
}

// planOf resolves the route from --from to --to, on one track or across
// tracks, and plans it (runner.NewPlan) with opts.
func (c *cli) planOf(cat *release.Catalog, opts ...runner.PlanOption) (*runner.Plan, error) {
	if err := c.checkAccept(cat); err != nil {
		return nil, err
	}
	from, to, err := c.states()
	if err != nil {
		return nil, err
	}
	return runner.NewPlan(cat, from, to, append([]runner.PlanOption{runner.PathOptions(c.pathOptions()...)}, opts...)...)
}

// message is err for a command-line user: the relaxations a route needs
// are named as flags.
func message(err error) string {
	var nr *path.NoRouteError
	if errors.As(err, &nr) {
		return cliText(nr.Explain(flagText))
	}
	if text, ok := invalidPlanText(err); ok {
		return cliText(text)
	}
	return cliText(err.Error() + namespaceHint(err))
}

// cliTerms are the Go API the library's messages name, and what a
// command-line user does instead.
var cliTerms = strings.NewReplacer(
	"(path.AllowPrereleases, or a channel listing it: path.WithChannel)", "(--prereleases, or a --channel that lists it)",
	"(path.WithChannel)", "(--channel)",
	"in the current state (the current argument of Resolve): ", "in the state: --from ",
	"or apply with Force to take them over", "or pass --force-conflicts to take them over",
	"or start over with no previous status (for a state store: a new one)", "or start over with a new --state",
	"or start over with no previous status", "or start over with a new --state",
	"give both installations the same instance (components.WithInstance; hopdag run --instance)", "give both installations the same --instance",
	"or take it over with components.WithTakeOver", "or take it over with --take-over",
	"or take it over with apply.WithTakeOver", "or take it over with --take-over",
	"; start a new run with an empty status", "; its status is final: start over with a new --state (or delete what the old one holds)",
	"(WithCache and WithCacheFallback; the CLI's --cache-fallback)", "(--cache-fallback)",
	"(VerifyOptional; the CLI's --verify optional)", "(--verify optional)",
	// The state package's advice to a program holding a lease (FencedError,
	// LostError, LockedError.Missing, a store started over), as what to run.
	"; the lock is free (the lease expired or was released): acquire it again",
	"; the lock is free (the lease expired or was released): nothing more was saved; run the same hopdag command again ("+statusHint+")",
	", which already wrote the status; acquire the lock again",
	", which already wrote the status: another hopdag took the lock since, and nothing more was saved; run the same hopdag command again once it is done ("+statusHint+")",
	"; if none runs, acquire again after that", "; if none runs, run the same hopdag command again after that ("+statusHint+")",
	"; acquire the lock again: ", "; run the same hopdag command again ("+statusHint+"): ",
	"nothing was written: open the store again (a coordinator that was running on it must not go on)",
	"nothing was written: run the same hopdag command again ("+statusHint+")",
	"(release the lock and acquire it again to start a new record)", "(run the same hopdag command again to start a new record)",
)

// statusHint is how a command-line user sees what a state holds.
const statusHint = "hopdag status --state shows what the state holds"

// cliText is a library message in the command line's terms.
func cliText(s string) string { return cliTerms.Replace(s) }

// flagText writes relaxations as the flags that apply them: risks as
// --accept.
func flagText(rs []path.Relaxation, together bool) string {
	var risks, guards []string
	for _, r := range rs {
		if r.Kind == path.OverrideGuard {
			guards = append(guards, r.Name)
		} else {
			risks = append(risks, r.Name)
		}
	}
	var parts []string
	if len(risks) > 0 {
		parts = append(parts, "--accept "+strings.Join(risks, ","))
	}
	if len(guards) > 0 {
		// The command line applies no guards, so none can need an override
		// here; a catalog tool that adds them names them as the library does.
		parts = append(parts, "and override guards "+strings.Join(guards, ", ")+" (path.OverrideGuards)")
	}
	if !together {
		return "pass " + strings.Join(parts, " ") + " to open the closed edges out of the reachable versions"
	}
	return "pass " + strings.Join(parts, " ") + " to get a route"
}
