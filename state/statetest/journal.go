package statetest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
)

// Big returns a one-hop status of n Pending components named c00000...
func Big(n int) *record.Status {
	s := Sample(0)
	s.Progress = record.Progress{Total: n}
	h := &s.Hops[0]
	h.Components = make([]record.ComponentStatus, n)
	for i := range h.Components {
		h.Components[i] = record.ComponentStatus{Name: fmt.Sprintf("c%05d", i), FromVersion: "v1.0.0", ToVersion: "v1.1.0", Phase: record.Pending}
	}
	return s
}

// advance moves components [from, to) of s one transition on (Pending ->
// Running -> Succeeded) and returns their refs.
func advance(s *record.Status, from, to int) []record.Ref {
	var refs []record.Ref
	t0 := s.StartedAt
	for i := from; i < min(to, len(s.Hops[0].Components)); i++ {
		c := &s.Hops[0].Components[i]
		switch c.Phase {
		case record.Pending:
			c.Phase, c.Attempts, c.StartedAt = record.Running, c.Attempts+1, t0.Add(time.Duration(i)*time.Second)
		case record.Running:
			c.Phase, c.FinishedAt = record.Succeeded, t0.Add(time.Duration(i+1)*time.Second)
			s.Progress.Done++
		}
		refs = append(refs, record.Ref{Hop: 0, Component: i})
	}
	return refs
}

func testCommit(t *testing.T, env Env) {
	a := env.Open()
	l := acquire(t, a, "a", env)
	s := Big(40)
	require.NoError(t, a.Commit(t.Context(), l.Token, s, nil), "the first Commit of a status")
	requireStatus(t, a, s)
	for i := range 10 {
		refs := advance(s, 4*(i%10), 4*(i%10)+6)
		s.Runs = i
		require.NoError(t, a.Commit(t.Context(), l.Token, s, refs), "Commit %d", i)
		requireStatus(t, a, s)
		requireStatus(t, env.Open(), s)
	}
	// A Commit of a status of other components (a new run) is whole.
	require.NoError(t, a.Commit(t.Context(), l.Token, Sample(2), nil))
	requireStatus(t, a, Sample(2))
	err := a.Commit(t.Context(), l.Token, nil, nil)
	require.Error(t, err, "Commit(nil)")
	assert.NotErrorIs(t, err, state.ErrFenced)
	// Commits are fenced as Saves are.
	env.Expire(l)
	requireFenced(t, a.Commit(t.Context(), l.Token, Sample(3), []record.Ref{{Hop: 0, Component: 2}}), l.Token, "", 0)
	requireStatus(t, a, Sample(2))
}

// testLarge runs the checkpoints of a 10,000-component run as the
// executor makes them: one Commit per round of 64 transitions.
func testLarge(t *testing.T, env Env) {
	const n = 10000
	a := env.Open()
	l := acquire(t, a, "a", env)
	s := Big(n)
	require.NoError(t, a.Commit(t.Context(), l.Token, s, nil))
	rounds := 0
	for from := 0; from < n; from += 64 {
		for range 2 { // Running, then Succeeded
			require.NoError(t, a.Commit(t.Context(), l.Token, s, advance(s, from, from+64)), "round %d", rounds)
			rounds++
		}
	}
	s.Phase = record.Succeeded
	require.NoError(t, a.Commit(t.Context(), l.Token, s, nil))
	requireStatus(t, env.Open(), s)
	if env.Raw == nil {
		return
	}
	// No record grows with the run, and snapshots bound the journal.
	sizes, total := map[string]int{}, 0
	for _, name := range env.Raw.Names() {
		sizes[name] = len(env.Raw.Read(name))
		total += sizes[name]
	}
	if env.Journal == "" {
		for name, n := range sizes {
			assert.LessOrEqual(t, n, 1<<20, "record %s after a %d-component run: %d bytes, want at most 1 MiB (etcd refuses requests over 1.5 MiB, Kubernetes objects over about 1 MiB)", name, n, n)
		}
	} else {
		bound := max(1<<20, sizes[state.SnapshotFile]) + 256<<10
		assert.LessOrEqual(t, sizes[env.Journal], bound, "%s after a %d-component run with a %d-byte snapshot: %d bytes, want at most %d (a snapshot is written once the journal outgrows it)", env.Journal, n, sizes[state.SnapshotFile], sizes[env.Journal], bound)
	}
	t.Logf("after %d commits of a %d-component run: %d records, %d bytes", rounds+2, n, len(sizes), total)
}

