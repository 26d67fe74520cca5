package path

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/hopdag/hopdag/release"
)

// Index is the graph of one track's versions and the edges its rules give,
// built once and queried many times. Build it with NewIndex. It is read-only
// after construction and safe for concurrent use; each query costs about one
// breadth-first search over the usable edges.
type Index struct {
	track       string
	versions    []release.Version // ascending; a node is an index into it
	installable []bool
	vdep        []string        // version deprecation reasons
	rules       []*release.Rule // into the catalog, which is read-only
	byKey       map[versionKey]int32
	guards      []Guard
	defaults    options // risks, overrides, channel and prereleases given to NewIndex
	pre         []bool  // prerelease versions
	anyPre      bool
	channels    map[string][]bool // channel -> versions outside it
	tracks      []string          // the catalog's tracks
	catalog     *release.Catalog  // for what an error says of other tracks

	// Open edges in compressed sparse row form: the edges out of node i are
	// arcs[off[i]:off[i+1]].
	off   []int32
	arcs  []arc
	viols [][]GuardViolation // overridable violations of guarded arcs
	cond  []int32            // arcs that are risky or guarded
	// Edges closed whatever the options: blocked, into a not-installable
	// version, or violating a mandatory guard.
	closed []closedArc

	// Reverse adjacency: the arcs into node i are revArcs[revOff[i]:revOff[i+1]],
	// each out of arcFrom[arc].
	arcFrom []int32
	revOff  []int32
	revArcs []int32

	pool sync.Pool // *scratch
}

const (
	arcDeprecated = 1 << iota // must be 1: it is added to the deprecated count
	arcRisky
	arcGuarded
	arcDepTo // the target version is deprecated (weight reads it as 1)
)

type arc struct {
	to    int32
	rule  int32 // index into Index.rules
	viol  int32 // index into Index.viols when arcGuarded
	flags uint8
}

type closedArc struct {
	from, to       int32
	rule           int32
	blocked        bool
	notInstallable bool
	viols          []GuardViolation
}

// oneTrack refuses a one-track index of track when releases tie it to
// another track (Release.Supports, either way): a route on one track
// cannot keep to what the other track's version allows.
func oneTrack(c *release.Catalog, track string) error {
	for i := range c.Releases {
		r := &c.Releases[i]
		for _, other := range slices.Sorted(maps.Keys(r.Supports)) {
			if r.Track != track && other != track {
				continue
			}
			if other == r.Track {
				continue
			}
			t, o := r.Track, other
			if t != track {
				t, o = o, t
			}
			return fmt.Errorf("%w: track %s is tied to track %s (release %s%s supports %s %s): a route on one track cannot keep to it; resolve across tracks with Resolve, a state naming both (the command line: --from %s=VERSION,%s=VERSION)",
				ErrInvalidOption, trackWord(t), trackWord(o), r.Version, onTrack(r.Track), trackWord(other), r.Supports[other], trackWord(t), trackWord(o))
		}
	}
	return nil
}

// trackWord names a track in a message.
func trackWord(t string) string {
	if t == "" {
		return `""`
	}
	return t
}

