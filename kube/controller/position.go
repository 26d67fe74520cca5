package controller

import (
	"fmt"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// position is where a system is or should be, as the ClusterVersion's
// spec and status spell it (v1alpha1.Target): a state, read by
// path.ParseState. A version ("v26.09") is the state of a one-track
// system, on the ClusterVersion's track (on); "platform=13.01.0,
// kubernetes=v1.33.0" a state across tracks. Everything the reconciler
// and the webhook do with versions goes through it, so that a catalog of
// several tracks (StarlingX: the platform release and the Kubernetes
// version) is upgraded the same way as one of one track.
type position struct {
	state path.State
}

// parsePosition reads s (path.ParseState).
func parsePosition(s string) (position, error) {
	st, err := path.ParseState(s)
	if err != nil {
		return position{}, err
	}
	return position{state: st}, nil
}

// on is the state path resolves: a version given without a track name is
// on track, the ClusterVersion's (spec.track); with no track, path finds
// it (the default track, or the one track that has the version).
func (p position) on(track string) path.State {
	v, ok := p.state[""]
	if !ok || track == "" {
		return p.state
	}
	out := p.state.Clone()
	delete(out, "")
	if _, dup := out[track]; !dup {
		out[track] = v
	}
	return out
}

// String is the version as the catalog spells it, or the state
// (track=version,... sorted by track).
func (p position) String() string { return p.state.String() }

// satisfies reports whether a system at p is at target: the version of
// every track target names is p's.
func (p position) satisfies(target position) bool {
	if len(target.state) == 0 {
		return len(p.state) == 0
	}
	for track, v := range target.state {
		if cur, ok := p.state[track]; !ok || !cur.Equal(v) {
			return false
		}
	}
	return true
}

// before reports whether going from q to p moves some track back: p
// names a track at an earlier version than q's (a downgrade, which routes
// refuse).
func (p position) before(q position) bool {
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

// resolve finds the route from from to to, with the options of spec
// (routeOptions): one track, the ClusterVersion's, for versions; across
// tracks for states.
func resolve(cat *release.Catalog, spec *v1alpha1.ClusterVersionSpec, from, to position) (*path.Route, error) {
	return path.Resolve(cat, from.on(spec.Track), to.on(spec.Track), routeOptions(spec)...)
}

// plan plans the route resolve finds (runner.NewPlan, with opts).
func planOf(cat *release.Catalog, spec *v1alpha1.ClusterVersionSpec, from, to position, opts ...runner.PlanOption) (*runner.Plan, error) {
	return runner.NewPlan(cat, from.on(spec.Track), to.on(spec.Track), append([]runner.PlanOption{runner.PathOptions(routeOptions(spec)...)}, opts...)...)
}

// known reports whether the catalog has a release for each track of p
// (a version: on track), and, for a state, says what is missing.
func known(cat *release.Catalog, track string, p position) (bool, string) {
	_, version := p.state[""]
	st := p.on(track)
	for _, t := range st.Tracks() {
		if _, ok := cat.ReleaseOn(t, st[t]); !ok {
			if version {
				return false, ""
			}
			return false, fmt.Sprintf("the catalog has no release %s on track %s", st[t].Original(), t)
		}
	}
	return true, ""
}

// routeFrom and routeTo are the positions a route starts and ends at.
// A one-track route's are its versions, spelled as a version.
func routeFrom(r *path.Route) position {
	if r.FromState != nil {
		return position{state: r.FromState}
	}
	return position{state: path.State{"": r.From}}
}

func routeTo(r *path.Route) position {
	if r.ToState != nil {
		return position{state: r.ToState}
	}
	return position{state: path.State{"": r.To}}
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
