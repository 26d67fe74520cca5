package path

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hopdag/hopdag/release"
)

// Hop is one step of a Route: an upgrade from one release to the next.
//
// Rule is a copy of the rule that allowed the edge; PreChecks, PostChecks and
// Risks are the same slices as Rule's.
type Hop struct {
	// Track is the track the hop moves, in a route across tracks; "" in a
	// one-track route (the Route's Track).
	Track string          `json:"track,omitempty" yaml:"track,omitempty"`
	From  release.Version `json:"from" yaml:"from"`
	To    release.Version `json:"to" yaml:"to"`
	// Rule is the rule that allowed the edge (a copy).
	Rule release.Rule `json:"rule" yaml:"rule"`
	// PreChecks run before the hop's components, PostChecks after.
	PreChecks  []release.Check `json:"preChecks,omitempty" yaml:"preChecks,omitempty"`
	PostChecks []release.Check `json:"postChecks,omitempty" yaml:"postChecks,omitempty"`
	// Risks are the risks of the edge, all accepted by the caller.
	Risks []release.Risk `json:"risks,omitempty" yaml:"risks,omitempty"`
	// Deprecated is the rule's deprecation reason, "" if none.
	Deprecated string `json:"deprecated,omitempty" yaml:"deprecated,omitempty"`
	// Overrides names the overridable guards the caller overrode on this hop.
	Overrides []string `json:"overrides,omitempty" yaml:"overrides,omitempty"`
	// ToDeprecated is the deprecation reason the track's UpgradePath versions
	// list gives for To, "" if none.
	ToDeprecated string `json:"toDeprecated,omitempty" yaml:"toDeprecated,omitempty"`
	// Why says, on a hop with a deprecated edge or into a deprecated
	// version, why it was still used: every route has as many.
	Why string `json:"why,omitempty" yaml:"why,omitempty"`
}

// Route is the chain of hops from Route.From to Route.To on Route.Track. An
// empty Hops means From is To. Versions are spelled as the catalog's
// Releases spell them.
type Route struct {
	Track string          `json:"track,omitempty" yaml:"track,omitempty"`
	From  release.Version `json:"from" yaml:"from"`
	To    release.Version `json:"to" yaml:"to"`
	Hops  []Hop           `json:"hops" yaml:"hops"`
	// FromState and ToState are the states of a route across tracks, nil
	// for a one-track route. Track, From and To are then
	// those of the first track.
	FromState State `json:"fromState,omitempty" yaml:"fromState,omitempty"`
	ToState   State `json:"toState,omitempty" yaml:"toState,omitempty"`
}

// States returns the state before each hop and after the last (FromState
// first), for a route across tracks; nil for a one-track route.
func (r *Route) States() []State {
	if r.FromState == nil {
		return nil
	}
	out := []State{r.FromState.Clone()}
	for _, h := range r.Hops {
		s := out[len(out)-1].Clone()
		s[h.Track] = h.To
		out = append(out, s)
	}
	return out
}

// Versions returns From followed by the To of every hop.
func (r *Route) Versions() []release.Version {
	out := make([]release.Version, 0, len(r.Hops)+1)
	out = append(out, r.From)
	for _, h := range r.Hops {
		out = append(out, h.To)
	}
	return out
}

// Clone returns a deep copy of r.
func (r *Route) Clone() *Route {
	if r == nil {
		return nil
	}
	out := *r
	out.FromState, out.ToState = r.FromState.Clone(), r.ToState.Clone()
	out.Hops = make([]Hop, len(r.Hops))
	for i, h := range r.Hops {
		h.Rule = *h.Rule.DeepCopy()
		h.PreChecks, h.PostChecks, h.Risks = h.Rule.PreChecks, h.Rule.PostChecks, h.Rule.Risks
		h.Overrides = append([]string(nil), h.Overrides...)
		out.Hops[i] = h
	}
	return &out
}

