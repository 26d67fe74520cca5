package controller

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/internal/eventlimit"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// Updates returns the targets status.availableUpdates and
// status.conditionalUpdates list (the status lists at most 100 of each)
// for a system at current with the accepted risks: available are
// path.Targets with those risks; conditional are the further targets
// path.Targets gives when every risk of the catalog is accepted, each with
// the risks of its route that are not accepted yet. current is a state
// (path.ParseState): a version of one track (path.State{track: version})
// gives that track's versions, spelled as versions, each with its next
// hop; a state across tracks gives each version of each of its tracks a
// route reaches (the other tracks moving as the route needs), named
// track=version, its next hop naming its track. Sorted by version (by
// track, then version, across tracks). An unknown current version gives
// its error. opts add to the query (path.WithChannel,
// path.AllowPrereleases). Across tracks it resolves one route per version
// of each track, so its cost grows with the tracks' versions times the
// states a search explores.
func Updates(c *release.Catalog, current path.State, accepted []string, opts ...path.Option) (available []v1alpha1.Update, conditional []v1alpha1.ConditionalUpdate, err error) {
	ts, err := path.Targets(c, current, append(slices.Clone(opts), path.AcceptRisks(accepted...))...)
	if err != nil && !errors.Is(err, path.ErrNoRoute) {
		return nil, nil, err
	}
	reach := map[string]bool{}
	for _, t := range ts {
		available = append(available, update(t))
		reach[t.Track+"="+t.Version.Canonical()] = true
	}
	all := allRisks(c)
	if len(all) == 0 {
		return available, nil, nil
	}
	ts, err = path.Targets(c, current, append(slices.Clone(opts), path.AcceptRisks(append(slices.Clone(accepted), all...)...))...)
	if err != nil && !errors.Is(err, path.ErrNoRoute) {
		return nil, nil, err
	}
	for _, t := range ts {
		if reach[t.Track+"="+t.Version.Canonical()] {
			continue
		}
		conditional = append(conditional, v1alpha1.ConditionalUpdate{Update: update(t), Risks: routeRisks(t.Route().Hops, accepted)})
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
	key    updatesKey
	listed listed
	err    error
}

// computeUpdates is updatesFor (a variable for the cache's test).
var computeUpdates = updatesFor

// get is what the status lists of updatesFor(c, &cv.Spec, current)
// (listUpdates), from the cache when its inputs did not change. The
// slices are the caller's.
func (uc *updatesCache) get(cv *v1alpha1.ClusterVersion, c *release.Catalog, current position) (listed, error) {
	spec := &cv.Spec
	k := updatesKey{cat: c, current: current.String(), track: spec.Track, channel: spec.Channel,
		accept: strings.Join(spec.AcceptRisks, "\x00"), prereleases: spec.AllowPrereleases}
	name := types.NamespacedName{Namespace: cv.Namespace, Name: cv.Name}
	uc.mu.Lock()
	a, ok := uc.m[name]
	uc.mu.Unlock()
	if !ok || a.key != k {
		a = updatesAnswer{key: k}
		var av []v1alpha1.Update
		var cu []v1alpha1.ConditionalUpdate
		av, cu, a.err = computeUpdates(c, spec, current)
		a.listed = listUpdates(av, cu)
		uc.mu.Lock()
		if uc.m == nil {
			uc.m = map[types.NamespacedName]updatesAnswer{}
		}
		uc.m[name] = a
		uc.mu.Unlock()
	}
	l := a.listed
	l.available, l.conditional = nil, nil
	for i := range a.listed.available {
		l.available = append(l.available, *a.listed.available[i].DeepCopy())
	}
	for i := range a.listed.conditional {
		l.conditional = append(l.conditional, *a.listed.conditional[i].DeepCopy())
	}
	return l, a.err
}

// Limits of what the status lists of the reachable targets: on a chain
// every later version is a target, and the status must stay small
// whatever the catalog (the API server refuses an object over about
// 1.5 MiB, and a status that cannot be written stops every upgrade).
const (
	// maxUpdatesListed is how many entries availableUpdates, and
	// conditionalUpdates, list at most (keepUpdates).
	maxUpdatesListed = 100
	// maxRisksListed is how many risks a conditional update lists at
	// most, riskMessageBytes how much of each risk's message.
	maxRisksListed, riskMessageBytes = 10, 512
)

// listed is what a ClusterVersion's status shows of its updates, and how
// many it leaves out.
type listed struct {
	available                      []v1alpha1.Update
	conditional                    []v1alpha1.ConditionalUpdate
	moreAvailable, moreConditional int
}

// setIn writes l into st.
func (l listed) setIn(st *v1alpha1.ClusterVersionStatus) {
	st.AvailableUpdates, st.AvailableUpdatesOmitted = l.available, l.moreAvailable
	st.ConditionalUpdates, st.ConditionalUpdatesOmitted = l.conditional, l.moreConditional
}

// shownIn reports whether st shows l.
func (l listed) shownIn(st *v1alpha1.ClusterVersionStatus) bool {
	return equality.Semantic.DeepEqual(l.available, st.AvailableUpdates) && equality.Semantic.DeepEqual(l.conditional, st.ConditionalUpdates) &&
		l.moreAvailable == st.AvailableUpdatesOmitted && l.moreConditional == st.ConditionalUpdatesOmitted
}

// listUpdates is what the status shows of av and cu (Updates'
// answer): at most maxUpdatesListed of each (keepUpdates),
// each conditional update with at most maxRisksListed risks, their
// messages cut to riskMessageBytes. Its size does not grow with the
// catalog, but for the spellings of versions and risk URLs.
func listUpdates(av []v1alpha1.Update, cu []v1alpha1.ConditionalUpdate) listed {
	var l listed
	keep := keepUpdates(len(av), func(i int) int { return av[i].Hops })
	for _, i := range keep {
		l.available = append(l.available, av[i])
	}
	l.moreAvailable = len(av) - len(keep)
	keep = keepUpdates(len(cu), func(i int) int { return cu[i].Hops })
	for _, i := range keep {
		u := cu[i]
		u.Risks = slices.Clone(u.Risks[:min(len(u.Risks), maxRisksListed)])
		u.RisksOmitted += len(cu[i].Risks) - len(u.Risks)
		for j := range u.Risks {
			u.Risks[j].Message = eventlimit.Cut(u.Risks[j].Message, riskMessageBytes)
		}
		l.conditional = append(l.conditional, u)
	}
	l.moreConditional = len(cu) - len(keep)
	return l
}

// keepUpdates returns the indexes, ascending, of the entries of a list of
// n updates sorted by version (by track, then version, across tracks)
// that the status lists: all of them up to maxUpdatesListed, else the
// last (the newest target) and those reached in the fewest hops, of equal
// hops the later (hops(i) is entry i's hop count).
func keepUpdates(n int, hops func(i int) int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if n <= maxUpdatesListed {
		return idx
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case a == n-1:
			return -1
		case b == n-1:
			return 1
		}
		return cmp.Or(cmp.Compare(hops(a), hops(b)), cmp.Compare(b, a))
	})
	idx = idx[:maxUpdatesListed]
	slices.Sort(idx)
	return idx
}

