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

// ParseState parses "track=version,track=version" (spaces around the parts
// are ignored): "platform=13.01.0,kubernetes=v1.33.0". The default track ""
// is written "=v26.06" or, alone, as a bare version ("v26.06").
func ParseState(s string) (State, error) {
	st := State{}
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("path: empty state: want track=version[,track=version...]")
	}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		track, ver, ok := strings.Cut(part, "=")
		if !ok {
			if strings.Contains(s, ",") {
				return nil, fmt.Errorf("path: invalid state %q: %q is not track=version", s, part)
			}
			track, ver = "", part
		}
		track, ver = strings.TrimSpace(track), strings.TrimSpace(ver)
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
// on.
type UnknownTrackError struct {
	Track string `json:"track" yaml:"track"`
	// Tracks are the catalog's tracks, sorted.
	Tracks []string `json:"tracks" yaml:"tracks"`
}

// Error is `path: unknown track "kube": the catalog's tracks: kubernetes, platform`.
func (e *UnknownTrackError) Error() string {
	return fmt.Sprintf("path: unknown track %q: the catalog's tracks: %s", e.Track, trackList(e.Tracks))
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

// StateNoRouteError says why no sequence of allowed states joins From to
// To. Either one track cannot reach its target at all (Track and Err, the
// track's own *NoRouteError, say which and why), or every track can but the
// supports constraints of the releases refuse every sequence: Blocks lists
// the constraints that refused a move out of a reachable state, or the
// target state itself (Target set).
type StateNoRouteError struct {
	From State `json:"from" yaml:"from"`
	To   State `json:"to" yaml:"to"`
	// Track is the track that cannot reach its target version, if any.
	Track string `json:"track,omitempty" yaml:"track,omitempty"`
	// Err is that track's error.
	Err error `json:"-" yaml:"-"`
	// Target is set when the target state itself is not allowed.
	Target bool `json:"target,omitempty" yaml:"target,omitempty"`
	// Blocks are the constraints in the way, sorted, without repeats.
	Blocks []Incompatibility `json:"blocks,omitempty" yaml:"blocks,omitempty"`
	// States is how many states the search explored.
	States int `json:"states" yaml:"states"`
}

// Error says what blocks the route.
func (e *StateNoRouteError) Error() string { return e.Explain(nil) }

// Explain is Error with the relaxations of a track's error written by text
// (see NoRouteError.Explain).
func (e *StateNoRouteError) Explain(text RelaxationText) string {
	head := fmt.Sprintf("path: no route from %s to %s", e.From, e.To)
	if e.Err != nil {
		msg := e.Err.Error()
		var nr *NoRouteError
		if errors.As(e.Err, &nr) {
			msg = nr.Explain(text)
		}
		return head + ": track " + e.Track + " cannot reach its target: " + strings.TrimPrefix(msg, "path: ")
	}
	var parts []string
	for i, b := range e.Blocks {
		if i == listMax {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Blocks)-listMax))
			break
		}
		parts = append(parts, b.String())
	}
	if e.Target {
		return head + ": the target state is not allowed: " + strings.Join(parts, "; ")
	}
	return head + ": every track reaches its target, but compatibility blocks every sequence: " + strings.Join(parts, "; ")
}

// Is reports whether target is ErrNoRoute.
func (e *StateNoRouteError) Is(target error) bool { return target == ErrNoRoute }

// Unwrap returns the track's error, if any.
func (e *StateNoRouteError) Unwrap() error { return e.Err }
