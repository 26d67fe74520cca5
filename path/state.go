package path

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/release"
)

// State is the version of each track a system runs, e.g. platform 13.01.0
// with kubernetes v1.33.0. A target State may name only some tracks.
type State map[string]release.Version

// ParseState parses a state: a version, the state of a one-track system
// ("v26.06", on the default track "", also written "=v26.06"; Resolve puts
// it on the one track that has it when the catalog has no default track),
// or one version per track, "track=version,track=version" (spaces around
// the parts are ignored): "platform=13.01.0,kubernetes=v1.33.0". Its
// errors quote the state and say which part is wrong and how.
func ParseState(s string) (State, error) {
	st := State{}
	if strings.TrimSpace(s) == "" {
		return nil, errors.New(`path: empty state: want a version ("v26.09") or one version per track ("platform=27.03.0,kubernetes=v1.34.1")`)
	}
	i := 0
	for part := range strings.SplitSeq(s, ",") {
		i++
		part = strings.TrimSpace(part)
		track, ver, ok := strings.Cut(part, "=")
		if !ok {
			if strings.Contains(s, ",") {
				return nil, fmt.Errorf("path: invalid state %q: part %d, %q, is not track=version: a state of several tracks names the track of each version", s, i, part)
			}
			track, ver = "", part
		}
		track, ver = strings.TrimSpace(track), strings.TrimSpace(ver)
		if err := release.CheckTrackName(track); err != nil {
			return nil, fmt.Errorf("path: invalid state %q: %w", s, err)
		}
		v, err := release.ParseVersion(ver)
		if err != nil {
			return nil, fmt.Errorf("path: invalid state %q: track %q: %w", s, track, err)
		}
		if _, dup := st[track]; dup {
			return nil, fmt.Errorf("path: invalid state %q: track %q is given twice", s, track)
		}
		st[track] = v
	}
	return st, nil
}

// MustParseState is ParseState for states known to be valid (tests,
// examples, constants): it panics on an error.
func MustParseState(s string) State {
	st, err := ParseState(s)
	if err != nil {
		panic(err)
	}
	return st
}

