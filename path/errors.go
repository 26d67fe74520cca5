package path

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/internal/english"
	"github.com/hopdag/hopdag/release"
)

// ErrNoRoute is matched (errors.Is) by every *NoRouteError.
var ErrNoRoute = errors.New("path: no route")

// ErrUnknownVersion is matched (errors.Is) by every *UnknownVersionError.
var ErrUnknownVersion = errors.New("path: unknown version")

// UnknownVersionError says a version has no Release on the track.
type UnknownVersionError struct {
	// Version is the version asked for.
	Version release.Version `json:"version" yaml:"version"`
	// Nearest are the known versions closest to Version, ascending: up to two
	// below it and up to two above it.
	Nearest []release.Version `json:"nearest,omitempty" yaml:"nearest,omitempty"`
	// Track is the track searched.
	Track string `json:"track,omitempty" yaml:"track,omitempty"`
	// Role is "current" or "target".
	Role string `json:"role,omitempty" yaml:"role,omitempty"`
	// Tracks are the catalog's tracks, sorted, when Track has no releases.
	Tracks []string `json:"tracks,omitempty" yaml:"tracks,omitempty"`
	// OnTracks are the other tracks that have Version, sorted.
	OnTracks []string `json:"onTracks,omitempty" yaml:"onTracks,omitempty"`
}

// Error is "path: unknown target version v26.07: nearest known versions: v26.06, ...".
func (e *UnknownVersionError) Error() string {
	var b strings.Builder
	b.WriteString("path: unknown ")
	if e.Role != "" {
		b.WriteString(e.Role)
		b.WriteString(" ")
	}
	b.WriteString("version ")
	b.WriteString(quoteVersion(e.Version))
	b.WriteString(onTrack(e.Track))
	if len(e.OnTracks) > 0 {
		fmt.Fprintf(&b, ": %s is a version of track %s, not of this one; give a state, one version per track (the command line: --%s %s=%s,...)",
			e.Version, strings.Join(e.OnTracks, ", "), roleFlag(e.Role), e.OnTracks[0], e.Version)
		return b.String()
	}
	if len(e.Nearest) == 0 {
		b.WriteString(": the track has no releases")
		if len(e.Tracks) > 0 {
			b.WriteString("; the catalog's tracks: ")
			b.WriteString(trackList(e.Tracks))
		}
		return b.String()
	}
	b.WriteString(": no release has it; nearest known versions: ")
	b.WriteString(joinVersions(e.Nearest, 0))
	return b.String()
}

// roleFlag is the command line's flag for a role.
func roleFlag(role string) string {
	if role == "target" {
		return "to"
	}
	return "from"
}

// Is reports whether target is ErrUnknownVersion.
func (e *UnknownVersionError) Is(target error) bool { return target == ErrUnknownVersion }

// ClosedEdge is an edge some rule gives that the search could not use.
type ClosedEdge struct {
	From release.Version `json:"from" yaml:"from"`
	To   release.Version `json:"to" yaml:"to"`
	// Rule is the blocking rule when Blocked is set, else the rule recorded
	// for the edge (a copy).
	Rule release.Rule `json:"rule" yaml:"rule"`
	// Blocked is the reason of the blocking rule, when a rule blocks the edge.
	Blocked string `json:"blocked,omitempty" yaml:"blocked,omitempty"`
	// NotInstallable is set when To is marked installable: false.
	NotInstallable bool `json:"notInstallable,omitempty" yaml:"notInstallable,omitempty"`
	// Risks are the risks of the edge the caller did not accept.
	Risks []release.Risk `json:"risks,omitempty" yaml:"risks,omitempty"`
	// Guards are the guards the edge violates: mandatory ones, and
	// overridable ones the caller did not override.
	Guards []GuardViolation `json:"guards,omitempty" yaml:"guards,omitempty"`
	// Excluded says why the query may not enter To (outside the chosen
	// channel, or a prerelease between GA versions), "" if it may.
	Excluded string `json:"excluded,omitempty" yaml:"excluded,omitempty"`
}

