package path

import (
	"errors"
	"fmt"
	"slices"
)

// ErrInvalidOption is matched (errors.Is) by the errors of options that
// cannot apply: an invalid or duplicate guard, an override of an unknown or
// mandatory guard, or a track or guard option given to a query of a built
// Index.
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

// WithTrack selects the release track whose releases and UpgradePaths are
// used. The default is "", the default track. The last WithTrack wins.
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

// query is what a search needs to know of the caller's options.
type query struct {
	accepted    map[string]bool
	acceptAll   bool
	overridden  []bool // by guard index
	overrideAll bool
	// exclude[v]: v may not be entered (outside the channel, or a
	// prerelease on a route between GA versions); nil: none.
	exclude    []bool
	excludeWhy string
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
	q := &query{}
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

func guardNames(gs []Guard) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.Name
	}
	return out
}
