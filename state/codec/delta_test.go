package codec_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state/codec"
)

// chain is a status of n hops of one Pending component each.
func chain(n int) *record.Status {
	s := &record.Status{Phase: record.Running, From: "v1.0", To: fmt.Sprintf("v1.%d", n), Runs: 1,
		StartedAt: time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC), Hops: make([]record.HopStatus, n)}
	for i := range s.Hops {
		s.Hops[i] = record.HopStatus{From: fmt.Sprintf("v1.%d", i), To: fmt.Sprintf("v1.%d", i+1), Phase: record.Pending,
			Checks:     []record.CheckStatus{{Name: "health", Stage: "pre", Required: true, Phase: record.Pending}},
			Components: []record.ComponentStatus{{Name: fmt.Sprintf("c%03d", i), ToVersion: "v1.1.0", Phase: record.Pending}}}
	}
	return s
}

// A delta commit is the same size whatever the number of hops: it
// carries the hops whose header changed, not all of them; a full commit
// (the format before) grows with them.
func TestCommitSizeFlat(t *testing.T) {
	size := func(hops int, full bool) int {
		s := chain(hops)
		base := codec.BaseOf(s)
		s.Hops[0].Components[0].Phase, s.Hops[0].Components[0].Attempts = record.Running, 1
		s.Hops[0].Phase, s.CurrentHop = record.Running, 0
		refs := []record.Ref{{Hop: 0, Component: 0}}
		var lines [][]byte
		var err error
		if full {
			lines, err = codec.FullCommits(2, 1, s, refs, 0)
		} else {
			lines, _, err = codec.Commits(2, 1, s, refs, 0, base)
		}
		require.NoError(t, err)
		require.Len(t, lines, 1)
		return len(lines[0])
	}
	small, large := size(17, false), size(200, false)
	assert.InDelta(t, small, large, 2, "delta commit bytes at 17 hops and at 200 (the hop count's digits differ)")
	assert.Greater(t, size(200, true), 10*large, "a full commit of 200 hops against a delta commit")
	t.Logf("one commit of a hop's change: %d bytes at 17 hops, %d at 200 (full headers: %d, %d)", small, large, size(17, true), size(200, true))
}

// What a delta commit carries of the hops.
func TestCommitsHops(t *testing.T) {
	s := chain(5)
	base := codec.BaseOf(s)
	for _, tc := range []struct {
		name   string
		change func(s *record.Status)
		base   codec.Base
		want   []int // indices of the hops carried
	}{
		{"nothing changed", func(*record.Status) {}, base, nil},
		{"a component", func(s *record.Status) { s.Hops[2].Components[0].Phase = record.Running }, base, nil},
		{"the run's header", func(s *record.Status) { s.Phase, s.CurrentHop = record.Failed, 3 }, base, nil},
		{"a hop's phase", func(s *record.Status) { s.Hops[3].Phase = record.Running }, base, []int{3}},
		{"a hop's check", func(s *record.Status) { s.Hops[1].Checks[0].Phase = record.Succeeded }, base, []int{1}},
		{"a check added", func(s *record.Status) {
			s.Hops[4].Checks = append(s.Hops[4].Checks, record.CheckStatus{Name: "x", Stage: "post", Phase: record.Pending})
		}, base, []int{4}},
		{"a hop's warnings", func(s *record.Status) { s.Hops[0].Warnings = []string{"w"} }, base, []int{0}},
		{"a hop's component count", func(s *record.Status) {
			s.Hops[2].Components = append(s.Hops[2].Components, record.ComponentStatus{Name: "more", Phase: record.Pending})
		}, base, []int{2}},
		{"two hops", func(s *record.Status) { s.Hops[4].Phase, s.Hops[0].Message = record.Running, "m" }, base, []int{0, 4}},
		{"no base", func(*record.Status) {}, codec.Base{}, []int{0, 1, 2, 3, 4}},
		{"another hop count", func(s *record.Status) { s.Hops = s.Hops[:4] }, base, []int{0, 1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := clone(t, s)
			tc.change(s)
			lines, next, err := codec.Commits(2, 1, s, nil, 0, tc.base)
			require.NoError(t, err)
			require.Len(t, lines, 1)
			r, err := codec.Unframe(lines[0])
			require.NoError(t, err)
			assert.Equal(t, codec.KindDelta, r.Kind)
			var got []int
			for _, h := range r.Changed {
				got = append(got, h.Index)
				assert.Equal(t, len(s.Hops[h.Index].Components), h.Count, "hop %d's count", h.Index)
			}
			assert.Equal(t, tc.want, got, "hops carried")
			assert.Equal(t, len(s.Hops), r.Hops, "hop count")
			assert.Empty(t, r.Run.Hops, "the run's header has no hops")
			assert.Empty(t, r.Counts)
			// The next commit of the same status carries no hop.
			lines, _, err = codec.Commits(3, 1, s, nil, 0, next)
			require.NoError(t, err)
			r, err = codec.Unframe(lines[0])
			require.NoError(t, err)
			assert.Empty(t, r.Changed, "the next commit of the same status")
		})
	}
}

