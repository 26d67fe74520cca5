package path

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrInvalidOption is matched (errors.Is) by the errors of options that
// cannot apply: an invalid or duplicate guard, an override of an unknown or
// mandatory guard, a channel no version lists, or a track or guard option
// given to a query of a built Index (or a track to Resolve or Targets, whose
// states name the tracks).
var ErrInvalidOption = errors.New("path: invalid option")

// Option configures Resolve, Targets and NewIndex.
type Option func(*options)

type options struct {
	track     string
	trackSet  bool
	guards    []Guard
	guardsSet bool
	risks     []string
	overrides []string
	// channel, when set, is the channel routes stay in; prereleases lets
	// routes between GA versions pass through prereleases.
	channel     string
	channelSet  bool
	prereleases bool
	// acrossTracks marks the per-track indexes Resolve and Targets build: the
	// constraints between tracks are its to check.
	acrossTracks bool
	// stateLimit, when positive, replaces Resolve's limit on the
	// states a search settles (for tests).
	stateLimit int
}

func collect(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithTrack selects the track of an Index (NewIndex): the release track
// whose releases and UpgradePaths it holds. The default is "", the default
// track. The last WithTrack wins. Resolve and Targets refuse it: their
// states name the tracks.
func WithTrack(track string) Option {
	return func(o *options) { o.track, o.trackSet = track, true }
}

// AcceptRisks accepts the named risks: an edge whose every risk is accepted
// may be used. Several calls add up. Names that no rule uses are ignored.
func AcceptRisks(names ...string) Option {
	return func(o *options) { o.risks = append(o.risks, names...) }
}

// WithGuards adds guards checked on every edge (see [Guard]). Several calls
// add up; guard names must be unique.
func WithGuards(guards ...Guard) Option {
	return func(o *options) {
		o.guards = append(o.guards, guards...)
		o.guardsSet = true
	}
}

// OverrideGuards overrides the named overridable guards: an edge that
// violates only overridden guards may be used, and each hop records the
// guards overridden on it. Naming a guard that was not given with WithGuards,
// or a mandatory one, is an error (ErrInvalidOption).
func OverrideGuards(names ...string) Option {
	return func(o *options) { o.overrides = append(o.overrides, names...) }
}

// WithChannel makes routes stay inside the named channel: every version a
// route enters (every hop's To, the target included) must list the channel
// in the track's UpgradePath versions list; the current version need not. A
// channel decides prereleases by itself: a prerelease in the channel may be
// entered. Naming a channel no versions entry lists is an error
// (ErrInvalidOption) that lists the track's channels. "" is no channel. The
// last WithChannel wins; given to a query of a built Index, it replaces the
// index's.
func WithChannel(name string) Option {
	return func(o *options) { o.channel, o.channelSet = name, true }
}

// AllowPrereleases lets a route between two GA versions pass through
// prereleases. Without it, and without a channel, such a route never enters
// a prerelease, and Targets from a GA version reaches its GA targets without
// one (a prerelease target is still listed, with the route to it).
func AllowPrereleases() Option {
	return func(o *options) { o.prereleases = true }
}

// query is what a search needs to know of the caller's options.
type query struct {
	accepted    map[string]bool
	acceptAll   bool
	overridden  []bool // by guard index
	overrideAll bool
	// exclude[v]: v may not be entered (outside the channel, or a
	// prerelease on a route between GA versions); nil: none.
	exclude     []bool
	excludeWhy  string
	channel     string
	prereleases bool
}

// newQuery merges the index defaults with per-call options and validates them.
func (ix *Index) newQuery(opts []Option) (*query, error) {
	o := collect(opts)
	if o.trackSet && o.track != ix.track {
		return nil, fmt.Errorf("%w: WithTrack(%q) given to a query of an index of track %q; build an Index per track", ErrInvalidOption, o.track, ix.track)
	}
	if o.guardsSet {
		return nil, fmt.Errorf("%w: WithGuards given to a query of a built Index; pass guards to NewIndex", ErrInvalidOption)
	}
	q := &query{channel: ix.defaults.channel, prereleases: ix.defaults.prereleases || o.prereleases}
	if o.channelSet {
		q.channel = o.channel
	}
	if q.channel != "" {
		ex, ok := ix.channels[q.channel]
		if !ok {
			return nil, fmt.Errorf("%w: channel %q: no version%s is in it; the channels: %s", ErrInvalidOption, q.channel, onTrack(ix.track), listOrNone(slices.Sorted(maps.Keys(ix.channels))))
		}
		q.exclude, q.excludeWhy = ex, "is not in channel "+q.channel+" (path.WithChannel)"
	}
	risks := append(slices.Clone(ix.defaults.risks), o.risks...)
	if len(risks) > 0 {
		q.accepted = make(map[string]bool, len(risks))
		for _, r := range risks {
			q.accepted[r] = true
		}
	}
	overrides := append(slices.Clone(ix.defaults.overrides), o.overrides...)
	if len(overrides) > 0 {
		q.overridden = make([]bool, len(ix.guards))
		for _, name := range overrides {
			i := slices.IndexFunc(ix.guards, func(g Guard) bool { return g.Name == name })
			switch {
			case i < 0:
				return nil, fmt.Errorf("%w: OverrideGuards(%q): no such guard; guards: %v", ErrInvalidOption, name, guardNames(ix.guards))
			case !ix.guards[i].Overridable:
				return nil, fmt.Errorf("%w: OverrideGuards(%q): the guard is mandatory and cannot be overridden", ErrInvalidOption, name)
			}
			q.overridden[i] = true
		}
	}
	return q, nil
}

// prereleaseRule applies the rule of routes between GA versions: with no
// channel and prereleases not allowed, a route from a GA version to a GA
// version enters no prerelease.
func (ix *Index) prereleaseRule(q *query, src, dst int32) *query {
	if q.channel != "" || q.prereleases || ix.pre[src] || dst >= 0 && ix.pre[dst] || !ix.anyPre {
		return q
	}
	r := *q
	r.exclude, r.excludeWhy = ix.pre, "is a prerelease: "+prereleaseRule
	return &r
}

// prereleaseRule says why a route between GA versions enters no
// prerelease, and what allows it.
const prereleaseRule = "a route between GA versions enters none unless prereleases are allowed (path.AllowPrereleases, or a channel listing it: path.WithChannel)"

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func guardNames(gs []Guard) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.Name
	}
	return out
}
