package statetest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
)

// Hops returns a status of n hops of one Pending component each, each
// hop with a required pre-check.
func Hops(n int) *record.Status {
	t0 := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	s := &record.Status{Phase: record.Running, From: "v1.0", To: fmt.Sprintf("v1.%d", n), Runs: 1, StartedAt: t0,
		Progress: record.Progress{Total: n}, Hops: make([]record.HopStatus, n)}
	for i := range s.Hops {
		s.Hops[i] = record.HopStatus{From: fmt.Sprintf("v1.%d", i), To: fmt.Sprintf("v1.%d", i+1), Phase: record.Pending,
			Checks:     []record.CheckStatus{{Name: "health", Stage: "pre", Required: true, Phase: record.Pending}},
			Components: []record.ComponentStatus{{Name: fmt.Sprintf("c%03d", i), ToVersion: fmt.Sprintf("v1.%d.0", i+1), Phase: record.Pending}}}
	}
	return s
}

// changeHops changes s at random as a run of several hops does, and
// returns the components it changed: the run's header, hops' phases,
// messages, checks and warnings, components, and now and then a new run
// (other hops, or a hop of another component count, with the same
// number of components in all or not), whose components are all changed.
func changeHops(rnd *rand.Rand, s *record.Status) []record.Ref {
	phases := record.Phases()
	pick := func() record.Phase { return phases[rnd.IntN(len(phases))] }
	t0 := s.StartedAt
	var refs []record.Ref
	fill := func(h, n int) {
		s.Hops[h].Components = make([]record.ComponentStatus, n)
		for c := range s.Hops[h].Components {
			s.Hops[h].Components[c] = record.ComponentStatus{Name: fmt.Sprintf("h%dc%d", h, c), ToVersion: "v2.0.0", Phase: pick()}
			refs = append(refs, record.Ref{Hop: h, Component: c})
		}
	}
	switch k := rnd.IntN(16); {
	case k == 0: // a new run of other hops
		s.Hops = make([]record.HopStatus, 1+rnd.IntN(5))
		for h := range s.Hops {
			s.Hops[h] = record.HopStatus{From: fmt.Sprint("v", h), To: fmt.Sprint("v", h+1), Phase: pick()}
			fill(h, 1+rnd.IntN(3))
		}
		s.Runs++
	case k == 1 && len(s.Hops) > 1: // one component moves to another hop
		from, to := rnd.IntN(len(s.Hops)), rnd.IntN(len(s.Hops))
		if n := len(s.Hops[from].Components); from != to && n > 1 {
			fill(from, n-1)
			fill(to, len(s.Hops[to].Components)+1)
		}
	case k == 2: // a hop of another component count
		h := rnd.IntN(len(s.Hops))
		fill(h, 1+rnd.IntN(3))
	default:
		s.Phase, s.CurrentHop, s.Progress.Done = pick(), rnd.IntN(len(s.Hops)), rnd.IntN(10)
		if rnd.IntN(3) == 0 {
			s.Message = fmt.Sprint("m", rnd.IntN(3))
		}
		for range rnd.IntN(3) {
			h := &s.Hops[rnd.IntN(len(s.Hops))]
			switch rnd.IntN(5) {
			case 0:
				// Few values, so that a hop comes back to a header it had.
				h.Phase = []record.Phase{record.Running, record.Succeeded}[rnd.IntN(2)]
			case 1:
				h.Message, h.StartedAt = fmt.Sprint("hop ", rnd.IntN(2)), t0.Add(time.Duration(rnd.IntN(2))*time.Second)
			case 2:
				h.Checks = append(h.Checks, record.CheckStatus{Name: fmt.Sprint("k", len(h.Checks)), Stage: "post", Phase: pick()})
			case 3:
				if len(h.Checks) > 0 {
					h.Checks[rnd.IntN(len(h.Checks))].Phase = pick()
				}
			case 4:
				h.Warnings = append(h.Warnings, fmt.Sprint("w", rnd.IntN(3)))
			}
		}
		for range rnd.IntN(3) {
			h := rnd.IntN(len(s.Hops))
			c := rnd.IntN(len(s.Hops[h].Components))
			s.Hops[h].Components[c].Phase, s.Hops[h].Components[c].Attempts = pick(), rnd.IntN(4)
			refs = append(refs, record.Ref{Hop: h, Component: c})
		}
	}
	return refs
}

// testHops writes random runs of several hops (hop and component changes,
// new runs) through two handles, in commits mostly and now and then a
// save, with the lease passing from one holder to another: each Load, on
// a handle that wrote or a new one, returns the last status written.
// (Commits record the hops whose header changed since the last record the
// handle knows of; a handle that did not write the last record must not
// take the status it wrote last for the stored one.)
func testHops(t *testing.T, env Env) {
	// A hop's header that a handle wrote, another changed, and the first
	// writes again: the first must record it though its own last write
	// had it.
	a, b := env.Open(), env.Open()
	l := acquire(t, a, "p", env)
	s := Hops(3)
	require.NoError(t, a.Save(t.Context(), l.Token, s))
	for i, w := range []Backend{a, b, a} {
		s.Hops[1].Phase = []record.Phase{record.Running, record.Succeeded, record.Running}[i]
		s.Hops[0].Components[0].Attempts = i + 1
		require.NoError(t, w.Commit(t.Context(), l.Token, s, []record.Ref{{Hop: 0, Component: 0}}), "Commit %d", i)
		requireStatus(t, env.Open(), s)
	}
	require.NoError(t, a.Release(t.Context(), l))

	seeds, steps := 4, 30
	if testing.Short() {
		seeds = 1
	}
	for seed := range uint64(seeds) {
		rnd := rand.New(rand.NewPCG(seed, 17))
		handles := []Backend{env.Open(), env.Open()}
		owner := 0
		l := acquire(t, handles[owner], fmt.Sprint("holder-", seed), env)
		s := Hops(2 + rnd.IntN(4))
		s.Runs = int(seed) + 1 // a status of its own: not the last seed's
		require.NoError(t, handles[owner].Save(t.Context(), l.Token, s), "seed %d: the first Save", seed)
		for i := range steps {
			refs := changeHops(rnd, s)
			h := handles[rnd.IntN(2)] // either handle writes under the token
			var err error
			switch rnd.IntN(10) {
			case 0:
				err = h.Save(t.Context(), l.Token, s)
			case 1:
				// Another holder takes over.
				require.NoError(t, handles[owner].Release(t.Context(), l), "seed %d step %d: Release", seed, i)
				owner = 1 - owner
				l = acquire(t, handles[owner], fmt.Sprint("holder-", seed, "-", i), env)
				err = handles[owner].Commit(t.Context(), l.Token, s, refs)
			default:
				err = h.Commit(t.Context(), l.Token, s, refs)
			}
			require.NoError(t, err, "seed %d step %d: write", seed, i)
			for _, b := range []Backend{h, env.Open()} {
				got, err := b.Load(t.Context())
				require.NoError(t, err, "seed %d step %d: Load", seed, i)
				require.Equal(t, s, got, "seed %d step %d: Load() = got, want the last status written", seed, i)
			}
		}
		require.NoError(t, handles[owner].Release(t.Context(), l))
	}
}
