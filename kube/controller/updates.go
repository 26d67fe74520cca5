package controller

import (
	"errors"
	"slices"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// Updates returns what status.availableUpdates and status.conditionalUpdates
// say for a system at current on track with the accepted risks:
// available are path.Targets with those risks; conditional are the further
// targets path.Targets gives when every risk of the catalog is accepted,
// each with the risks of its route that are not accepted yet. Both are
// sorted by version. An unknown current version gives its error. opts
// add to the query (path.WithChannel, path.AllowPrereleases).
func Updates(c *release.Catalog, track string, current release.Version, accepted []string, opts ...path.Option) (available []v1alpha1.Update, conditional []v1alpha1.ConditionalUpdate, err error) {
	base := append([]path.Option{path.WithTrack(track)}, opts...)
	ts, err := path.Targets(c, current, append(slices.Clone(base), path.AcceptRisks(accepted...))...)
	if err != nil && !errors.Is(err, path.ErrNoRoute) {
		return nil, nil, err
	}
	reach := map[string]bool{}
	for _, t := range ts {
		available = append(available, update(current, t))
		reach[t.Version.Canonical()] = true
	}
	all := allRisks(c, track)
	if len(all) == 0 {
		return available, nil, nil
	}
	ts, err = path.Targets(c, current, append(slices.Clone(base), path.AcceptRisks(append(slices.Clone(accepted), all...)...))...)
	if err != nil && !errors.Is(err, path.ErrNoRoute) {
		return nil, nil, err
	}
	for _, t := range ts {
		if reach[t.Version.Canonical()] {
			continue
		}
		cu := v1alpha1.ConditionalUpdate{Update: update(current, t)}
		seen := map[string]bool{}
		for _, h := range t.Route().Hops {
			for _, r := range h.Risks {
				if seen[r.Name] || slices.Contains(accepted, r.Name) {
					continue
				}
				seen[r.Name] = true
				cu.Risks = append(cu.Risks, v1alpha1.ConditionalRisk{Name: r.Name, Message: r.Message, URL: r.URL})
			}
		}
		conditional = append(conditional, cu)
	}
	return available, conditional, nil
}

// routeOptions are the path options a ClusterVersion's spec gives: its
// track and accepted risks, then steer's.
func routeOptions(spec *v1alpha1.ClusterVersionSpec) []path.Option {
	return append([]path.Option{path.WithTrack(spec.Track), path.AcceptRisks(spec.AcceptRisks...)}, steer(spec)...)
}

// steer are the options of the spec that steer routes, the channel and
// prereleases: what Updates takes beside the track and the risks.
func steer(spec *v1alpha1.ClusterVersionSpec) []path.Option {
	var opts []path.Option
	if spec.Channel != "" {
		opts = append(opts, path.WithChannel(spec.Channel))
	}
	if spec.AllowPrereleases {
		opts = append(opts, path.AllowPrereleases())
	}
	return opts
}

func update(current release.Version, t path.Target) v1alpha1.Update {
	u := v1alpha1.Update{Version: t.Version.Original(), Hops: t.Hops, Route: []string{current.Original()}}
	for _, h := range t.Route().Hops {
		u.Route = append(u.Route, h.To.Original())
	}
	return u
}

// allRisks returns the names of every risk the track's rules declare, sorted.
func allRisks(c *release.Catalog, track string) []string {
	var out []string
	for _, r := range c.Rules(track) {
		for _, k := range r.Risks {
			out = append(out, k.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