// String prints a header line, then one line per hop with its checks,
// risks, deprecation and overrides. The output is deterministic:
//
//	v26.03 -> v26.09: 2 hops
//	  1. v26.03 -> v26.06  pre: cluster-healthy, etcd-backup  post: nodes-ready
//	  2. v26.06 -> v26.09  pre: cluster-healthy, registry-mirror-reachable (optional)  post: nodes-ready
//
// Optional checks (required: false) are marked "(optional)".
func (r *Route) String() string {
	if r == nil {
		return "<nil route>"
	}
	var b strings.Builder
	if r.FromState != nil {
		b.WriteString(r.FromState.String())
		b.WriteString(" -> ")
		b.WriteString(r.ToState.String())
	} else {
		b.WriteString(r.From.String())
		b.WriteString(" -> ")
		b.WriteString(r.To.String())
	}
	if r.Track != "" && r.FromState == nil {
		b.WriteString(" on track ")
		b.WriteString(r.Track)
	}
	switch len(r.Hops) {
	case 0:
		b.WriteString(": no hops, already there\n")
		return b.String()
	case 1:
		b.WriteString(": 1 hop\n")
	default:
		fmt.Fprintf(&b, ": %d hops\n", len(r.Hops))
	}
	for i, h := range r.Hops {
		b.WriteString("  ")
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString(". ")
		b.WriteString(h.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// String prints the hop on one line: "[track ]v26.03 -> v26.06  pre: ...  post: ...
// risks: ...  deprecated: ...  overrides: ...", each part only when not empty.
func (h Hop) String() string {
	var b strings.Builder
	if h.Track != "" {
		b.WriteString(h.Track)
		b.WriteByte(' ')
	}
	b.WriteString(h.From.String())
	b.WriteString(" -> ")
	b.WriteString(h.To.String())
	if h.ToDeprecated != "" {
		fmt.Fprintf(&b, " (deprecated version: %q)", h.ToDeprecated)
	}
	checks := func(label string, cs []release.Check) {
		if len(cs) == 0 {
			return
		}
		b.WriteString("  ")
		b.WriteString(label)
		b.WriteString(": ")
		for i, c := range cs {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c.Name)
			if !c.Required {
				b.WriteString(" (optional)")
			}
		}
	}
	checks("pre", h.PreChecks)
	checks("post", h.PostChecks)
	if len(h.Risks) > 0 {
		b.WriteString("  risks: ")
		for i, r := range h.Risks {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(r.Name)
			if r.Message != "" {
				fmt.Fprintf(&b, " (%q)", r.Message)
			}
		}
	}
	if h.Deprecated != "" {
		fmt.Fprintf(&b, "  deprecated: %q", h.Deprecated)
	}
	if h.Why != "" {
		fmt.Fprintf(&b, " (%s)", h.Why)
	}
	if len(h.Overrides) > 0 {
		b.WriteString("  overrides: ")
		b.WriteString(strings.Join(h.Overrides, ", "))
	}
	return b.String()
}

// Target is a state a system can move to: a version of its one track, or,
// from a state across tracks, a version of one of its tracks (the others
// moving as the route needs).
type Target struct {
	// Track is the track of Version, for a target across tracks; "" for
	// one track (as Hop.Track).
	Track   string          `json:"track,omitempty" yaml:"track,omitempty"`
	Version release.Version `json:"version" yaml:"version"`
	// Hops is the number of hops of the best route.
	Hops int `json:"hops" yaml:"hops"`
	// Deprecated is how many deprecated edges and versions the best route
	// uses (0 for a clean route).
	Deprecated int `json:"deprecated,omitempty" yaml:"deprecated,omitempty"`

	tree  *tree  // one track: the predecessor tree of the Targets call
	node  int32  //
	route *Route // across tracks: the route Resolve returned
}

// State is the target as a state: {Track: Version}.
func (t Target) State() State { return State{t.Track: t.Version} }

// Next returns the first hop of t.Route() without building the rest of the
// route: the hop a system takes now toward t.Version. Over all the targets
// of one Targets call it costs time linear in their number (the first call
// finds every target's first hop at once); nil for the zero Target.
func (t Target) Next() *Hop {
	if t.route != nil {
		h := t.route.Clone().Hops[0]
		return &h
	}
	if t.tree == nil {
		return nil
	}
	first := t.tree.firsts()
	h := t.tree.ix.hop(t.tree.pred[first[t.node]], t.tree.arc[first[t.node]])
	h.explain(t.why(), t.Hops == 1)
	return &h
}

// Last returns the last hop of t.Route() (into t.Version, with its
// ToDeprecated), in constant time; nil for the zero Target.
func (t Target) Last() *Hop {
	if t.route != nil {
		h := t.route.Clone().Hops[len(t.route.Hops)-1]
		return &h
	}
	if t.tree == nil {
		return nil
	}
	h := t.tree.ix.hop(t.tree.pred[t.node], t.tree.arc[t.node])
	h.explain(t.why(), true)
	return &h
}

// why is the Why of the deprecated hops of t's route, as Route says it.
func (t Target) why() string {
	ix := t.tree.ix
	return deprecatedWhy(ix.versions[t.tree.src], t.Version, t.Deprecated, ix.vdep[t.node] != "")
}

// Route builds the route Resolve returns to t.Version. The Targets call
// keeps only a predecessor tree (across tracks, the route itself); each
// call builds a new Route in time linear in its hops. The zero Target has
// no route (nil).
func (t Target) Route() *Route {
	if t.route != nil {
		return t.route.Clone()
	}
	if t.tree == nil {
		return nil
	}
	return t.tree.route(t.node)
}

// deprecated counts the deprecated edges and versions r's hops use.
func (r *Route) deprecated() int {
	n := 0
	for _, h := range r.Hops {
		if h.Deprecated != "" {
			n++
		}
		if h.ToDeprecated != "" {
			n++
		}
	}
	return n
}