// Reason says in words why the edge is closed.
func (e ClosedEdge) Reason() string {
	switch {
	case e.Blocked != "":
		return "blocked: " + e.Blocked
	case e.NotInstallable:
		return e.To.String() + " is not installable"
	case e.Excluded != "":
		return e.To.String() + " " + e.Excluded
	}
	var parts []string
	for _, r := range e.Risks {
		s := "risk " + r.Name + " not accepted"
		if r.Message != "" {
			s += fmt.Sprintf(" (%s)", r.Message)
		}
		parts = append(parts, s)
	}
	for _, g := range e.Guards {
		kind := "mandatory guard "
		if g.Overridable {
			kind = "guard "
		}
		parts = append(parts, kind+g.Guard+": "+g.Message)
	}
	return strings.Join(parts, "; ")
}

// String is "from -> to: reason".
func (e ClosedEdge) String() string {
	return e.edge() + ": " + e.Reason()
}

func (e ClosedEdge) edge() string { return e.From.String() + " -> " + e.To.String() }

// reasons are the parts of Reason: each risk not accepted and each guard
// violated on its own, or the one reason a blocked, not installable or
// excluded edge has.
func (e ClosedEdge) reasons() []string {
	if e.Blocked != "" || e.NotInstallable || e.Excluded != "" || len(e.Risks)+len(e.Guards) <= 1 {
		return []string{e.Reason()}
	}
	out := make([]string, 0, len(e.Risks)+len(e.Guards))
	for _, r := range e.Risks {
		out = append(out, ClosedEdge{Risks: []release.Risk{r}}.Reason())
	}
	for _, g := range e.Guards {
		out = append(out, ClosedEdge{Guards: []GuardViolation{g}}.Reason())
	}
	return out
}

// closedText says why the edges cs are closed, each reason once (a risk's
// message, a guard's, a blocking rule's) after the edges it closes, and
// reasons that close the same edges together: "v1.0 -> v1.1: blocked:
// ..." for the reasons of one edge, "50 edges (v1.0 -> v1.50, ... and 42
// more): risk r1 not accepted (...); risk r2 not accepted (...)" for
// reasons many edges share. Groups come in the order of the first edge
// they close (cs is sorted by From, then To); at most listMax reasons,
// and listMax edges of each group, are named, then "and N more reasons"
// and "and N more".
func closedText(cs []ClosedEdge) string {
	var reasons []string
	edges := map[string][]string{}
	for _, c := range cs {
		for _, r := range c.reasons() {
			if _, ok := edges[r]; !ok {
				reasons = append(reasons, r)
			}
			edges[r] = append(edges[r], c.edge())
		}
	}
	type group struct {
		edges   []string
		reasons []string
	}
	var groups []*group
	byEdges := map[string]*group{}
	for i, r := range reasons {
		if i == listMax {
			break
		}
		k := strings.Join(edges[r], "\x00")
		g := byEdges[k]
		if g == nil {
			g = &group{edges: edges[r]}
			byEdges[k] = g
			groups = append(groups, g)
		}
		g.reasons = append(g.reasons, r)
	}
	out := make([]string, 0, len(groups)+1)
	for _, g := range groups {
		why := strings.Join(g.reasons, "; ")
		if len(g.edges) == 1 {
			out = append(out, g.edges[0]+": "+why)
			continue
		}
		named := strings.Join(g.edges[:min(len(g.edges), listMax)], ", ")
		if len(g.edges) > listMax {
			named += fmt.Sprintf(" and %d more", len(g.edges)-listMax)
		}
		out = append(out, fmt.Sprintf("%d edges (%s): %s", len(g.edges), named, why))
	}
	if len(reasons) > listMax {
		out = append(out, fmt.Sprintf("and %d more reasons", len(reasons)-listMax))
	}
	return strings.Join(out, "; ")
}

