package controller

import (
	"errors"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

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
		conditional = append(conditional, v1alpha1.ConditionalUpdate{Update: update(current, t), Risks: routeRisks(t.Route().Hops, accepted)})
	}
	return available, conditional, nil
}

// updatesCache remembers, for each ClusterVersion, the last answer of
// updatesFor. A reconcile asks for it on every event (a run writes its
// status several times a second), and for a state across tracks the
// answer takes a route search per version of each track (half a second
// for two tracks of 100 versions). The answer is kept for the catalog it
// was computed on (catalog.Cache returns the same *Catalog while the
// objects are unchanged), the position and the fields of the spec that
// shape it; one per ClusterVersion, so a changed catalog is let go.
type updatesCache struct {
	mu sync.Mutex
	m  map[types.NamespacedName]updatesAnswer
}

type updatesKey struct {
	cat                    *release.Catalog
	current                string
	track, channel, accept string
	prereleases            bool
}

type updatesAnswer struct {
	key       updatesKey
	available []v1alpha1.Update
	cond      []v1alpha1.ConditionalUpdate
	err       error
}

// computeUpdates is updatesFor (a variable for the cache's test).
var computeUpdates = updatesFor

// get is updatesFor(c, &cv.Spec, current), from the cache when its inputs
// did not change. The slices are the caller's.
func (uc *updatesCache) get(cv *v1alpha1.ClusterVersion, c *release.Catalog, current position) ([]v1alpha1.Update, []v1alpha1.ConditionalUpdate, error) {
	spec := &cv.Spec
	k := updatesKey{cat: c, current: current.String(), track: spec.Track, channel: spec.Channel,
		accept: strings.Join(spec.AcceptRisks, "\x00"), prereleases: spec.AllowPrereleases}
	name := types.NamespacedName{Namespace: cv.Namespace, Name: cv.Name}
	uc.mu.Lock()
	a, ok := uc.m[name]
	uc.mu.Unlock()
	if !ok || a.key != k {
		a = updatesAnswer{key: k}
		a.available, a.cond, a.err = computeUpdates(c, spec, current)
		uc.mu.Lock()
		if uc.m == nil {
			uc.m = map[types.NamespacedName]updatesAnswer{}
		}
		uc.m[name] = a
		uc.mu.Unlock()
	}
	var av []v1alpha1.Update
	for i := range a.available {
		av = append(av, *a.available[i].DeepCopy())
	}
	var cu []v1alpha1.ConditionalUpdate
	for i := range a.cond {
		cu = append(cu, *a.cond[i].DeepCopy())
	}
	return av, cu, a.err
}

// updatesFor is what status.availableUpdates and conditionalUpdates say
// for a system at current: Updates for a version, StateUpdates for a
// state.
func updatesFor(c *release.Catalog, spec *v1alpha1.ClusterVersionSpec, current position) ([]v1alpha1.Update, []v1alpha1.ConditionalUpdate, error) {
	if current.isState() {
		return StateUpdates(c, current.state, spec.AcceptRisks, steer(spec)...)
	}
	return Updates(c, spec.Track, current.v, spec.AcceptRisks, steer(spec)...)
}

// StateUpdates is Updates for a system at a state across tracks: each
// version of each of its tracks that path.ResolveState reaches (the other
// tracks moving as the route needs), named track=version, its route the
// states it passes through; conditional are those reached only by
// accepting further risks of the catalog, with those risks. Sorted by
// track, then version. It resolves one route per version of each track,
// so its cost grows with the tracks' versions times the states a search
// explores.
func StateUpdates(c *release.Catalog, current path.State, accepted []string, opts ...path.Option) (available []v1alpha1.Update, conditional []v1alpha1.ConditionalUpdate, err error) {
	var all []string
	for _, track := range current.Tracks() {
		all = append(all, allRisks(c, track)...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	resolve := func(track string, v release.Version, risks []string) (*path.Route, error) {
		r, err := path.ResolveState(c, current, path.State{track: v}, append(slices.Clone(opts), path.AcceptRisks(risks...))...)
		if errors.Is(err, path.ErrNoRoute) {
			return nil, nil
		}
		return r, err
	}
	for _, track := range current.Tracks() {
		for _, v := range c.TrackVersions(track) {
			if v.Equal(current[track]) {
				continue
			}
			r, err := resolve(track, v, accepted)
			if err != nil {
				return nil, nil, err
			}
			if r != nil {
				available = append(available, stateUpdate(track, v, r))
				continue
			}
			if len(all) == 0 {
				continue
			}
			if r, err = resolve(track, v, append(slices.Clone(accepted), all...)); err != nil {
				return nil, nil, err
			}
			if r == nil {
				continue
			}
			conditional = append(conditional, v1alpha1.ConditionalUpdate{Update: stateUpdate(track, v, r), Risks: routeRisks(r.Hops, accepted)})
		}
	}
	return available, conditional, nil
}

// routeRisks are the risks of hops that accepted does not name, each
// once, in route order.
func routeRisks(hops []path.Hop, accepted []string) []v1alpha1.ConditionalRisk {
	var out []v1alpha1.ConditionalRisk
	seen := map[string]bool{}
	for _, h := range hops {
		for _, r := range h.Risks {
			if seen[r.Name] || slices.Contains(accepted, r.Name) {
				continue
			}
			seen[r.Name] = true
			out = append(out, v1alpha1.ConditionalRisk{Name: r.Name, Message: r.Message, URL: r.URL})
		}
	}
	return out
}

func stateUpdate(track string, v release.Version, r *path.Route) v1alpha1.Update {
	u := v1alpha1.Update{Version: track + "=" + v.Original(), Hops: len(r.Hops)}
	for _, st := range r.States() {
		u.Route = append(u.Route, st.String())
	}
	return u
}

// stateOptions are the path options of a spec for a route across tracks:
// routeOptions but the track, which a state names itself.
func stateOptions(spec *v1alpha1.ClusterVersionSpec) []path.Option {
	return append([]path.Option{path.AcceptRisks(spec.AcceptRisks...)}, steer(spec)...)
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
