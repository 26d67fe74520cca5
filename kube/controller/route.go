package controller

import (
	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// Route is the route a ClusterVersion whose spec is spec takes in cat
// from current (a version or a state, as status.currentVersion spells
// it) to spec.desiredVersion, as the reconciler resolves it: on
// spec.track or across tracks, within spec.channel, with
// spec.allowPrereleases and spec.acceptRisks. A route of no hops means
// the system is there. Its errors are the resolver's (path.ErrNoRoute,
// with *path.NoRouteError's diagnostics and the risks that would open a
// route; path.ErrUnknownVersion). A dry run (kube/fleet's) asks it
// before anything starts.
func Route(cat *release.Catalog, spec *v1alpha1.ClusterVersionSpec, current string) (*path.Route, error) {
	from, err := parsePosition(current)
	if err != nil {
		return nil, err
	}
	to, err := parsePosition(string(spec.DesiredVersion))
	if err != nil {
		return nil, err
	}
	if from.satisfies(to) {
		r := &path.Route{Track: spec.Track}
		if v, ok := from.state[""]; ok && len(from.state) == 1 {
			r.From, r.To = v, v // a version: a one-track route
		} else {
			r.FromState, r.ToState = from.state.Clone(), from.state.Clone()
		}
		return r, nil
	}
	return resolve(cat, spec, from, to)
}

// HopNames are the names of r's hops as status.plan.hops gives them:
// FROM -> TO, prefixed with the hop's track when it names one.
func HopNames(r *path.Route) []string {
	out := make([]string, 0, len(r.Hops))
	for _, h := range r.Hops {
		name := h.From.Original() + " -> " + h.To.Original()
		if h.Track != "" {
			name = h.Track + " " + name
		}
		out = append(out, name)
	}
	return out
}