// NoRouteError says why no route joins From to To, or, from Targets (To is
// then the zero Version), why no version is reachable from From.
//
// Across tracks, FromState and ToState are the states asked for (ToState
// empty from Targets), and either one track cannot reach its target at all
// (Track and Err, the track's own *NoRouteError, say which and why), or
// every track can but the supports constraints of the releases refuse
// every sequence: Blocks lists the constraints that refused a move out of
// a reachable state, or the target state itself (TargetNotAllowed set).
// The fields of one track (From to NotInstallableReason, Excluded,
// Channel) are then empty: Err has them.
type NoRouteError struct {
	Track string          `json:"track,omitempty" yaml:"track,omitempty"`
	From  release.Version `json:"from" yaml:"from"`
	To    release.Version `json:"to" yaml:"to"`
	// Reachable are the versions reachable from From, descending: the
	// furthest (nearest the target) first (From excluded).
	Reachable []release.Version `json:"reachable" yaml:"reachable"`
	// Reaching are the versions from which To is reachable, ascending (To
	// excluded). Empty for Targets.
	Reaching []release.Version `json:"reaching" yaml:"reaching"`
	// Closed are the closed edges that would have joined them: from From or a
	// Reachable version, to To or a Reaching version (for Targets: to any
	// version). Sorted by From then To.
	Closed []ClosedEdge `json:"closed,omitempty" yaml:"closed,omitempty"`
	// Relaxations is a minimal set of relaxations that, together, give a
	// route: every one is needed (dropping any one gives no route), in the
	// order of the route's hops; when at most 8 risks and guards are in
	// play on one track, no smaller set gives a route (across tracks no
	// smaller set is looked for on other routes, and the set may name
	// more than the track's own Err: that says what the track needs
	// alone). For Targets: the relaxations each of which opens some closed
	// edge out of the reachable versions. Empty when no relaxation gives
	// a route.
	Relaxations []Relaxation `json:"relaxations,omitempty" yaml:"relaxations,omitempty"`
	// Risks and Overrides are the names in Relaxations, by kind.
	Risks     []string `json:"risks,omitempty" yaml:"risks,omitempty"`
	Overrides []string `json:"overrides,omitempty" yaml:"overrides,omitempty"`
	// Relaxed is the route Relaxations give; nil when there is none.
	Relaxed *Route `json:"relaxed,omitempty" yaml:"relaxed,omitempty"`
	// Downgrade is set when To sorts before From.
	Downgrade bool `json:"downgrade,omitempty" yaml:"downgrade,omitempty"`
	// NotInstallable is set when To is marked installable: false.
	NotInstallable bool `json:"notInstallable,omitempty" yaml:"notInstallable,omitempty"`
	// NotInstallableReason is the deprecation reason the versions list gives
	// for To, if any.
	NotInstallableReason string `json:"notInstallableReason,omitempty" yaml:"notInstallableReason,omitempty"`
	// Excluded are the versions the query may not enter that stand in the
	// way, set when that is what does: To itself, when it is outside the
	// channel; else, when no route keeps out of them (whatever risks are
	// accepted and guards overridden) but one enters them, the excluded
	// versions the best such route enters, in route order. Empty for
	// Targets.
	Excluded []ExcludedVersion `json:"excluded,omitempty" yaml:"excluded,omitempty"`
	// Channel is the channel that excludes them; "" when the prerelease
	// rule does (a route between GA versions enters no prerelease unless
	// prereleases are allowed).
	Channel string `json:"channel,omitempty" yaml:"channel,omitempty"`

	// FromState and ToState are the states of a query across tracks, nil
	// for one track.
	FromState State `json:"fromState,omitempty" yaml:"fromState,omitempty"`
	ToState   State `json:"toState,omitempty" yaml:"toState,omitempty"`
	// Err is, across tracks, the error of Track, the track that cannot
	// reach its target version on its own (a *NoRouteError of one track).
	Err error `json:"-" yaml:"-"`
	// TargetNotAllowed is set when the target state itself is not allowed.
	TargetNotAllowed bool `json:"targetNotAllowed,omitempty" yaml:"targetNotAllowed,omitempty"`
	// Blocks are the supports constraints in the way, sorted, without
	// repeats.
	Blocks []Incompatibility `json:"blocks,omitempty" yaml:"blocks,omitempty"`
	// Current are the constraints the current state itself breaks, sorted:
	// it need not be allowed, but a route must leave it by a move that
	// mends them.
	Current []Incompatibility `json:"current,omitempty" yaml:"current,omitempty"`
	// States is how many states the search across tracks explored.
	States int `json:"states,omitempty" yaml:"states,omitempty"`
	// Static, when set, says what in the catalog rules out every route
	// across tracks, found before any search: a track's target that no
	// allowed state can hold beside the versions the other tracks can be
	// at.
	Static string `json:"static,omitempty" yaml:"static,omitempty"`
	// Limit, when set, is how many states the search may settle, and it
	// stopped there without an answer: a route may exist that it did not
	// reach. The limit is 16 x Versions^2, at least 65,536 and at most
	// 2,097,152, Versions the versions of the tracks searched.
	Limit    int `json:"limit,omitempty" yaml:"limit,omitempty"`
	Versions int `json:"versions,omitempty" yaml:"versions,omitempty"`
}