// Tracks returns the tracks s names, sorted.
func (s State) Tracks() []string {
	out := make([]string, 0, len(s))
	for t := range s {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// String is "track=version,..." sorted by track; a lone default track is
// its bare version.
func (s State) String() string {
	if v, ok := s[""]; ok && len(s) == 1 {
		return v.String()
	}
	parts := make([]string, 0, len(s))
	for _, t := range s.Tracks() {
		parts = append(parts, t+"="+s[t].String())
	}
	return strings.Join(parts, ",")
}

// Clone returns a copy of s.
func (s State) Clone() State {
	if s == nil {
		return nil
	}
	out := make(State, len(s))
	for t, v := range s {
		out[t] = v
	}
	return out
}

// ErrUnknownTrack is matched (errors.Is) by every *UnknownTrackError.
var ErrUnknownTrack = errors.New("path: unknown track")

// UnknownTrackError says a state names a track the catalog has no releases
// on. Track "" with Version set is a version without a track name (a bare
// version, or "=VERSION") in a catalog without a default track that not
// exactly one track has (see Resolve).
type UnknownTrackError struct {
	Track string `json:"track" yaml:"track"`
	// Tracks are the catalog's tracks, sorted.
	Tracks []string `json:"tracks" yaml:"tracks"`
	// Version is the version given without a track name, if that is what
	// the state gives the empty track.
	Version release.Version `json:"version,omitzero" yaml:"version,omitempty"`
	// Role is "current" or "target": the state that gives Version.
	Role string `json:"role,omitempty" yaml:"role,omitempty"`
	// OnTracks are the tracks that have Version, sorted: none, or more
	// than one.
	OnTracks []string `json:"onTracks,omitempty" yaml:"onTracks,omitempty"`
}

// Error is `path: unknown track "kube": the catalog's tracks: kubernetes,
// platform`, or for a version without a track `path: target version v2.0
// names no track ...; tracks a, b have v2.0: name one (the command line:
// --to a=v2.0 or --to b=v2.0)`.
func (e *UnknownTrackError) Error() string {
	if e.Track != "" || e.Version.IsZero() {
		return fmt.Sprintf("path: unknown track %q: the catalog's tracks: %s", e.Track, trackList(e.Tracks))
	}
	role := ""
	if e.Role != "" {
		role = e.Role + " "
	}
	head := fmt.Sprintf("path: %sversion %s names no track (its track is empty) and the catalog has no default track; ", role, e.Version)
	flag := "--" + roleFlag(e.Role)
	if len(e.OnTracks) == 0 {
		return head + fmt.Sprintf("no track has %s: give track=version, the catalog's tracks: %s (the command line: %s TRACK=VERSION)",
			e.Version, trackList(e.Tracks), flag)
	}
	ways := make([]string, len(e.OnTracks))
	for i, t := range e.OnTracks {
		ways[i] = flag + " " + t + "=" + e.Version.String()
	}
	return head + fmt.Sprintf("tracks %s have %s: name one (the command line: %s)", strings.Join(e.OnTracks, ", "), e.Version, strings.Join(ways, " or "))
}

// withTracks returns s with a version given without a track name (track
// "") moved to the one track of c that has it, when c has no default
// track; role ("current", "target") names s in errors. s itself is not
// changed.
func withTracks(c *release.Catalog, s State, role string) (State, error) {
	v, ok := s[""]
	all := c.Tracks()
	if !ok || slices.Contains(all, "") {
		return s, nil
	}
	var on []string
	for _, t := range all {
		if slices.ContainsFunc(c.TrackVersions(t), v.Equal) {
			on = append(on, t)
		}
	}
	if len(on) != 1 {
		return nil, &UnknownTrackError{Tracks: all, Version: v, Role: role, OnTracks: on}
	}
	t := on[0]
	if w, dup := s[t]; dup {
		return nil, fmt.Errorf("%w: the %s state gives track %s twice: %s=%s, and %s without a track name", ErrInvalidOption, role, t, t, w, v)
	}
	out := s.Clone()
	delete(out, "")
	out[t] = v
	return out, nil
}

// Is reports whether target is ErrUnknownTrack.
func (e *UnknownTrackError) Is(target error) bool { return target == ErrUnknownTrack }

func trackList(ts []string) string {
	if len(ts) == 0 {
		return "none"
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t
		if t == "" {
			out[i] = `"" (the default track)`
		}
	}
	return strings.Join(out, ", ")
}

// Incompatibility is a supports constraint that refuses a state: the
// release Version of Track runs only with the versions Constraint admits of
// Other, and the state has Got.
type Incompatibility struct {
	Track      string             `json:"track" yaml:"track"`
	Version    release.Version    `json:"version" yaml:"version"`
	Other      string             `json:"other" yaml:"other"`
	Constraint release.Constraint `json:"constraint" yaml:"constraint"`
	Got        release.Version    `json:"got" yaml:"got"`
}

// String is "platform 13.01.2 supports kubernetes >= v1.32.0, < v1.35.0, not v1.35.0".
func (i Incompatibility) String() string {
	return fmt.Sprintf("%s %s supports %s %s, not %s", i.Track, i.Version, i.Other, i.Constraint, i.Got)
}

// explainStates is Explain for a query across tracks.
func (e *NoRouteError) explainStates(text RelaxationText) string {
	if len(e.ToState) == 0 {
		return fmt.Sprintf("path: no version of tracks %s is reachable from %s", trackList(e.FromState.Tracks()), e.FromState)
	}
	head := fmt.Sprintf("path: no route from %s to %s", e.FromState, e.ToState)
	if e.Limit > 0 {
		head += " found"
	}
	var parts []string
	if len(e.Current) > 0 {
		parts = append(parts, "the current state is not allowed ("+joinBlocks(e.Current)+")")
	}
	switch {
	case e.Static != "":
		parts = append(parts, e.Static)
	case e.Limit > 0:
		parts = append(parts, fmt.Sprintf("the search stopped at its limit of %d states (16 x the %d versions of the tracks squared, at most %d); give a target version for more tracks, or resolve in steps through an intermediate state",
			e.Limit, e.Versions, maxStateLimit))
	case e.Err != nil:
		msg := e.Err.Error()
		var nr *NoRouteError
		if errors.As(e.Err, &nr) {
			msg = nr.Explain(text)
		}
		if len(e.Relaxations) > 0 { // what gives a route through the states comes first
			parts = append(parts, relaxationText(text)(e.Relaxations, true))
		}
		parts = append(parts, "track "+e.Track+" cannot reach its target: "+strings.TrimPrefix(msg, "path: "))
	case e.TargetNotAllowed:
		parts = append(parts, "the target state is not allowed: "+joinBlocks(e.Blocks))
	case len(e.Relaxations) > 0:
		parts = append(parts, "every track reaches its target, but compatibility blocks every sequence",
			relaxationText(text)(e.Relaxations, true), "the constraints in the way: "+joinBlocks(e.Blocks))
	default:
		parts = append(parts, "every track reaches its target, but compatibility blocks every sequence: "+joinBlocks(e.Blocks))
	}
	return head + ": " + strings.Join(parts, "; ")
}

// joinBlocks says what bs say, one part per constraint: the versions of
// the track whose releases have it, and the versions of the other track it
// refuses ("platform 27.03.0 and 27.03.1 support kubernetes >= v1.33.0,
// < v1.36.0, not v1.32.0 or v1.32.1"), each list and the parts at most
// listMax long, in the order of bs.
func joinBlocks(bs []Incompatibility) string {
	type group struct {
		b       Incompatibility
		vs, got []release.Version
		seenV   map[string]bool
		seenGot map[string]bool
	}
	var groups []*group
	byKey := map[[3]string]*group{}
	for _, b := range bs {
		k := [3]string{b.Track, b.Other, b.Constraint.String()}
		g := byKey[k]
		if g == nil {
			g = &group{b: b, seenV: map[string]bool{}, seenGot: map[string]bool{}}
			byKey[k] = g
			groups = append(groups, g)
		}
		if v := b.Version.String(); !g.seenV[v] {
			g.seenV[v] = true
			g.vs = append(g.vs, b.Version)
		}
		if v := b.Got.String(); !g.seenGot[v] {
			g.seenGot[v] = true
			g.got = append(g.got, b.Got)
		}
	}
	var parts []string
	for i, g := range groups {
		if i == listMax {
			parts = append(parts, fmt.Sprintf("and %d more", len(groups)-listMax))
			break
		}
		slices.SortFunc(g.vs, cmpVersion)
		slices.SortFunc(g.got, cmpVersion)
		verb := "supports"
		if len(g.vs) > 1 {
			verb = "support"
		}
		parts = append(parts, fmt.Sprintf("%s %s %s %s %s, not %s", g.b.Track, listVersions(g.vs, "and"), verb, g.b.Other, g.b.Constraint, listVersions(g.got, "or")))
	}
	return strings.Join(parts, "; ")
}

// listVersions is "a", "a and b", "a, b and c", or with more than listMax
// "a, ..., h and N more" (word: "and" or "or").
func listVersions(vs []release.Version, word string) string {
	names := make([]string, 0, min(len(vs), listMax))
	for i, v := range vs {
		if i == listMax {
			return strings.Join(names, ", ") + " " + word + fmt.Sprintf(" %d more", len(vs)-listMax)
		}
		names = append(names, v.String())
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + word + " " + names[len(names)-1]
}

// relaxationText is text, or the default when nil.
func relaxationText(text RelaxationText) RelaxationText {
	if text == nil {
		return defaultRelaxationText
	}
	return text
}