// testTornJournal cuts the journal at every byte of its last line, as a
// crash in the middle of an append would: Load sees the commit or not,
// never fails, and the next Commit goes on from there.
func testTornJournal(t *testing.T, env Env) {
	if env.Raw == nil || env.Journal == "" {
		t.Logf("records are written whole: no torn tail to test")
		return
	}
	a := env.Open()
	l := acquire(t, a, "a", env)
	s := Big(50)
	require.NoError(t, a.Commit(t.Context(), l.Token, s, nil))
	require.NoError(t, a.Commit(t.Context(), l.Token, s, advance(s, 0, 5)))
	before := s.DeepCopy()
	require.NoError(t, a.Commit(t.Context(), l.Token, s, advance(s, 5, 10)))
	after := s.DeepCopy()
	full := env.Raw.Read(env.Journal)
	require.NotEmpty(t, full, "%s after two commits", env.Journal)
	start := bytes.LastIndexByte(full[:len(full)-1], '\n') + 1
	for cut := start; cut <= len(full); cut++ {
		env.Raw.Write(env.Journal, full[:cut])
		got, err := env.Open().Load(t.Context())
		require.NoError(t, err, "Load with the journal cut at byte %d of %d", cut, len(full))
		want := before
		if cut == len(full) {
			want = after
		}
		require.Equal(t, want, got, "Load with the journal cut at byte %d of %d", cut, len(full))
	}
	// Torn in the middle: the next commit replaces the torn tail.
	env.Raw.Write(env.Journal, full[:start+(len(full)-start)/2])
	restart(env) // a torn append is a crash's
	b := env.Open()
	s = before.DeepCopy()
	require.NoError(t, b.Commit(t.Context(), l.Token, s, advance(s, 20, 30)))
	requireStatus(t, env.Open(), s)
}

// testCorruption damages each record in turn (a NUL byte in the middle of
// a line that is not a torn tail): the calls that read it fail with a
// *CorruptError naming it and an offset, never advising to delete it
// unless its Fix says that is safe (and TokensSurviveDeletion shows it),
// and nothing writes over it.
func testCorruption(t *testing.T, env Env) {
	if env.Raw == nil {
		t.Fatalf("Env.Raw is nil: the suite needs the backend's records")
	}
	a := env.Open()
	l := acquire(t, a, "a", env)
	s := Big(30)
	require.NoError(t, a.Commit(t.Context(), l.Token, s, nil))
	for i := range 3 {
		require.NoError(t, a.Commit(t.Context(), l.Token, s, advance(s, 10*i, 10*i+10)))
	}
	names := env.Raw.Names()
	require.NotEmpty(t, names)
	saved := map[string][]byte{}
	for _, name := range names {
		saved[name] = env.Raw.Read(name)
	}
	for _, name := range names {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			for n, data := range saved {
				env.Raw.Write(n, data)
			}
			good := saved[name]
			bad := bytes.Clone(good)
			// The middle of the first line: never a torn tail.
			end := bytes.IndexByte(bad, '\n')
			if end < 0 {
				end = len(bad)
			}
			bad[end/2] = 0
			env.Raw.Write(name, bad)
			h := env.Open()
			_, loadErr := h.Load(t.Context())
			commitErr := h.Commit(t.Context(), l.Token, s, advance(s.DeepCopy(), 0, 1))
			saveErr := h.Save(t.Context(), l.Token, s)
			_, acqErr := h.Acquire(t.Context(), "b", env.TTL)
			errs := map[string]error{"Load": loadErr, "Commit": commitErr, "Save": saveErr, "Acquire": acqErr}
			found := false
			for op, err := range errs {
				var ce *state.CorruptError
				if !errors.As(err, &ce) {
					continue
				}
				found = true
				assert.Contains(t, ce.Path, name, "%s: CorruptError.Path", op)
				assert.Contains(t, err.Error(), "at byte", "%s: the error gives the offset", op)
				if ce.Fix != "" {
					// The backend says what to do (a File's lease.json:
					// delete it, which TokensSurviveDeletion shows safe).
					assert.Contains(t, ce.Fix, ce.Path, "%s: CorruptError.Fix names the record", op)
					continue
				}
				for _, word := range []string{"remove", "delete"} {
					assert.NotContains(t, strings.ToLower(err.Error()), word, "%s: the error advises to %s a record: %v", op, word, err)
				}
			}
			assert.True(t, found, "no call reported %s corrupt: %v", name, errs)
			assert.Equal(t, bad, env.Raw.Read(name), "a call wrote over the corrupt %s", name)
			assert.Error(t, commitErr, "Commit over a corrupt %s", name)
			assert.Error(t, saveErr, "Save over a corrupt %s: a whole status written over it would hide the damage", name)
		})
	}
}