// Unwrap returns, across tracks, the error of the track that cannot reach
// its target, if any.
func (e *NoRouteError) Unwrap() error { return e.Err }

// ExcludedVersion is a version a query may not enter.
type ExcludedVersion struct {
	Version release.Version `json:"version" yaml:"version"`
	// Channels are the channels that list it, sorted, when a channel
	// excludes it.
	Channels []string `json:"channels,omitempty" yaml:"channels,omitempty"`
}

// Is reports whether target is ErrNoRoute.
func (e *NoRouteError) Is(target error) bool { return target == ErrNoRoute }

// RelaxationKind says what a Relaxation relaxes.
type RelaxationKind string

// The relaxations a NoRouteError may name.
const (
	// AcceptRisk accepts a risk by name ([AcceptRisks]).
	AcceptRisk RelaxationKind = "accept-risk"
	// OverrideGuard overrides an overridable guard ([OverrideGuards]).
	OverrideGuard RelaxationKind = "override-guard"
)

// Relaxation is one thing a caller may relax to get a route.
type Relaxation struct {
	Kind RelaxationKind `json:"kind" yaml:"kind"`
	Name string         `json:"name" yaml:"name"`
}

// String is "accept risk NAME" or "override guard NAME".
func (r Relaxation) String() string {
	if r.Kind == OverrideGuard {
		return "override guard " + r.Name
	}
	return "accept risk " + r.Name
}

func (e *NoRouteError) addRelaxation(r Relaxation) {
	if slices.Contains(e.Relaxations, r) {
		return
	}
	e.Relaxations = append(e.Relaxations, r)
	if r.Kind == OverrideGuard {
		e.Overrides = append(e.Overrides, r.Name)
	} else {
		e.Risks = append(e.Risks, r.Name)
	}
}

// RelaxationText says what a set of relaxations gives, for Explain. The
// default, used by Error, names them neutrally ("accept risk r1 and
// override guard soft"); a command line renders its own flags.
type RelaxationText func(rs []Relaxation, together bool) string

func defaultRelaxationText(rs []Relaxation, together bool) string {
	var risks, guards []string
	for _, r := range rs {
		if r.Kind == OverrideGuard {
			guards = append(guards, r.Name)
		} else {
			risks = append(risks, r.Name)
		}
	}
	var parts []string
	if len(risks) > 0 {
		parts = append(parts, "accept "+english.Plural(len(risks), "risk")+" "+strings.Join(risks, " and "))
	}
	if len(guards) > 0 {
		parts = append(parts, "override "+english.Plural(len(guards), "guard")+" "+strings.Join(guards, " and "))
	}
	switch {
	case !together:
		return strings.Join(parts, " and ") + " to open the closed edges out of the reachable versions"
	case len(rs) > 1:
		return strings.Join(parts, " and ") + ", together, to get a route"
	}
	return parts[0] + " to get a route"
}

const listMax = 8 // versions or edges an error message lists before "and N more"

// Error explains on one line what would give a route, or what stands in the
// way.
func (e *NoRouteError) Error() string { return e.Explain(nil) }

