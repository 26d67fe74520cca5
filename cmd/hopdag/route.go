package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
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

// isState reports whether --from or --to names tracks (track=version).
func (c *cli) isState() bool {
	return strings.Contains(*c.from, "=") || c.to != nil && strings.Contains(*c.to, "=")
}

// states parses --from and --to as states.
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

// route resolves the route from --from to --to, on one track or across
// tracks.
func (c *cli) route(cat *release.Catalog) (*path.Route, error) {
	if err := c.checkAccept(cat); err != nil {
		return nil, err
	}
	if c.isState() {
		from, to, err := c.states()
		if err != nil {
			return nil, err
		}
		return path.ResolveState(cat, from, to, c.pathOptions()...)
	}
	from, to, err := c.versions()
	if err != nil {
		return nil, err
	}
	return path.Resolve(cat, from, to, c.pathOptions()...)
}

// stateTargets lists, for --from a state, every version of every track the
// system can move to (the other tracks moving as needed), with the route,
// then those behind risks (riskyTargets), as one-track targets does.
func (c *cli) stateTargets() int {
	cat, err := c.catalog()
	if err != nil {
		return c.fail1(err)
	}
	if err := c.checkAccept(cat); err != nil {
		return c.fail1(err)
	}
	from, _, err := c.states()
	if err != nil {
		return c.fail1(err)
	}
	list := func(opts []path.Option) ([]target, error) {
		var out []target
		for _, track := range from.Tracks() {
			for _, v := range cat.TrackVersions(track) {
				if v.Equal(from[track]) {
					continue
				}
				r, err := path.ResolveState(cat, from, path.State{track: v}, opts...)
				if errors.Is(err, path.ErrNoRoute) {
					continue
				}
				if err != nil {
					return nil, err
				}
				dep := 0
				for _, h := range r.Hops {
					if h.Deprecated != "" {
						dep++
					}
					if h.ToDeprecated != "" {
						dep++
					}
				}
				out = append(out, target{track: track, version: v, hops: len(r.Hops), deprecated: dep,
					next:  func() *path.Hop { return &r.Hops[0] },
					last:  func() *path.Hop { return &r.Hops[len(r.Hops)-1] },
					route: func() *path.Route { return r }})
			}
		}
		return out, nil
	}
	rows, err := list(c.pathOptions())
	if err != nil {
		return c.fail1(err)
	}
	if *c.output != "text" {
		return c.printTargetsDoc(cat, list, from.String(), rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(c.stdout, "no version is reachable from %s\n", from)
		return exitOK
	}
	c.printTargets(rows, true)
	c.riskyTargets(cat, list, rows, true)
	return exitOK
}

// message is err for a command-line user: the relaxations a route needs
// are named as flags.
func message(err error) string {
	var se *path.StateNoRouteError
	if errors.As(err, &se) {
		return cliText(se.Explain(flagText))
	}
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
	"in the current state (the current argument of ResolveState): ", "in the state: --from ",
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