// NewIndex expands the rules of a track (WithTrack, default "") into edges
// and applies the guards given with WithGuards. Risks accepted and guards
// overridden here apply to every query of the index; queries may accept and
// override more, but not change the track or the guards.
//
// Building takes time linear in the number of rules plus the edges they give:
// an exact from is a hash lookup; a range is narrowed to the versions its
// bounds admit (a hash lookup, or a binary search over the track's versions
// for a bound that is not a known version), each then checked with
// release.Constraint.Check. Memory is linear in versions plus edges.
func NewIndex(c *release.Catalog, opts ...Option) (*Index, error) {
	if c == nil {
		return nil, errors.New("path: nil catalog")
	}
	o := collect(opts)
	if !o.acrossTracks {
		if err := oneTrack(c, o.track); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for _, g := range o.guards {
		if err := g.validate(); err != nil {
			return nil, err
		}
		if seen[g.Name] {
			return nil, fmt.Errorf("%w: guard %q is given twice", ErrInvalidOption, g.Name)
		}
		seen[g.Name] = true
	}
	ix := &Index{
		track:    o.track,
		guards:   slices.Clone(o.guards),
		defaults: options{risks: slices.Clone(o.risks), overrides: slices.Clone(o.overrides), channel: o.channel, prereleases: o.prereleases},
		versions: c.TrackVersions(o.track),
		tracks:   c.Tracks(),
		catalog:  c,
	}
	for pi := range c.Paths { // Catalog.Rules order, without copying
		if p := &c.Paths[pi]; p.Track == o.track {
			for ri := range p.Rules {
				ix.rules = append(ix.rules, &p.Rules[ri])
			}
		}
	}
	ix.byKey = make(map[versionKey]int32, len(ix.versions))
	ix.pre = make([]bool, len(ix.versions))
	for i, v := range ix.versions {
		ix.byKey[keyOf(v)] = int32(i)
		ix.pre[i] = v.Prerelease() != ""
		ix.anyPre = ix.anyPre || ix.pre[i]
	}
	n := len(ix.versions)
	if n >= math.MaxInt32/2 || len(ix.rules) >= math.MaxInt32/2 {
		return nil, fmt.Errorf("path: track %q is too large to index", o.track)
	}
	ix.installable = make([]bool, n)
	ix.vdep = make([]string, n)
	listed := make([]bool, n)
	for i := range ix.installable {
		ix.installable[i] = true
	}
	for pi := range c.Paths {
		p := &c.Paths[pi]
		if p.Track != o.track {
			continue
		}
		for vi := range p.Versions {
			// The first entry for a version wins, as in Catalog.VersionInfo.
			if i := ix.find(p.Versions[vi].Version); i >= 0 && !listed[i] {
				listed[i] = true
				ix.installable[i] = p.Versions[vi].IsInstallable()
				ix.vdep[i] = p.Versions[vi].Deprecated
				for _, ch := range p.Versions[vi].Channels {
					if ix.channels == nil {
						ix.channels = map[string][]bool{}
					}
					if ix.channels[ch] == nil {
						ix.channels[ch] = slices.Repeat([]bool{true}, n)
					}
					ix.channels[ch][i] = false
				}
			}
		}
	}
	if _, err := ix.newQuery(nil); err != nil {
		return nil, err
	}
	ix.build(c)
	ix.pool.New = func() any { return newScratch(n) }
	return ix, nil
}

// Track is the track the index covers.
func (ix *Index) Track() string { return ix.track }

// Versions returns the track's versions, ascending.
func (ix *Index) Versions() []release.Version { return slices.Clone(ix.versions) }

// Guards returns the guards the index applies.
func (ix *Index) Guards() []Guard { return slices.Clone(ix.guards) }

// Edges reports how many edges the rules give: open (usable under some
// options) and closed whatever the options.
func (ix *Index) Edges() (open, closed int) { return len(ix.arcs), len(ix.closed) }

func cmpVersion(a, b release.Version) int { return a.Compare(b) }

// versionKey finds a version spelled as the catalog spells it (or with the
// same numbers and prerelease text) without a binary search; other
// spellings of an equal version fall back to the search.
type versionKey struct {
	major, minor, patch uint64
	pre                 string
}

func keyOf(v release.Version) versionKey {
	return versionKey{v.Major(), v.Minor(), v.Patch(), v.Prerelease()}
}

// find returns the node of v, or -1.
func (ix *Index) find(v release.Version) int32 {
	if v.IsZero() {
		return -1
	}
	if i, ok := ix.byKey[keyOf(v)]; ok {
		return i
	}
	i, ok := slices.BinarySearchFunc(ix.versions, v, cmpVersion)
	if !ok {
		return -1
	}
	return int32(i)
}

// lowerBound is the first node whose version is >= v.
func (ix *Index) lowerBound(v release.Version) int32 {
	if i, ok := ix.byKey[keyOf(v)]; ok {
		return i
	}
	i, _ := slices.BinarySearchFunc(ix.versions, v, cmpVersion)
	return int32(i)
}

// upperBound is the first node whose version is > v.
func (ix *Index) upperBound(v release.Version) int32 {
	if i, ok := ix.byKey[keyOf(v)]; ok {
		return i + 1
	}
	lo, hi := 0, len(ix.versions)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ix.versions[m].Compare(v) <= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return int32(lo)
}

type span struct{ lo, hi int32 }

// spans returns node ranges [lo, hi) that hold every version c may match
// (a superset: Check decides), one per alternative of c.
func (ix *Index) spans(c release.Constraint, buf []span) []span {
	n := int32(len(ix.versions))
	for _, alt := range c.Alternatives() {
		lo, hi := int32(0), n
		for _, cm := range alt {
			switch cm.Op {
			case "=":
				lo, hi = max(lo, ix.lowerBound(cm.Version)), min(hi, ix.upperBound(cm.Version))
			case ">=":
				lo = max(lo, ix.lowerBound(cm.Version))
			case ">":
				lo = max(lo, ix.upperBound(cm.Version))
			case "<":
				hi = min(hi, ix.lowerBound(cm.Version))
			case "<=":
				hi = min(hi, ix.upperBound(cm.Version))
			}
		}
		if lo < hi {
			buf = append(buf, span{lo, hi})
		}
	}
	return buf
}

// build expands the rules into edges and classifies them (open, risky,
// guarded, closed), in compressed sparse row form with its reverse.
func (ix *Index) build(c *release.Catalog) {
	cands := ix.candidates()
	start, sorted := bucket(cands, int32(len(ix.versions)))
	ix.classify(start, sorted, ix.shipped(c))
	ix.reverse()
}

// cand is a candidate edge: a rule's from matches the node from.
type cand struct{ from, to, rule int32 }

// candidates expands every rule into candidate edges, in catalog order.
func (ix *Index) candidates() []cand {
	n := int32(len(ix.versions))
	cands := make([]cand, 0, len(ix.rules)+len(ix.rules)/2)
	stamp := make([]int32, n) // rule+1 that last emitted an edge from a node
	down := ix.downgrades()
	var sp []span
	for ri := range ix.rules {
		r := ix.rules[ri]
		to := ix.find(r.To)
		if to < 0 {
			continue // NewCatalog and Load refuse such rules
		}
		if v, ok := r.From.Exact(); ok {
			// An exact from may allow a downgrade explicitly.
			if f := ix.find(v); f >= 0 && f != to {
				cands = append(cands, cand{f, to, int32(ri)})
			}
			continue
		}
		// A blocking range blocks every version it covers, prereleases
		// included; an allowing range follows the prerelease rules of
		// Check.
		match := r.From.Check
		if r.Blocked != "" {
			match = r.From.Covers
		}
		emit := func(f int32) {
			if stamp[f] != int32(ri)+1 && match(ix.versions[f]) {
				stamp[f] = int32(ri) + 1
				cands = append(cands, cand{f, to, int32(ri)})
			}
		}
		sp = ix.spans(r.From, sp[:0])
		for _, s := range sp {
			// A range never gives a downgrade or an edge to itself: stop
			// below To. A blocking range goes on below.
			for f := s.lo; f < min(s.hi, to); f++ {
				emit(f)
			}
			if r.Blocked == "" {
				continue
			}
			// A blocking range must also close the downgrades exact rules
			// allow into To from the versions it covers; no other edge
			// leads down, so only those are looked at.
			froms := down[to]
			i, _ := slices.BinarySearch(froms, max(s.lo, to+1))
			for ; i < len(froms) && froms[i] < s.hi; i++ {
				emit(froms[i])
			}
		}
	}
	return cands
}

// bucket sorts the candidates by from with a stable counting sort, which
// keeps the catalog order within a bucket: the candidates from node f are
// sorted[start[f]:start[f+1]].
func bucket(cands []cand, n int32) (start []int32, sorted []cand) {
	start = make([]int32, n+1)
	for _, cd := range cands {
		start[cd.from+1]++
	}
	for i := int32(1); i <= n; i++ {
		start[i] += start[i-1]
	}
	sorted = make([]cand, len(cands))
	next := slices.Clone(start[:n])
	for _, cd := range cands {
		sorted[next[cd.from]] = cd
		next[cd.from]++
	}
	return start, sorted
}

// shippedVersion is the version of a guard's component a node's release
// ships, if it ships it.
type shippedVersion struct {
	v  release.Version
	ok bool
}

// shipped returns, per guard, the version of its component each node
// ships.
func (ix *Index) shipped(c *release.Catalog) [][]shippedVersion {
	n := len(ix.versions)
	gv := make([][]shippedVersion, len(ix.guards))
	if len(ix.guards) == 0 {
		return gv
	}
	rels := make([]*release.Release, n)
	for i := range rels {
		rels[i], _ = c.ReleaseOn(ix.track, ix.versions[i])
	}
	for g := range ix.guards {
		gv[g] = make([]shippedVersion, n)
		for i, r := range rels {
			if r != nil {
				gv[g][i].v, gv[g][i].ok = r.Ships(ix.guards[g].Component)
			}
		}
	}
	return gv
}

// classify merges the candidates of each (from, to) into one edge and
// records it: closed (blocked, into a not-installable version, or against
// a mandatory guard), or an arc with its flags.
func (ix *Index) classify(start []int32, sorted []cand, gv [][]shippedVersion) {
	n := int32(len(ix.versions))
	owner := make([]int32, n) // from+1 of the bucket that last saw a to
	pos := make([]int32, n)
	var edges []mergedEdge
	ix.off = make([]int32, n+1)
	ix.arcs = make([]arc, 0, len(sorted))
	for f := int32(0); f < n; f++ {
		ix.off[f] = int32(len(ix.arcs))
		edges = edges[:0]
		for _, cd := range sorted[start[f]:start[f+1]] {
			blocked := ix.rules[cd.rule].Blocked != ""
			if owner[cd.to] != f+1 {
				owner[cd.to], pos[cd.to] = f+1, int32(len(edges))
				e := mergedEdge{cd.to, cd.rule, -1}
				if blocked {
					e.block = cd.rule
				}
				edges = append(edges, e)
			} else if e := &edges[pos[cd.to]]; blocked && e.block < 0 {
				e.block = cd.rule // a blocked rule wins over every other
			}
		}
		for _, e := range edges {
			ix.addEdge(f, e, gv)
		}
	}
	ix.off[n] = int32(len(ix.arcs))
}

// mergedEdge is the edge the candidates of one (from, to) give: the first
// rule, and the first blocking one (-1: none).
type mergedEdge struct{ to, first, block int32 }

// addEdge records the edge e out of f.
func (ix *Index) addEdge(f int32, e mergedEdge, gv [][]shippedVersion) {
	switch {
	case e.block >= 0:
		ix.closed = append(ix.closed, closedArc{from: f, to: e.to, rule: e.block, blocked: true})
		return
	case !ix.installable[e.to]:
		ix.closed = append(ix.closed, closedArc{from: f, to: e.to, rule: e.first, notInstallable: true})
		return
	}
	var vs []GuardViolation
	mandatory := false
	for g := range ix.guards {
		a, b := gv[g][f], gv[g][e.to]
		if !a.ok || !b.ok {
			continue
		}
		if v, bad := ix.guards[g].check(a.v, b.v); bad {
			v.guard = g
			vs = append(vs, v)
			mandatory = mandatory || !v.Overridable
		}
	}
	if mandatory {
		ix.closed = append(ix.closed, closedArc{from: f, to: e.to, rule: e.first, viols: vs})
		return
	}
	a := arc{to: e.to, rule: e.first, viol: -1}
	r := ix.rules[e.first]
	if r.Deprecated != "" {
		a.flags |= arcDeprecated
	}
	if ix.vdep[e.to] != "" {
		a.flags |= arcDepTo
	}
	if len(r.Risks) > 0 {
		a.flags |= arcRisky
	}
	if len(vs) > 0 {
		a.flags |= arcGuarded
		a.viol = int32(len(ix.viols))
		ix.viols = append(ix.viols, vs)
	}
	if a.flags&(arcRisky|arcGuarded) != 0 {
		ix.cond = append(ix.cond, int32(len(ix.arcs)))
	}
	ix.arcs = append(ix.arcs, a)
}

// downgrades returns, per To node, the from nodes above it that exact
// rules allow a downgrade from, ascending and without repeats.
func (ix *Index) downgrades() map[int32][]int32 {
	var down map[int32][]int32
	for _, r := range ix.rules {
		v, ok := r.From.Exact()
		if !ok {
			continue
		}
		to, f := ix.find(r.To), ix.find(v)
		if to < 0 || f <= to {
			continue
		}
		if down == nil {
			down = map[int32][]int32{}
		}
		down[to] = append(down[to], f)
	}
	for to, froms := range down {
		slices.Sort(froms)
		down[to] = slices.Compact(froms)
	}
	return down
}

// open reports whether the query may use a risky or guarded arc.
func (ix *Index) open(a *arc, q *query) bool {
	if a.flags&arcRisky != 0 && !q.acceptAll {
		for _, r := range ix.rules[a.rule].Risks {
			if !q.accepted[r.Name] {
				return false
			}
		}
	}
	if a.flags&arcGuarded != 0 && !q.overrideAll {
		for _, v := range ix.viols[a.viol] {
			if q.overridden == nil || !q.overridden[v.guard] {
				return false
			}
		}
	}
	return true
}

// reverse builds the reverse adjacency.
func (ix *Index) reverse() {
	n := int32(len(ix.versions))
	ix.arcFrom = make([]int32, len(ix.arcs))
	ix.revOff = make([]int32, n+1)
	for f := int32(0); f < n; f++ {
		for ai := ix.off[f]; ai < ix.off[f+1]; ai++ {
			ix.arcFrom[ai] = f
			ix.revOff[ix.arcs[ai].to+1]++
		}
	}
	for i := int32(1); i <= n; i++ {
		ix.revOff[i] += ix.revOff[i-1]
	}
	next := slices.Clone(ix.revOff[:n])
	ix.revArcs = make([]int32, len(ix.arcs))
	for ai := range ix.arcs {
		to := ix.arcs[ai].to
		ix.revArcs[next[to]] = int32(ai)
		next[to]++
	}
}