// Delta commits that do not fit their base are refused, not misread.
func TestApplyDeltaRejects(t *testing.T) {
	s := chain(3)
	snap, err := codec.Snapshot(1, 1, s, 0)
	require.NoError(t, err)
	hop := func(i, n int) codec.Hop {
		h := s.Hops[i]
		h.Components = nil
		return codec.Hop{Index: i, Count: n, Status: h}
	}
	run := &record.Status{Phase: record.Running}
	for _, tc := range []struct {
		name   string
		r      codec.Record
		noSnap bool
	}{
		{"no status before", codec.Record{Kind: codec.KindDelta, Seq: 2, Run: run, Hops: 3}, true},
		{"no run header", codec.Record{Kind: codec.KindDelta, Seq: 2, Hops: 3}, false},
		{"whole hops", codec.Record{Kind: codec.KindDelta, Seq: 2, Run: s, Hops: 3}, false},
		{"counts", codec.Record{Kind: codec.KindDelta, Seq: 2, Run: run, Hops: 3, Counts: []int{1, 1, 1}}, false},
		{"another hop count, some hops", codec.Record{Kind: codec.KindDelta, Seq: 2, Run: run, Hops: 4, Changed: []codec.Hop{hop(0, 1)}}, false},
		{"a hop outside", codec.Record{Kind: codec.KindDelta, Seq: 2, Run: run, Hops: 3, Changed: []codec.Hop{hop(0, 1), {Index: 3}}}, false},
		{"hops out of order", codec.Record{Kind: codec.KindDelta, Seq: 2, Run: run, Hops: 3, Changed: []codec.Hop{hop(1, 1), hop(0, 1)}}, false},
		{"a hop twice", codec.Record{Kind: codec.KindDelta, Seq: 2, Run: run, Hops: 3, Changed: []codec.Hop{hop(1, 1), hop(1, 1)}}, false},
		{"a negative count", codec.Record{Kind: codec.KindDelta, Seq: 2, Run: run, Hops: 3, Changed: []codec.Hop{hop(1, -1)}}, false},
		{"negative hops", codec.Record{Kind: codec.KindDelta, Seq: 2, Run: run, Hops: -1}, false},
		{"a full commit's negative count", codec.Record{Kind: codec.KindCommit, Seq: 2, Run: &record.Status{Hops: make([]record.HopStatus, 1)}, Counts: []int{-1}}, false},
		{"a huge count", codec.Record{Kind: codec.KindDelta, Seq: 2, Run: run, Hops: 3, Changed: []codec.Hop{hop(1, codec.MaxComponents+1)}}, false},
		{"a full commit's huge count", codec.Record{Kind: codec.KindCommit, Seq: 2, Run: &record.Status{Hops: make([]record.HopStatus, 1)}, Counts: []int{1 << 40}}, false},
		{"too many hops", codec.Record{Kind: codec.KindDelta, Seq: 2, Run: run, Hops: codec.MaxHops + 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &codec.State{}
			if !tc.noSnap {
				for _, l := range snap {
					r, err := codec.Unframe(l)
					require.NoError(t, err)
					require.NoError(t, st.Apply(r))
				}
			}
			line, err := codec.Frame(&tc.r)
			require.NoError(t, err)
			r, err := codec.Unframe(line)
			require.NoError(t, err, "Unframe of a well-formed record")
			assert.Error(t, st.Apply(r), "Apply(%s)", line)
		})
	}
}

// clone copies s through JSON.
func clone(t testing.TB, s *record.Status) *record.Status {
	t.Helper()
	b, err := codec.Marshal(s)
	require.NoError(t, err)
	c, err := codec.Unmarshal(b)
	require.NoError(t, err)
	return c
}

// writer writes a run's records as a store would: delta commits after its
// base, snapshots now and then, and a new base from what it read when a
// new holder takes over.
type writer struct {
	seq, seqFull uint64
	base         codec.Base
	delta        codec.State // what the delta commits add up to
	full         codec.State // what full commits of the same statuses add up to
}

func (w *writer) apply(t *testing.T, st *codec.State, lines [][]byte) {
	t.Helper()
	for _, l := range lines {
		r, err := codec.Unframe(l)
		require.NoError(t, err)
		require.NoError(t, st.Apply(r), "Apply(%s)", l)
	}
}

func (w *writer) snapshot(t *testing.T, s *record.Status) {
	w.seq++
	lines, err := codec.Snapshot(w.seq, 1, s, 0)
	require.NoError(t, err)
	w.delta, w.full = codec.State{}, codec.State{}
	w.apply(t, &w.delta, lines)
	w.apply(t, &w.full, lines)
	w.seqFull = w.seq
	w.base = codec.BaseOf(s)
}