// testTokensSurviveDeletion deletes each record in turn: no token is
// ever issued twice, and the old holder's writes stay fenced.
func testTokensSurviveDeletion(t *testing.T, env Env) {
	if env.Raw == nil {
		t.Fatalf("Env.Raw is nil: the suite needs the backend's records")
	}
	a := env.Open()
	l := acquire(t, a, "a", env)
	s := Big(20)
	require.NoError(t, a.Commit(t.Context(), l.Token, s, nil))
	require.NoError(t, a.Commit(t.Context(), l.Token, s, advance(s, 0, 5)))
	require.NoError(t, a.Commit(t.Context(), l.Token, s, advance(s, 5, 10)))
	names := env.Raw.Names()
	saved := map[string][]byte{}
	for _, name := range names {
		saved[name] = env.Raw.Read(name)
	}
	for _, name := range names {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			for n, data := range saved {
				if env.Raw.Read(n) == nil || n != name {
					env.Raw.Write(n, data)
				}
			}
			env.Raw.Remove(name)
			b := env.Open()
			lb, err := b.Acquire(t.Context(), "b", env.TTL)
			// Held, a's lease expires; with the lock's records gone, the
			// lease is then taken as held, by an unknown holder, for one
			// TTL from when that was found (etcd: once a's lease expired
			// with its issued record deleted): let that run out too.
			for try := 0; try < 2 && errors.Is(err, state.ErrLocked); try++ {
				t.Logf("with %s deleted, Acquire: %v", name, err)
				if le, ok := errors.AsType[*state.LockedError](err); ok && le.Missing != "" {
					env.Expire(state.Lease{Holder: le.Holder, Token: le.Token, TTL: env.TTL, Expires: le.Expires})
				} else {
					env.Expire(l)
				}
				lb, err = b.Acquire(t.Context(), "b", env.TTL)
			}
			if errors.Is(err, state.ErrCorrupt) {
				// What is left does not add up: refusing is safe.
				t.Logf("with %s deleted, Acquire: %v", name, err)
			} else {
				require.NoError(t, err, "Acquire with %s deleted", name)
				assert.Greater(t, lb.Token, l.Token, "token after deleting %s", name)
				defer func() { _ = b.Release(t.Context(), lb) }()
			}
			err = a.Commit(t.Context(), l.Token, s, advance(s.DeepCopy(), 10, 12))
			require.Error(t, err, "a Commit under the old lease %d with %s deleted", l.Token, name)
			assert.True(t, errors.Is(err, state.ErrFenced) || errors.Is(err, state.ErrCorrupt), "old holder's Commit: %v, want ErrFenced (or ErrCorrupt)", err)
		})
	}
}

// testJournalLost deletes the journal, cuts it to nothing, or puts back
// an older journal (of the snapshot before, as a backup taken mid-run
// would hold), after commits and right after a snapshot (when the journal
// holds no commit): Load and Commit fail with a *CorruptError naming the
// journal, never returning the snapshot alone (an older status), never
// advising to delete a record, and nothing is written over what is left.
// Put back, the journal loads again.
func testJournalLost(t *testing.T, env Env) {
	if env.Raw == nil || env.Journal == "" {
		t.Logf("no journal record: commits are records of their own")
		return
	}
	a := env.Open()
	l := acquire(t, a, "a", env)
	s := Big(20)
	require.NoError(t, a.Commit(t.Context(), l.Token, s, nil))
	require.NoError(t, a.Commit(t.Context(), l.Token, s, advance(s, 0, 5)))
	older := env.Raw.Read(env.Journal) // the first snapshot's, one commit in
	require.NoError(t, a.Commit(t.Context(), l.Token, s, advance(s, 5, 10)))
	require.NoError(t, a.Save(t.Context(), l.Token, s))
	states := map[string]struct {
		records map[string][]byte
		want    *record.Status
	}{}
	save := func(name string) {
		records := map[string][]byte{}
		for _, n := range env.Raw.Names() {
			records[n] = env.Raw.Read(n)
		}
		states[name] = struct {
			records map[string][]byte
			want    *record.Status
		}{records, s.DeepCopy()}
	}
	save("after a snapshot")
	require.NoError(t, a.Commit(t.Context(), l.Token, s, advance(s, 0, 5)))
	require.NoError(t, a.Commit(t.Context(), l.Token, s, advance(s, 10, 15)))
	save("after commits")
	for _, stateName := range []string{"after a snapshot", "after commits"} {
		saved := states[stateName]
		for _, damage := range []struct {
			name string
			do   func()
		}{
			{"deleted", func() { env.Raw.Remove(env.Journal) }},
			{"emptied", func() { env.Raw.Write(env.Journal, nil) }},
			{"an older one", func() { env.Raw.Write(env.Journal, older) }},
		} {
			t.Run(damage.name+" "+stateName, func(t *testing.T) {
				for n, data := range saved.records {
					env.Raw.Write(n, data)
				}
				damage.do()
				left := env.Raw.Read(env.Journal)
				h := env.Open()
				got, loadErr := h.Load(t.Context())
				assert.True(t, got == nil, "Load with the journal %s returned a status (an older one?), want none and an error", damage.name)
				commitErr := h.Commit(t.Context(), l.Token, saved.want, advance(saved.want.DeepCopy(), 15, 16))
				for op, err := range map[string]error{"Load": loadErr, "Commit": commitErr} {
					var ce *state.CorruptError
					if !assert.ErrorAs(t, err, &ce, "%s with the journal %s", op, damage.name) {
						continue
					}
					assert.Contains(t, ce.Path, env.Journal, "%s: CorruptError.Path", op)
					for _, word := range []string{"remove", "delete"} {
						assert.NotContains(t, strings.ToLower(err.Error()), word, "%s: the error advises to %s a record: %v", op, word, err)
					}
				}
				assert.Equal(t, left, env.Raw.Read(env.Journal), "a call wrote over the damaged %s", env.Journal)
				env.Raw.Write(env.Journal, saved.records[env.Journal])
				requireStatus(t, env.Open(), saved.want)
			})
		}
	}
}

