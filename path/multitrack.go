package path

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/release"
)

const (
	maxTracks      = 4
	maxTrackLength = 1<<16 - 1
	// A search settles at most 16 x V^2 states, V the versions of the
	// tracks searched, within these bounds.
	minStateLimit = 1 << 16
	maxStateLimit = 1 << 21
)

// stateLimit is how many states a search of tracks of these many versions
// in all may settle.
func stateLimit(versions int) int {
	return min(max(16*versions*versions, minStateLimit), maxStateLimit)
}

// multi is one multi-track query.
type multi struct {
	c       *release.Catalog
	tracks  []string // in track order
	ix      []*Index
	q       []*query
	src     []int32
	dst     []int32 // -1: free
	from    State
	to      State
	sup     [][][][]bool             // sup[t][u][i][j]: version i of t allows version j of u; nil: no constraint
	cons    [][][]release.Constraint // the constraint of sup[t][u][i]
	diag    map[refusal]bool         // refusals, when diagnosing
	key     []uint64                 // settled states
	dist    []int32                  //
	dep     []int32                  //
	ids     stateSet
	targets []int32          // settled target states of the best cost
	reach   [][]bool         // reach[t][i]: version i of targeted track t reaches its target (nil: free)
	levels  levels[mseed]    // seeds by deprecation level
	nodes   [maxTracks]int32 // scratch
	limit   int              // states a search may settle
	stopped bool             // the last search reached limit
}

// refusal is version i of track t refusing version j of track u.
type refusal struct{ t, i, u, j int32 }

type mseed struct {
	key uint64
	h   int32
}

// states checks the states of a query against the catalog and returns
// them with a version given without a track name moved to its track
// (withTracks): every track they name is the catalog's, the current state
// names every track the target does and every track tied to one it names
// (leftOut), and at most maxTracks.
func states(c *release.Catalog, current, target State) (State, State, error) {
	if c == nil {
		return nil, nil, errors.New("path: nil catalog")
	}
	all := c.Tracks()
	var err error
	if current, err = withTracks(c, current, "current"); err != nil {
		return nil, nil, err
	}
	if target, err = withTracks(c, target, "target"); err != nil {
		return nil, nil, err
	}
	for _, s := range []State{current, target} {
		for _, t := range s.Tracks() {
			if !slices.Contains(all, t) {
				return nil, nil, &UnknownTrackError{Track: t, Tracks: all}
			}
		}
	}
	for _, t := range target.Tracks() {
		if _, ok := current[t]; !ok {
			return nil, nil, fmt.Errorf("%w: the target names track %q but the current state does not: give its version in the current state (%s)", ErrInvalidOption, t, current)
		}
	}
	if len(current) == 0 {
		return nil, nil, fmt.Errorf("%w: empty current state: name a version for each track (%s)", ErrInvalidOption, trackList(all))
	}
	if err := leftOut(c, current); err != nil {
		return nil, nil, err
	}
	if len(current) > maxTracks {
		return nil, nil, fmt.Errorf("%w: %d tracks: at most %d can be searched together", ErrInvalidOption, len(current), maxTracks)
	}
	return current, target, nil
}