func (w *writer) commit(t *testing.T, s *record.Status, changed []record.Ref, limit int) {
	lines, next, err := codec.Commits(w.seq+1, 1, s, changed, limit, w.base)
	require.NoError(t, err)
	full, err := codec.FullCommits(w.seqFull+1, 1, s, changed, limit)
	require.NoError(t, err)
	w.seq += uint64(len(lines))
	w.seqFull += uint64(len(full))
	w.apply(t, &w.delta, lines)
	w.apply(t, &w.full, full)
	w.base = next
}

// step changes s at random as a run does, and returns the components it
// changed: a run's header, hops' phases, checks, messages and warnings,
// components, and now and then a new run (other hops, or other component
// counts), whose components are all changed.
func step(rnd *rand.Rand, s *record.Status) []record.Ref {
	phases := record.Phases()
	pick := func() record.Phase { return phases[rnd.IntN(len(phases))] }
	t0 := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	var refs []record.Ref
	all := func(h int) {
		for c := range s.Hops[h].Components {
			s.Hops[h].Components[c] = record.ComponentStatus{Name: fmt.Sprintf("h%dc%d", h, c), ToVersion: "v2", Phase: pick()}
			refs = append(refs, record.Ref{Hop: h, Component: c})
		}
	}
	switch k := rnd.IntN(20); {
	case k == 0: // a new run of other hops
		n := rnd.IntN(6)
		s.Hops = make([]record.HopStatus, n)
		for h := range s.Hops {
			s.Hops[h] = record.HopStatus{From: fmt.Sprint(h), To: fmt.Sprint(h + 1), Phase: pick(),
				Components: make([]record.ComponentStatus, rnd.IntN(4))}
			all(h)
		}
		s.Runs++
	case k == 1 && len(s.Hops) > 0: // a hop of another component count
		h := rnd.IntN(len(s.Hops))
		s.Hops[h].Components = make([]record.ComponentStatus, rnd.IntN(4))
		all(h)
	default:
		s.Phase, s.CurrentHop, s.Progress.Done = pick(), rnd.IntN(len(s.Hops)+1), rnd.IntN(10)
		if rnd.IntN(3) == 0 {
			s.Message = fmt.Sprint("m", rnd.IntN(3))
		}
		for range rnd.IntN(3) {
			if len(s.Hops) == 0 {
				break
			}
			h := &s.Hops[rnd.IntN(len(s.Hops))]
			switch rnd.IntN(5) {
			case 0:
				h.Phase = pick()
			case 1:
				h.Message, h.StartedAt = fmt.Sprint("hop ", rnd.IntN(3)), t0.Add(time.Duration(rnd.IntN(100))*time.Second)
			case 2:
				h.Checks = append(h.Checks, record.CheckStatus{Name: fmt.Sprint("k", len(h.Checks)), Stage: "pre", Phase: pick()})
			case 3:
				if len(h.Checks) > 0 {
					h.Checks[rnd.IntN(len(h.Checks))].Phase = pick()
				}
			case 4:
				h.Warnings = append(h.Warnings, fmt.Sprint("w", rnd.IntN(3)))
			}
		}
		for range rnd.IntN(4) {
			if len(s.Hops) == 0 {
				break
			}
			h := rnd.IntN(len(s.Hops))
			if len(s.Hops[h].Components) == 0 {
				continue
			}
			c := rnd.IntN(len(s.Hops[h].Components))
			s.Hops[h].Components[c].Phase, s.Hops[h].Components[c].Attempts = pick(), rnd.IntN(4)
			refs = append(refs, record.Ref{Hop: h, Component: c})
		}
	}
	return refs
}

// Delta commits rebuild exactly the status full commits do, for random
// runs: changes of hops and components, new runs, commits split at a
// limit, snapshots, and writers that take over from what they read.
func TestDeltaProperty(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 11))
			s := chain(1 + rnd.IntN(5))
			w := &writer{}
			w.snapshot(t, s)
			for i := range 60 {
				refs := step(rnd, s)
				switch rnd.IntN(12) {
				case 0:
					w.snapshot(t, s)
				case 1:
					// A new holder: its base is what it read.
					w.base = codec.BaseOf(w.delta.Status)
					w.commit(t, s, refs, 0)
				case 2:
					w.base = codec.Base{} // a writer that knows nothing
					w.commit(t, s, refs, 0)
				default:
					w.commit(t, s, refs, []int{0, 1, 300}[rnd.IntN(3)])
				}
				require.NoError(t, w.delta.Check(), "step %d", i)
				require.Equal(t, w.full.Status, w.delta.Status, "step %d: delta commits against full ones", i)
				require.Equal(t, s, w.delta.Status, "step %d: delta commits against the status", i)
				require.Equal(t, w.seq, w.delta.Seq)
			}
		})
	}
}