// testTruncatedJournal cuts acknowledged commits off the journal while
// the writer still runs (at a line boundary, in the middle of the last
// acknowledged line, in the middle of an earlier one): the writer's next
// Commit and Save fail with a *CorruptError naming the journal and the
// offsets, and write nothing. Taken for a torn append, the cut was
// dropped and the next commit appended after it: components c00001 to
// c00003 were Pending again, and a resume ran them again.
func testTruncatedJournal(t *testing.T, env Env) {
	if env.Raw == nil || env.Journal == "" {
		t.Logf("records are written whole: no journal to cut short")
		return
	}
	for _, tc := range []struct {
		name string
		cut  func(full []byte, lines []int) int // lines: where each line starts
	}{
		{"at a line boundary", func(full []byte, lines []int) int { return lines[len(lines)-1] }},
		{"in the last line", func(full []byte, lines []int) int { return lines[len(lines)-1] + 20 }},
		{"in an earlier line", func(full []byte, lines []int) int { return lines[len(lines)-3] + 20 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{env.Journal, state.SnapshotFile} {
				if env.Raw.Read(name) != nil { // a fresh status for each case
					env.Raw.Remove(name)
				}
			}
			a := env.Open()
			l := acquire(t, a, "a", env)
			defer func() { _ = a.Release(t.Context(), l) }()
			s := Big(20)
			require.NoError(t, a.Commit(t.Context(), l.Token, s, nil))
			for i := 1; i <= 3; i++ {
				for range 2 { // Running, then Succeeded
					require.NoError(t, a.Commit(t.Context(), l.Token, s, advance(s, i, i+1)), "Commit of c%05d", i)
				}
			}
			full := env.Raw.Read(env.Journal)
			var lines []int
			for off := 0; off < len(full); off = bytes.IndexByte(full[off:], '\n') + off + 1 {
				lines = append(lines, off)
			}
			require.GreaterOrEqual(t, len(lines), 4, "%s after 6 commits: %d lines", env.Journal, len(lines))
			cut := tc.cut(full, lines)
			env.Raw.Write(env.Journal, full[:cut])

			next := s.DeepCopy()
			commitErr := a.Commit(t.Context(), l.Token, next, advance(next, 4, 5))
			saveErr := a.Save(t.Context(), l.Token, next)
			for op, err := range map[string]error{"Commit": commitErr, "Save": saveErr} {
				var ce *state.CorruptError
				if !assert.ErrorAs(t, err, &ce, "%s after %s was cut from %d to %d bytes", op, env.Journal, len(full), cut) {
					continue
				}
				assert.Contains(t, ce.Path, env.Journal, "%s: CorruptError.Path", op)
				assert.Contains(t, err.Error(), fmt.Sprintf("byte %d", len(full)), "%s: the error names the acknowledged end", op)
				assert.Contains(t, err.Error(), "commit 7", "%s: the error names the last acknowledged commit", op)
			}
			assert.Equal(t, full[:cut], env.Raw.Read(env.Journal), "a call wrote over the cut %s", env.Journal)
			// Put back whole, the journal is the writer's again.
			env.Raw.Write(env.Journal, full)
			require.NoError(t, a.Commit(t.Context(), l.Token, next, advance(next, 4, 5)), "Commit with %s put back", env.Journal)
			requireStatus(t, env.Open(), next)
		})
	}
}
