package controller

import (
	"fmt"
	"strings"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// position is where a system is or should be, as the ClusterVersion's
// spec and status spell it (v1alpha1.Target): a version on the
// ClusterVersion's track, or a state across tracks. Everything the
// reconciler and the webhook do with versions goes through it, so that a
// catalog of several tracks (StarlingX: the platform release and the
// Kubernetes version) is upgraded the same way as one of one track.
type position struct {
	v     release.Version
	state path.State // non-nil for a state
}

// parsePosition reads s: a state when it holds "=", else a version.
func parsePosition(s string) (position, error) {
	if !strings.Contains(s, "=") {
		v, err := release.ParseVersion(s)
		return position{v: v}, err
	}
	st, err := path.ParseState(s)
	if err != nil {
		return position{}, err
	}
	if _, ok := st[""]; ok {
		return position{}, fmt.Errorf("invalid state %q: every entry names its track (track=version)", s)
	}
	return position{state: st}, nil
}

func (p position) isState() bool { return p.state != nil }

// String is the version as the catalog spells it, or the state
// (track=version,... sorted by track).
func (p position) String() string {
	if p.isState() {
		return p.state.String()
	}
	return p.v.Original()
}

// satisfies reports whether a system at p is at target: the same version,
// or, for a state, the version of every track target names.
func (p position) satisfies(target position) bool {
	if p.isState() != target.isState() {
		return false
	}
	if !p.isState() {
		return p.v.Equal(target.v)
	}
	for track, v := range target.state {
		if cur, ok := p.state[track]; !ok || !cur.Equal(v) {
			return false
		}
	}
	return true
}

// before reports whether going from q to p moves some track back: p is
// an earlier version than q, or a state naming a track at an earlier
// version than q's (a downgrade, which routes refuse).
func (p position) before(q position) bool {
	if p.isState() != q.isState() {
		return false
	}
	if !p.isState() {
		return p.v.Compare(q.v) < 0
	}
	for track, v := range p.state {
		if cur, ok := q.state[track]; ok && v.Compare(cur) < 0 {
			return true
		}
	}
	return false
}

// samePosition reports whether two spellings name the same position
// ("26.09" and "v26.09"; a state's tracks in another order); spellings
// that do not parse are compared as text.
func samePosition(a, b string) bool {
	pa, errA := parsePosition(a)
	pb, errB := parsePosition(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return pa.satisfies(pb) && pb.satisfies(pa)
}

// resolve finds the route from from to to: on spec's track for versions,
// across tracks for states (path.ResolveState).
func resolve(cat *release.Catalog, spec *v1alpha1.ClusterVersionSpec, from, to position) (*path.Route, error) {
	switch {
	case from.isState() && to.isState():
		return path.ResolveState(cat, from.state, to.state, stateOptions(spec)...)
	case !from.isState() && !to.isState():
		return path.Resolve(cat, from.v, to.v, routeOptions(spec)...)
	}
	return nil, fmt.Errorf("%w: the system is at %s and desiredVersion is %s: give both as versions on one track, or both as states (track=version,...)", path.ErrInvalidOption, from, to)
}

// known reports whether the catalog has a release for p (for a state, one
// for each of its tracks), and says what is missing.
func known(cat *release.Catalog, track string, p position) (bool, string) {
	if !p.isState() {
		_, ok := cat.ReleaseOn(track, p.v)
		return ok, ""
	}
	for _, t := range p.state.Tracks() {
		if _, ok := cat.ReleaseOn(t, p.state[t]); !ok {
			return false, fmt.Sprintf("the catalog has no release %s on track %s", p.state[t].Original(), t)
		}
	}
	return true, ""
}

// routeFrom and routeTo are the positions a route starts and ends at.
func routeFrom(r *path.Route) position {
	if r.FromState != nil {
		return position{state: r.FromState}
	}
	return position{v: r.From}
}

func routeTo(r *path.Route) position {
	if r.ToState != nil {
		return position{state: r.ToState}
	}
	return position{v: r.To}
}

// reachedBy is the position of a run of plan: where it started, moved by
// each hop that succeeded, in order.
func reachedBy(plan *runner.Plan, s *record.Status) string {
	if plan.Route.FromState == nil {
		v := s.From
		for _, h := range s.Hops {
			if h.Phase != record.Succeeded {
				break
			}
			v = h.To
		}
		return v
	}
	st := plan.Route.FromState.Clone()
	for i, h := range s.Hops {
		if h.Phase != record.Succeeded || i >= len(plan.Hops) {
			break
		}
		hop := plan.Hops[i].Hop
		st[hop.Track] = hop.To
	}
	return st.String()
}

// recordOf reports whether s, a run's record, is of the upgrade from ->
// to as the status spells them (a record across tracks spells its states,
// as runner.NewStatus writes them).
func recordOf(s *record.Status, from, to string) bool {
	return samePosition(s.From, from) && samePosition(s.To, to)
}

// setsBack reports whether desired sets an upgrade that started at from
// back to where it started: from (as spelled in the status) is at
// desired, which may name only some of its tracks.
func setsBack(from, desired string) bool {
	f, errF := parsePosition(from)
	d, errD := parsePosition(desired)
	if errF != nil || errD != nil {
		return from == desired
	}
	return f.satisfies(d)
}
