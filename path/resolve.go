package path

import (
	"errors"
	"fmt"

	"github.com/hopdag/hopdag/release"
)

// Resolve returns the route from the current state to a target state (see
// the package documentation for how edges are made and which route is
// chosen). A version is the state of a one-track system: ParseState reads
// "v26.09" as the state of the default track, or of the one track that has
// that version, and "platform=27.03.0,kubernetes=v1.34.1" as a state
// across tracks (StarlingX: the platform release and the Kubernetes
// version). current names a version for every track the system runs;
// target names the tracks to move, the others stay or move only as needed.
// A current state that leaves out a track tied to one it names (a
// release's Supports, either way) is refused (ErrInvalidOption, naming the
// missing tracks): the route could not keep to their versions. The states
// name the tracks, so WithTrack is refused (ErrInvalidOption); it chooses
// the track of an Index.
//
// A hop moves one track, along that track's UpgradePath rules (risks,
// guards, deprecation, channels; the prerelease rule applies per track: a
// track that starts on a GA version and is not targeted at a prerelease
// enters no prerelease). A state is allowed only if it is compatible: for
// every track, the release of its version supports, for each other track
// it names in Supports, that track's version. Every state a route enters
// must be allowed; the current one need not be.
//
// The route chosen is the cheapest by (deprecated edges and versions,
// hops). Among the cheapest, at each state each track's candidate next hop
// is its highest version; between tracks, the hop that is the smaller
// change of the track it moves wins (a prerelease change, then a patch, a
// minor, a major), then the track that comes first (tracks whose releases
// constrain others, then by name). No table of step types is involved:
// StarlingX's sequences (patch, then Kubernetes; before a major, the
// highest patch and the highest Kubernetes the old line supports) follow
// from the rules and the supports constraints.
//
// The route's Track, From and To are those of its first track in that
// order. A route of one track has no states (FromState and ToState nil)
// and hops without a Track; a route across tracks has FromState and
// ToState, and each hop's Track is the track it moves. A target equal to
// current gives a route with no hops.
//
// Errors: an unknown track gives an *UnknownTrackError listing the
// catalog's tracks (and, for a version without a track name that not
// exactly one track has, asks for track=version); an unknown version an
// *UnknownVersionError; no route a *NoRouteError (errors.Is ErrNoRoute)
// naming what closes the way on the track, or the compatibility
// constraints in the way, and the risks to accept and guards to override
// that give a route.
//
// Cost: one track is searched on an Index built for the call (to ask many
// questions of one track, build one with NewIndex). Across tracks: up to 4
// tracks of 65,535 versions each. Before searching, a target no allowed
// state can hold beside the versions the other tracks can reach is found
// from the supports constraints alone (time: the product of the versions
// of each pair of tied tracks), and reported (NoRouteError.Static). The
// search explores at most the product of the tracks' reachable versions,
// and settles at most 16 x V^2 states, V the versions of the tracks
// searched (at least 65,536, at most 2,097,152, about 150 bytes each):
// past that it stops with a *NoRouteError whose Limit says so.
func Resolve(c *release.Catalog, current, target State, opts ...Option) (*Route, error) {
	r, _, err := resolve(c, current, target, opts)
	return r, err
}

// resolve is Resolve; it also returns how many states a search across
// tracks settled (0 for one track).
func resolve(c *release.Catalog, current, target State, opts []Option) (*Route, int, error) {
	if err := noTrackOption(opts); err != nil {
		return nil, 0, err
	}
	current, target, err := states(c, current, target)
	if err != nil {
		return nil, 0, err
	}
	if len(current) == 1 {
		ix, t, err := trackIndex(c, current, opts)
		if err != nil {
			return nil, 0, err
		}
		to, ok := target[t]
		if !ok {
			to = current[t]
		}
		r, err := ix.Resolve(current[t], to)
		return r, 0, err
	}
	return resolveAcross(c, current, target, opts)
}

// resolveAcross searches the states of several tracks (also one, for the
// tests that hold it to the one-track search).
func resolveAcross(c *release.Catalog, current, target State, opts []Option) (*Route, int, error) {
	m, err := newMulti(c, current, target, opts)
	if err != nil {
		return nil, 0, err
	}
	r, err := m.resolve()
	return r, len(m.key), err
}

// noTrackOption refuses WithTrack given to Resolve or Targets: the states
// name the tracks.
func noTrackOption(opts []Option) error {
	if o := collect(opts); o.trackSet {
		return fmt.Errorf("%w: WithTrack(%q) given to Resolve or Targets: the states name the tracks (give %s=VERSION)", ErrInvalidOption, o.track, trackWord(o.track))
	}
	return nil
}

// trackIndex builds the Index of the one track current names; states
// checked that no other track is tied to it.
func trackIndex(c *release.Catalog, current State, opts []Option) (*Index, string, error) {
	var t string
	for t = range current {
	}
	ix, err := NewIndex(c, append(opts[:len(opts):len(opts)], WithTrack(t), func(o *options) { o.acrossTracks = true })...)
	return ix, t, err
}

// Targets returns every state a system at current can move to. For a
// one-track system, every version reachable on its track, sorted by
// version, each with its hop count, its deprecated count, and the route
// Resolve would return to it ([Target.Route], built when asked); the
// targets' Track is "". For a state across tracks, every version of each
// of its tracks that Resolve reaches (the other tracks moving as the route
// needs), sorted by track, then version, each with its Track and the route
// Resolve returns.
//
// When no version is reachable it returns a *NoRouteError (errors.Is
// ErrNoRoute); for one track its Closed edges, Risks and Overrides say
// why.
//
// Cost: for one track, one search over the reachable versions, time and
// memory linear in the versions and edges it visits. Across tracks, one
// Resolve per version of each track: it grows with the tracks' versions
// times the states a search explores.
func Targets(c *release.Catalog, current State, opts ...Option) ([]Target, error) {
	if err := noTrackOption(opts); err != nil {
		return nil, err
	}
	current, _, err := states(c, current, nil)
	if err != nil {
		return nil, err
	}
	if len(current) == 1 {
		ix, t, err := trackIndex(c, current, opts)
		if err != nil {
			return nil, err
		}
		return ix.Targets(current[t])
	}
	var out []Target
	for _, track := range current.Tracks() {
		for _, v := range c.TrackVersions(track) {
			if v.Equal(current[track]) {
				continue
			}
			r, _, err := resolveAcross(c, current, State{track: v}, opts)
			if errors.Is(err, ErrNoRoute) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, Target{Track: track, Version: v, Hops: len(r.Hops), Deprecated: r.deprecated(), route: r})
		}
	}
	if len(out) == 0 {
		return nil, &NoRouteError{FromState: current}
	}
	return out, nil
}