// newMulti prepares a search across the tracks of current, states that
// states checked.
func newMulti(c *release.Catalog, current, target State, opts []Option) (*multi, error) {
	m := &multi{c: c, from: current, to: target}
	m.ids.init(1024)
	m.tracks = current.Tracks()
	constrains := func(t string) bool {
		for i := range c.Releases {
			if r := &c.Releases[i]; r.Track == t {
				for u := range r.Supports {
					if _, ok := current[u]; ok && u != t {
						return true
					}
				}
			}
		}
		return false
	}
	slices.SortStableFunc(m.tracks, func(a, b string) int {
		ca, cb := constrains(a), constrains(b)
		if ca != cb {
			if ca {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})

	o := collect(opts)
	base := []Option{AcceptRisks(o.risks...), OverrideGuards(o.overrides...)}
	if o.guardsSet {
		base = append(base, WithGuards(o.guards...))
	}
	if o.prereleases {
		base = append(base, AllowPrereleases())
	}
	channelFound := o.channel == ""
	for _, t := range m.tracks {
		topts := append(slices.Clone(base), WithTrack(t), func(o *options) { o.acrossTracks = true })
		if o.channel != "" && slices.Contains(c.Channels(t), o.channel) {
			topts = append(topts, WithChannel(o.channel))
			channelFound = true
		}
		ix, err := NewIndex(c, topts...)
		if err != nil {
			return nil, err
		}
		if len(ix.versions) > maxTrackLength {
			return nil, fmt.Errorf("%w: track %q has %d versions: at most %d can be searched with other tracks", ErrInvalidOption, t, len(ix.versions), maxTrackLength)
		}
		q, err := ix.newQuery(nil)
		if err != nil {
			return nil, err
		}
		s, err := ix.lookup(current[t], "current")
		if err != nil {
			return nil, err
		}
		d := int32(-1)
		if v, ok := target[t]; ok {
			if d, err = ix.lookup(v, "target"); err != nil {
				return nil, err
			}
		}
		m.ix = append(m.ix, ix)
		m.q = append(m.q, ix.prereleaseRule(q, s, d))
		m.src = append(m.src, s)
		m.dst = append(m.dst, d)
	}
	if !channelFound {
		var chans []string
		for _, t := range m.tracks {
			chans = append(chans, c.Channels(t)...)
		}
		slices.Sort(chans)
		return nil, fmt.Errorf("%w: channel %q: no version of tracks %s is in it; the channels: %s", ErrInvalidOption, o.channel, strings.Join(m.tracks, ", "), listOrNone(slices.Compact(chans)))
	}
	versions := 0
	for _, ix := range m.ix {
		versions += len(ix.versions)
	}
	m.limit = stateLimit(versions)
	if o.stateLimit > 0 {
		m.limit = o.stateLimit
	}
	m.supports()
	m.reachable()
	return m, nil
}

// leftOut refuses a current state that leaves out a track tied to one it
// names (a release's Supports, either way): the search could not keep to
// the missing track's version, as a one-track query cannot (oneTrack). A
// target may name only some tracks; the current state names them all.
func leftOut(c *release.Catalog, current State) error {
	all := c.Tracks()
	var missing []string
	why := map[string]string{}
	for i := range c.Releases {
		r := &c.Releases[i]
		for _, other := range slices.Sorted(maps.Keys(r.Supports)) {
			if other == r.Track || !slices.Contains(all, other) {
				continue
			}
			_, has := current[r.Track]
			_, hasOther := current[other]
			if has == hasOther {
				continue
			}
			gone, kept := other, r.Track
			if !has {
				gone, kept = r.Track, other
			}
			if _, ok := why[gone]; !ok {
				missing = append(missing, gone)
				why[gone] = fmt.Sprintf("%s, tied to track %s (release %s%s supports %s %s)", trackWord(gone), trackWord(kept), r.Version, onTrack(r.Track), trackWord(other), r.Supports[other])
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	word, its, parts, give := "track", "its version", make([]string, len(missing)), []string{current.String()}
	if len(missing) > 1 {
		word, its = "tracks", "their versions"
	}
	for i, t := range missing {
		parts[i] = why[t]
		give = append(give, t+"=VERSION")
	}
	return fmt.Errorf("%w: the current state leaves out %s %s: give %s in the current state (the current argument of Resolve): %s",
		ErrInvalidOption, word, strings.Join(parts, "; "), its, strings.Join(give, ","))
}

// reachable marks, per targeted track, the versions from which its target
// is reachable on that track alone: a move to any other version can be part
// of no route, whatever the other tracks do.
func (m *multi) reachable() {
	m.reach = make([][]bool, len(m.tracks))
	for t, ix := range m.ix {
		d := m.dst[t]
		if d < 0 {
			continue
		}
		r := make([]bool, len(ix.versions))
		r[d] = true
		queue := []int32{d}
		for len(queue) > 0 {
			w := queue[0]
			queue = queue[1:]
			for _, ai := range ix.revArcs[ix.revOff[w]:ix.revOff[w+1]] {
				if u := ix.arcFrom[ai]; !r[u] && ix.usable(&ix.arcs[ai], m.q[t]) {
					r[u] = true
					queue = append(queue, u)
				}
			}
		}
		m.reach[t] = r
	}
}

// supports precomputes, per track and version, which versions of the other
// tracks its release allows.
func (m *multi) supports() {
	k := len(m.tracks)
	m.sup = make([][][][]bool, k)
	m.cons = make([][][]release.Constraint, k)
	for t := range k {
		m.sup[t] = make([][][]bool, k)
		m.cons[t] = make([][]release.Constraint, k)
		for i, v := range m.ix[t].versions {
			r, ok := m.c.ReleaseOn(m.tracks[t], v)
			if !ok {
				continue
			}
			for u := range k {
				cons, ok := r.Supports[m.tracks[u]]
				if !ok || u == t {
					continue
				}
				if m.sup[t][u] == nil {
					m.sup[t][u] = make([][]bool, len(m.ix[t].versions))
					m.cons[t][u] = make([]release.Constraint, len(m.ix[t].versions))
				}
				admits := make([]bool, len(m.ix[u].versions))
				for j, w := range m.ix[u].versions {
					admits[j] = cons.Check(w)
				}
				m.sup[t][u][i], m.cons[t][u][i] = admits, cons
			}
		}
	}
}

func (m *multi) pack(nodes []int32) uint64 {
	var k uint64
	for t := range m.tracks {
		k |= uint64(nodes[t]) << (16 * t)
	}
	return k
}

func (m *multi) unpack(k uint64, nodes []int32) {
	for t := range m.tracks {
		nodes[t] = int32(k >> (16 * t) & 0xffff)
	}
}

func with(k uint64, t int, w int32) uint64 {
	return k&^(0xffff<<(16*t)) | uint64(w)<<(16*t)
}

// allowed reports whether the state nodes, with track t moved to w, is
// compatible. When diagnosing, it records what refused it. It checks only
// the constraints that involve t: the others hold in every state a search
// settles, except the current one (see allowedFrom).
func (m *multi) allowed(nodes []int32, t int, w int32) bool {
	ok := true
	for u := range m.tracks {
		if u == t {
			continue
		}
		if s := m.sup[t][u]; s != nil && s[w] != nil && !s[w][nodes[u]] {
			ok = false
			m.refused(t, w, u, nodes[u])
		}
		if s := m.sup[u][t]; s != nil && s[nodes[u]] != nil && !s[nodes[u]][w] {
			ok = false
			m.refused(u, nodes[u], t, w)
		}
		if !ok && m.diag == nil {
			return false
		}
	}
	return ok
}

// allowedFrom is allowed for a move out of a state that may not be allowed
// itself (the current one): every pair of tracks is checked.
func (m *multi) allowedFrom(nodes []int32, t int, w int32) bool {
	old := nodes[t]
	nodes[t] = w
	defer func() { nodes[t] = old }()
	ok := true
	for x := range m.tracks {
		for u := range m.tracks {
			if s := m.sup[x][u]; u != x && s != nil && s[nodes[x]] != nil && !s[nodes[x]][nodes[u]] {
				ok = false
				m.refused(x, nodes[x], u, nodes[u])
				if m.diag == nil {
					return false
				}
			}
		}
	}
	return ok
}

func (m *multi) refused(t int, i int32, u int, j int32) {
	if m.diag == nil {
		return
	}
	m.diag[refusal{int32(t), i, int32(u), j}] = true
}

func (m *multi) isTarget(nodes []int32) bool {
	for t, d := range m.dst {
		if d >= 0 && nodes[t] != d {
			return false
		}
	}
	return true
}

// settle records state k with its cost, unless already settled.
func (m *multi) settle(k uint64, h, d int32) (int32, bool) {
	id := int32(len(m.key))
	if int(id) >= m.limit {
		m.stopped = true
		return 0, false
	}
	if !m.ids.add(k, id) {
		return 0, false
	}
	m.key = append(m.key, k)
	m.dist = append(m.dist, h)
	m.dep = append(m.dep, d)
	return id, true
}

func mseedHops(e mseed) int32 { return e.h }

// walk settles states in increasing (deprecated, hops) cost, by the
// layered search Index.walk uses for one track, until the layer holding
// the first target state is complete. It reports whether a target state
// was settled.
func (m *multi) walk() bool {
	src, _ := m.settle(m.pack(m.src), 0, 0)
	found, _, _ := layered(&m.levels, mseedHops, []int32{src}, nil,
		func(d, h int32, seeds []mseed, layer, next []int32) ([]int32, bool) {
			for _, e := range seeds {
				if id, ok := m.settle(e.key, h, d); ok {
					next = append(next, id)
				}
			}
			next = m.expand(src, d, h, layer, next)
			nodes := m.nodes[:len(m.tracks)]
			for _, id := range next {
				m.unpack(m.key[id], nodes)
				if m.isTarget(nodes) {
					m.targets = append(m.targets, id)
				}
			}
			return next, len(m.targets) > 0
		})
	return found
}

// expand settles, at cost (d, h), the states one usable, allowed move
// out of layer (the states settled at d, h-1) reaches, appending them to
// next; a move that adds deprecation becomes a seed of its level, unless
// its state is settled.
func (m *multi) expand(src int32, d, h int32, layer, next []int32) []int32 {
	nodes := m.nodes[:len(m.tracks)]
	for _, u := range layer {
		m.unpack(m.key[u], nodes)
		allowed := m.allowed
		if u == src {
			allowed = m.allowedFrom
		}
		for t, ix := range m.ix {
			v := nodes[t]
			for ai := ix.off[v]; ai < ix.off[v+1]; ai++ {
				a := &ix.arcs[ai]
				if m.reach[t] != nil && !m.reach[t][a.to] || !ix.usable(a, m.q[t]) || !allowed(nodes, t, a.to) {
					continue
				}
				k := with(m.key[u], t, a.to)
				if wt := weight(a); wt > 0 {
					if _, done := m.ids.get(k); !done {
						m.levels.add(d+wt, mseed{k, h})
					}
					continue
				}
				if id, ok := m.settle(k, h, d); ok {
					next = append(next, id)
				}
			}
		}
	}
	return next
}

// resolve runs the search and picks the route.
func (m *multi) resolve() (r *Route, err error) {
	defer func() {
		if se, ok := err.(*NoRouteError); ok {
			se.Current = m.current()
		}
	}()
	nodes := m.nodes[:len(m.tracks)]
	if m.isTarget(m.src) {
		return m.route(nil), nil
	}
	if m.fullTarget() {
		// A target naming every track must itself be allowed.
		m.diag = map[refusal]bool{}
		copy(nodes, m.dst)
		if !m.allowedFrom(nodes, 0, nodes[0]) {
			return nil, &NoRouteError{FromState: m.state(m.src), ToState: m.to, TargetNotAllowed: true, Blocks: m.blocks()}
		}
		m.diag = nil
	}
	if why := m.static(); why != "" {
		return nil, &NoRouteError{FromState: m.state(m.src), ToState: m.to, Static: why}
	}
	if r := m.best(); r != nil {
		return r, nil
	}
	if m.stopped {
		versions := 0
		for _, ix := range m.ix {
			versions += len(ix.versions)
		}
		return nil, &NoRouteError{FromState: m.state(m.src), ToState: m.to, States: len(m.key), Limit: m.limit, Versions: versions}
	}
	return nil, m.noRoute()
}

// best runs the search and returns the route it picks, nil when there is
// none.
func (m *multi) best() *Route {
	nodes := m.nodes[:len(m.tracks)]
	if !m.walk() {
		return nil
	}
	// Mark the states on a cheapest route to a target, walking back over
	// tight arcs.
	mark := make([]bool, len(m.key))
	layer := slices.Clone(m.targets)
	for _, id := range layer {
		mark[id] = true
	}
	for k := m.dist[layer[0]] - 1; k >= 0; k-- {
		var prev []int32
		for _, v := range layer {
			m.unpack(m.key[v], nodes)
			for t, ix := range m.ix {
				w := nodes[t]
				for _, ai := range ix.revArcs[ix.revOff[w]:ix.revOff[w+1]] {
					a := &ix.arcs[ai]
					u, ok := m.ids.get(with(m.key[v], t, ix.arcFrom[ai]))
					if !ok || mark[u] || m.dist[u] != k || m.dep[u]+weight(a) != m.dep[v] || !ix.usable(a, m.q[t]) {
						continue
					}
					mark[u] = true
					prev = append(prev, u)
				}
			}
		}
		layer = prev
	}
	// From the current state, take the preferred hop to a marked state.
	var hops []Hop
	u, _ := m.ids.get(m.pack(m.src))
	for m.dist[u] < m.dist[m.targets[0]] {
		m.unpack(m.key[u], nodes)
		// Per track, the highest next version (the one-track rule); then,
		// between tracks, the smallest change, then the first track.
		bt, bai, bnext := -1, int32(-1), int32(-1)
		for t, ix := range m.ix {
			v := nodes[t]
			tai, tnext := int32(-1), int32(-1)
			for ai := ix.off[v]; ai < ix.off[v+1]; ai++ {
				a := &ix.arcs[ai]
				w, ok := m.ids.get(with(m.key[u], t, a.to))
				if !ok || !mark[w] || m.dist[w] != m.dist[u]+1 || m.dep[w] != m.dep[u]+weight(a) || !ix.usable(a, m.q[t]) {
					continue
				}
				if tai < 0 || a.to > ix.arcs[tai].to {
					tai, tnext = ai, w
				}
			}
			if tai >= 0 && (bt < 0 || m.smaller(nodes, t, ix.arcs[tai].to, bt, m.ix[bt].arcs[bai].to)) {
				bt, bai, bnext = t, tai, tnext
			}
		}
		h := m.ix[bt].hop(nodes[bt], bai)
		h.Track = m.tracks[bt]
		hops = append(hops, h)
		u = bnext
	}
	return m.route(hops)
}

// smaller reports whether moving track t to w is preferred to moving
// another track bt to bw: the smaller change, then the
// first track.
func (m *multi) smaller(nodes []int32, t int, w int32, bt int, bw int32) bool {
	cs, bs := change(m.ix[t].versions[nodes[t]], m.ix[t].versions[w]), change(m.ix[bt].versions[nodes[bt]], m.ix[bt].versions[bw])
	if cs != bs {
		return cs < bs
	}
	return t < bt
}

// change is the size of a move: 0 prerelease only, 1 patch, 2 minor, 3 major.
func change(a, b release.Version) int {
	switch {
	case a.Major() != b.Major():
		return 3
	case a.Minor() != b.Minor():
		return 2
	case a.Patch() != b.Patch():
		return 1
	}
	return 0
}

func (m *multi) fullTarget() bool { return !slices.Contains(m.dst, -1) }

// state is the State of nodes, spelled as the catalog spells it.
func (m *multi) state(nodes []int32) State {
	s := State{}
	for t, n := range nodes {
		s[m.tracks[t]] = m.ix[t].versions[n]
	}
	return s
}

// route builds the Route of hops from the current state.
func (m *multi) route(hops []Hop) *Route {
	if hops == nil {
		hops = []Hop{}
	}
	at := slices.Clone(m.src)
	for _, h := range hops {
		t := slices.Index(m.tracks, h.Track)
		at[t] = m.ix[t].find(h.To)
	}
	r := &Route{
		Track: m.tracks[0], From: m.ix[0].versions[m.src[0]], To: m.ix[0].versions[at[0]], Hops: hops,
		FromState: m.state(m.src), ToState: m.state(at),
	}
	explainDeprecated(r, r.deprecated())
	return r
}