// updatesFor is what status.availableUpdates and conditionalUpdates say
// for a system at current: Updates of its state (a version on spec's
// track).
func updatesFor(c *release.Catalog, spec *v1alpha1.ClusterVersionSpec, current position) ([]v1alpha1.Update, []v1alpha1.ConditionalUpdate, error) {
	return Updates(c, current.on(spec.Track), spec.AcceptRisks, steer(spec)...)
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

// routeOptions are the path options a ClusterVersion's spec gives: its
// accepted risks, then steer's.
func routeOptions(spec *v1alpha1.ClusterVersionSpec) []path.Option {
	return append([]path.Option{path.AcceptRisks(spec.AcceptRisks...)}, steer(spec)...)
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

// update is the status entry of t: its version (track=version across
// tracks) and next hop (with its track across tracks), not its route
// (which would be quadratic on a long chain: Next is linear over all
// targets).
func update(t path.Target) v1alpha1.Update {
	h := t.Next()
	u := v1alpha1.Update{Version: t.Version.Original(), Hops: t.Hops, Next: h.From.Original() + " -> " + h.To.Original()}
	if t.Track != "" {
		u.Version = t.Track + "=" + u.Version
	}
	if h.Track != "" {
		u.Next = h.Track + " " + u.Next
	}
	return u
}

// allRisks returns the names of every risk the catalog's rules declare,
// sorted.
func allRisks(c *release.Catalog) []string {
	var out []string
	for _, p := range c.Paths {
		for _, r := range p.Rules {
			for _, k := range r.Risks {
				out = append(out, k.Name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