// Explain is Error with the relaxations written by text (nil: the neutral
// default of Error).
func (e *NoRouteError) Explain(text RelaxationText) string {
	if text == nil {
		text = defaultRelaxationText
	}
	if e.FromState != nil {
		return e.explainStates(text)
	}
	var b strings.Builder
	var parts []string
	if e.To.IsZero() {
		fmt.Fprintf(&b, "path: no version is reachable from %s%s", e.From, onTrack(e.Track))
	} else {
		fmt.Fprintf(&b, "path: no route from %s to %s%s", e.From, e.To, onTrack(e.Track))
	}
	switch {
	case e.NotInstallable:
		s := e.To.String() + " is marked installable: false"
		if e.NotInstallableReason != "" {
			s += " (" + e.NotInstallableReason + ")"
		}
		parts = append(parts, s)
	case e.Downgrade && e.Relaxed == nil:
		parts = append(parts, "it is a downgrade, and downgrades are refused unless a rule with an exact from allows them")
	}
	if s := e.exclusionText(); s != "" {
		parts = append(parts, s)
	}
	if len(e.Relaxations) > 0 {
		parts = append(parts, text(e.Relaxations, !e.To.IsZero()))
	}
	if len(e.Closed) > 0 {
		parts = append(parts, "closed edges: "+closedText(e.Closed))
	}
	if len(parts) == 0 {
		if len(e.Reachable) == 0 {
			parts = append(parts, "no usable rule leads out of "+e.From.String())
		} else {
			parts = append(parts, "reachable from "+e.From.String()+": "+joinVersions(e.Reachable, listMax))
		}
		if !e.To.IsZero() {
			if len(e.Reaching) == 0 {
				parts = append(parts, "no usable rule leads to "+e.To.String())
			} else {
				parts = append(parts, e.To.String()+" is reachable from: "+joinVersions(e.Reaching, listMax))
			}
		}
	}
	if len(parts) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(parts, "; "))
	}
	return b.String()
}

// exclusionText says what Excluded and Channel say, and the option that
// relaxes it; "" when they are empty, or when the closed edges name every
// excluded version (a single excluded version between the two sides).
func (e *NoRouteError) exclusionText() string {
	if len(e.Excluded) == 0 {
		return ""
	}
	if last := e.Excluded[len(e.Excluded)-1]; e.Channel != "" && last.Version.Equal(e.To) {
		if len(last.Channels) == 0 {
			return fmt.Sprintf("%s is not in channel %s (it is in no channel); choose no channel (path.WithChannel)", e.To, e.Channel)
		}
		return fmt.Sprintf("%s is not in channel %s (its channels: %s); choose a channel that lists it, or none (path.WithChannel)",
			e.To, e.Channel, strings.Join(last.Channels, ", "))
	}
	named := true
	for _, x := range e.Excluded {
		named = named && slices.ContainsFunc(e.Closed, func(c ClosedEdge) bool { return c.Excluded != "" && c.To.Equal(x.Version) })
	}
	if named {
		return ""
	}
	vs := make([]string, 0, len(e.Excluded))
	for i, x := range e.Excluded {
		if i == listMax {
			vs = append(vs, fmt.Sprintf("and %d more", len(e.Excluded)-listMax))
			break
		}
		s := x.Version.String()
		switch {
		case e.Channel == "":
		case len(x.Channels) == 0:
			s += " (in no channel)"
		default:
			s += " (channels: " + strings.Join(x.Channels, ", ") + ")"
		}
		vs = append(vs, s)
	}
	enters := "the best one enters " + strings.Join(vs, ", ")
	if e.Channel == "" {
		return "every route enters a prerelease: " + enters + "; " + prereleaseRule
	}
	them := "them"
	if len(e.Excluded) == 1 {
		them = "it"
	}
	return fmt.Sprintf("every route leaves channel %s: %s; choose a channel that lists %s, or none (path.WithChannel)", e.Channel, enters, them)
}

func onTrack(track string) string {
	if track == "" {
		return ""
	}
	return " on track " + track
}

func quoteVersion(v release.Version) string {
	if v.IsZero() {
		return `""`
	}
	return v.String()
}

// joinVersions joins vs with ", ", listing at most max (0: all).
func joinVersions(vs []release.Version, max int) string {
	var b strings.Builder
	for i, v := range vs {
		if max > 0 && i == max {
			fmt.Fprintf(&b, " and %d more", len(vs)-max)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}
