package path

import (
	"fmt"
)

// static looks, before any search, for what the catalog alone rules out,
// whatever risks are accepted and guards overridden: a track's target that
// no allowed state can hold beside the versions the other tracks can be
// at. It returns why, or "" when it finds nothing (a search must then
// decide).
//
// Each track starts with the versions a route could hold it at: those
// reachable from its current version on the track alone, and for a
// targeted track those that reach its target. A version is dropped when no
// version another track could be at is compatible with it (either
// release's supports refuses the other), then each track keeps only what
// it still reaches, and reaches its target from, through what is left;
// this repeats a few times. Every version a route holds in a state after
// the current one survives, so a dropped target means no route.
//
// Cost: per pass, the product of the kept versions of each pair of tracks
// that a supports constraint ties (supports already holds a bit per such
// pair), plus the tracks' edges.
func (m *multi) static() string {
	k := len(m.tracks)
	// Every risk accepted and every overridable guard overridden: what
	// this rules out, no relaxation gives (the search names those).
	all := make([]*query, k)
	for t, q := range m.q {
		w := *q
		w.acceptAll, w.overrideAll = true, true
		all[t] = &w
	}
	in := make([][]bool, k)
	for t := range k {
		in[t] = m.forward(t, nil, all[t])
		if m.dst[t] >= 0 && !in[t][m.src[t]] {
			return "" // the track's own error says more
		}
	}
	const passes = 4
	for range passes {
		changed := false
		for u := range k {
			for t := range k {
				if t == u || m.sup[t][u] == nil && m.sup[u][t] == nil {
					continue
				}
				for j := range in[u] {
					if !in[u][j] || m.anyCompatible(in[t], t, u, int32(j)) {
						continue
					}
					in[u][j], changed = false, true
					if d := m.dst[u]; d == int32(j) {
						if !anyTrue(in[t]) {
							return "" // see below
						}
						return m.unsupported(in[t], t, u, d)
					}
				}
			}
		}
		if !changed {
			return ""
		}
		for t := range k {
			in[t] = m.forward(t, in[t], all[t])
			if d := m.dst[t]; d >= 0 && !in[t][d] || !anyTrue(in[t]) {
				// No route either, but the search's account (the
				// constraints that refused its moves) says more than
				// this one would; the search is bounded.
				return ""
			}
		}
	}
	return ""
}

// forward returns the versions of track t reachable from its current
// version over the arcs q may use through versions keep holds (nil: any),
// that also reach its target that way when t is targeted. The current
// version is in it when keep holds it.
func (m *multi) forward(t int, keep []bool, q *query) []bool {
	ix := m.ix[t]
	ok := func(v int32) bool { return keep == nil || keep[v] }
	fwd := make([]bool, len(ix.versions))
	seen := make([]bool, len(ix.versions))
	src := m.src[t]
	seen[src] = true
	fwd[src] = ok(src)
	queue := []int32{src}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for ai := ix.off[v]; ai < ix.off[v+1]; ai++ {
			a := &ix.arcs[ai]
			if w := a.to; !seen[w] && ok(w) && ix.usable(a, q) {
				seen[w], fwd[w] = true, true
				queue = append(queue, w)
			}
		}
	}
	d := m.dst[t]
	if d < 0 {
		return fwd
	}
	// Keep those that reach the target through fwd.
	bwd := make([]bool, len(ix.versions))
	if fwd[d] || d == src {
		bwd[d] = fwd[d]
		queue = append(queue[:0], d)
		for len(queue) > 0 {
			w := queue[0]
			queue = queue[1:]
			for _, ai := range ix.revArcs[ix.revOff[w]:ix.revOff[w+1]] {
				if u := ix.arcFrom[ai]; !bwd[u] && fwd[u] && ix.usable(&ix.arcs[ai], q) {
					bwd[u] = true
					queue = append(queue, u)
				}
			}
		}
	}
	return bwd
}

// compatible reports whether version i of track t and version j of track u
// may be in one state: neither release's supports refuses the other.
func (m *multi) compatible(t int, i int32, u int, j int32) bool {
	if s := m.sup[t][u]; s != nil && s[i] != nil && !s[i][j] {
		return false
	}
	if s := m.sup[u][t]; s != nil && s[j] != nil && !s[j][i] {
		return false
	}
	return true
}

// anyCompatible reports whether some version in[t] holds is compatible
// with version j of track u.
func (m *multi) anyCompatible(in []bool, t, u int, j int32) bool {
	for i, ok := range in {
		if ok && m.compatible(t, int32(i), u, j) {
			return true
		}
	}
	return false
}

// unsupported says why the target d of track u is compatible with none of
// the versions in[t] holds of track t.
func (m *multi) unsupported(in []bool, t, u int, d int32) string {
	can := m.versionsText(in, t)
	if s := m.sup[u][t]; s != nil && s[d] != nil {
		refuses := true
		for i, ok := range in {
			refuses = refuses && (!ok || !s[d][i])
		}
		if refuses {
			return fmt.Sprintf("its target %s %s supports %s %s, which admits none of the versions %s can be at (%s)",
				m.tracks[u], m.ix[u].versions[d], m.tracks[t], m.cons[u][t][d], m.tracks[t], can)
		}
	}
	for i, ok := range in {
		if ok && !m.compatible(t, int32(i), u, d) {
			return fmt.Sprintf("no version %s can be at (%s) allows its target %s %s: %s %s supports %s %s, and so on",
				m.tracks[t], can, m.tracks[u], m.ix[u].versions[d], m.tracks[t], m.ix[t].versions[i], m.tracks[u], m.cons[t][u][i])
		}
	}
	return fmt.Sprintf("no version %s can be at (%s) is compatible with its target %s %s", m.tracks[t], can, m.tracks[u], m.ix[u].versions[d])
}

// versionsText names the versions in holds of track t: "none", one, or the
// lowest to the highest and how many.
func (m *multi) versionsText(in []bool, t int) string {
	lo, hi, n := -1, -1, 0
	for i, ok := range in {
		if ok {
			if lo < 0 {
				lo = i
			}
			hi, n = i, n+1
		}
	}
	vs := m.ix[t].versions
	switch n {
	case 0:
		return "none"
	case 1:
		return vs[lo].String()
	}
	return fmt.Sprintf("%d versions, %s to %s", n, vs[lo], vs[hi])
}

func anyTrue(xs []bool) bool {
	for _, x := range xs {
		if x {
			return true
		}
	}
	return false
}
