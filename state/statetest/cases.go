package statetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
)

var cases = []struct {
	name string
	run  func(t *testing.T, env Env)
}{
	{"LoadEmpty", testLoadEmpty},
	{"SaveLoad", testSaveLoad},
	{"SaveIsolated", testSaveIsolated},
	{"SaveNil", testSaveNil},
	{"SaveWithoutLease", testSaveWithoutLease},
	{"AcquireInvalid", testAcquireInvalid},
	{"AcquireHeld", testAcquireHeld},
	{"TokensIncrease", testTokensIncrease},
	{"Refresh", testRefresh},
	{"ReleaseFences", testReleaseFences},
	{"ExpiredFences", testExpiredFences},
	{"TakeoverFences", testTakeoverFences},
	{"ConcurrentAcquire", testConcurrentAcquire},
	{"ConcurrentSaves", testConcurrentSaves},
	{"OtherHandlesToken", testOtherHandlesToken},
	{"CancelledContext", testCancelledContext},
	{"Fencing", testFencing},
	{"Commit", testCommit},
	{"Large", testLarge},
	{"TornJournal", testTornJournal},
	{"TruncatedJournal", testTruncatedJournal},
	{"SaveInvalid", testSaveInvalid},
	{"CommitReshaped", testCommitReshaped},
	{"Corruption", testCorruption},
	{"TokensSurviveDeletion", testTokensSurviveDeletion},
	{"JournalLost", testJournalLost},
	{"ReadLease", testReadLease},
	{"Hops", testHops},
}

// Sample returns a status of a three-component run in which the first
// done components succeeded; its times are UTC and whole, so that it
// survives encoding unchanged.
func Sample(done int) *record.Status {
	t0 := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	s := &record.Status{Phase: record.Running, From: "v1.0", To: "v1.1", Runs: 1, StartedAt: t0,
		Progress: record.Progress{Done: done, Total: 3}}
	h := record.HopStatus{From: "v1.0", To: "v1.1", Phase: record.Running, StartedAt: t0}
	for i, name := range []string{"etcd", "control-plane", "workers"} {
		c := record.ComponentStatus{Name: name, FromVersion: "v1.0.0", ToVersion: "v1.1.0", Phase: record.Pending}
		if i < done {
			c.Phase, c.Attempts = record.Succeeded, 1
			c.StartedAt, c.FinishedAt = t0.Add(time.Duration(i)*time.Minute), t0.Add(time.Duration(i+1)*time.Minute)
		}
		h.Components = append(h.Components, c)
	}
	if done == 3 {
		s.Phase, h.Phase, s.FinishedAt, h.FinishedAt = record.Succeeded, record.Succeeded, t0.Add(3*time.Minute), t0.Add(3*time.Minute)
	}
	s.Hops = []record.HopStatus{h}
	return s
}

func acquire(t *testing.T, b Backend, holder string, env Env) state.Lease {
	t.Helper()
	l, err := b.Acquire(t.Context(), holder, env.TTL)
	require.NoError(t, err, "Acquire(%s)", holder)
	return l
}

// requireFenced checks that err is a *FencedError naming holder and
// current as the lock's holder and token.
func requireFenced(t *testing.T, err error, token uint64, holder string, current uint64) {
	t.Helper()
	require.ErrorIs(t, err, state.ErrFenced)
	var fe *state.FencedError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, state.FencedError{Token: token, Holder: holder, Current: current}, *fe, "FencedError fields")
}

func requireStatus(t *testing.T, b Backend, want *record.Status) {
	t.Helper()
	got, err := b.Load(t.Context())
	require.NoError(t, err, "Load")
	assert.Equal(t, want, got, "Load() = got, want the last status saved under a current lease")
}

func testLoadEmpty(t *testing.T, env Env) {
	s, err := env.Open().Load(t.Context())
	require.NoError(t, err)
	assert.Nil(t, s, "Load() on an empty store = %v, want nil", s)
}

func testSaveLoad(t *testing.T, env Env) {
	a := env.Open()
	l := acquire(t, a, "a", env)
	for done := range 4 {
		require.NoError(t, a.Save(t.Context(), l.Token, Sample(done)), "Save(sample %d)", done)
		requireStatus(t, a, Sample(done))
		requireStatus(t, env.Open(), Sample(done))
	}
}

func testSaveIsolated(t *testing.T, env Env) {
	a := env.Open()
	l := acquire(t, a, "a", env)
	s := Sample(1)
	require.NoError(t, a.Save(t.Context(), l.Token, s))
	s.Hops[0].Components[0].Phase = record.Failed
	got, err := a.Load(t.Context())
	require.NoError(t, err)
	assert.Equal(t, Sample(1), got, "a status changed after Save changed the stored one")
	got.Hops[0].Components[1].Phase = record.Failed
	requireStatus(t, a, Sample(1))
}

func testSaveNil(t *testing.T, env Env) {
	a := env.Open()
	l := acquire(t, a, "a", env)
	err := a.Save(t.Context(), l.Token, nil)
	require.Error(t, err, "Save(nil)")
	assert.NotErrorIs(t, err, state.ErrFenced)
	requireStatus(t, a, nil)
}

// testSaveInvalid: a status that Load would refuse as corrupt (a phase
// that is not a phase, a component without a name, a changed component
// that is not in the status) is refused by Save and Commit, writing
// nothing: written, it would make every later Load, and so every resume,
// fail with a CorruptError.
func testSaveInvalid(t *testing.T, env Env) {
	tests := []struct {
		name    string
		status  func() *record.Status
		changed []record.Ref
	}{
		{"zero status", func() *record.Status { return &record.Status{} }, nil},
		{"run phase", func() *record.Status { s := Sample(1); s.Phase = "Done"; return s }, nil},
		{"hop phase", func() *record.Status { s := Sample(1); s.Hops[0].Phase = "running"; return s }, nil},
		{"component phase", func() *record.Status { s := Sample(1); s.Hops[0].Components[2].Phase = ""; return s }, nil},
		{"component name", func() *record.Status { s := Sample(1); s.Hops[0].Components[1].Name = ""; return s }, nil},
		{"changed component phase", func() *record.Status { s := Sample(1); s.Hops[0].Components[2].Phase = "Done"; return s },
			[]record.Ref{{Hop: 0, Component: 2}}},
		{"changed ref outside", func() *record.Status { return Sample(1) }, []record.Ref{{Hop: 3, Component: 1}}},
	}
	a := env.Open()
	l := acquire(t, a, "a", env)
	require.NoError(t, a.Save(t.Context(), l.Token, Sample(1)))
	for _, tc := range tests {
		if tc.changed == nil {
			err := a.Save(t.Context(), l.Token, tc.status())
			require.Error(t, err, "Save(%s)", tc.name)
			assert.NotErrorIs(t, err, state.ErrFenced, "Save(%s)", tc.name)
			requireStatus(t, a, Sample(1))
		}
		st, changed := tc.status(), tc.changed
		if changed == nil { // every component
			for h := range st.Hops {
				for i := range st.Hops[h].Components {
					changed = append(changed, record.Ref{Hop: h, Component: i})
				}
			}
		}
		err := a.Commit(t.Context(), l.Token, st, changed)
		require.Error(t, err, "Commit(%s, %v)", tc.name, changed)
		assert.NotErrorIs(t, err, state.ErrFenced, "Commit(%s)", tc.name)
		requireStatus(t, a, Sample(1))
		requireStatus(t, env.Open(), Sample(1))
	}
	require.NoError(t, a.Release(t.Context(), l))
	acquire(t, env.Open(), "b", env) // the store still takes a lease
}

// testCommitReshaped: a Commit of a status whose hops hold other numbers
// of components than the stored one, with as many components in all,
// stores every component of those hops, not only the changed ones (a
// reader starts such a hop's components afresh).
func testCommitReshaped(t *testing.T, env Env) {
	a := env.Open()
	l := acquire(t, a, "a", env)
	require.NoError(t, a.Save(t.Context(), l.Token, Sample(1)))
	s := Sample(1)
	second := s.Hops[0]
	second.From, second.To = "v1.1", "v1.2"
	second.Components = slices.Clone(s.Hops[0].Components[2:])
	s.Hops[0].Components = s.Hops[0].Components[:2]
	s.Hops = append(s.Hops, second)
	require.NoError(t, a.Commit(t.Context(), l.Token, s, []record.Ref{{Hop: 0, Component: 0}}), "Commit of 2+1 components over 3")
	requireStatus(t, a, s)
	requireStatus(t, env.Open(), s)
}

func testSaveWithoutLease(t *testing.T, env Env) {
	a := env.Open()
	for _, token := range []uint64{0, 1, 1 << 40} {
		requireFenced(t, a.Save(t.Context(), token, Sample(1)), token, "", 0)
	}
	requireStatus(t, a, nil)
}

func testAcquireInvalid(t *testing.T, env Env) {
	a := env.Open()
	for _, tc := range []struct {
		holder string
		ttl    time.Duration
	}{{"", time.Minute}, {"a", 0}, {"a", -time.Second}} {
		_, err := a.Acquire(t.Context(), tc.holder, tc.ttl)
		require.Error(t, err, "Acquire(%q, %v)", tc.holder, tc.ttl)
		assert.NotErrorIs(t, err, state.ErrLocked)
	}
	// Nothing was taken.
	acquire(t, a, "a", env)
}

func testAcquireHeld(t *testing.T, env Env) {
	a, b := env.Open(), env.Open()
	l := acquire(t, a, "a", env)
	assert.Equal(t, "a", l.Holder)
	assert.NotZero(t, l.Token)
	assert.Equal(t, env.TTL, l.TTL)
	for name, other := range map[string]Backend{"same handle": a, "other handle": b} {
		_, err := other.Acquire(t.Context(), "b", env.TTL)
		require.ErrorIs(t, err, state.ErrLocked, name)
		var le *state.LockedError
		require.ErrorAs(t, err, &le, name)
		assert.Equal(t, "a", le.Holder, "%s: LockedError.Holder", name)
		assert.Equal(t, l.Token, le.Token, "%s: LockedError.Token", name)
		assert.False(t, le.Expires.IsZero(), "%s: LockedError.Expires is zero", name)
	}
	// The failed acquisitions fenced nothing.
	require.NoError(t, a.Save(t.Context(), l.Token, Sample(1)))
}

func testTokensIncrease(t *testing.T, env Env) {
	a, b := env.Open(), env.Open()
	var last uint64
	seen := map[uint64]bool{}
	next := func(how string, l state.Lease) {
		t.Helper()
		assert.Greater(t, l.Token, last, "%s: token %d after %d, want it greater", how, l.Token, last)
		assert.False(t, seen[l.Token], "%s: token %d reused", how, l.Token)
		seen[l.Token], last = true, l.Token
	}
	for i := range 3 {
		h := []Backend{a, b}[i%2]
		l := acquire(t, h, fmt.Sprint("holder-", i), env)
		next("acquire after release", l)
		require.NoError(t, h.Release(t.Context(), l))
	}
	l := acquire(t, a, "a", env)
	next("acquire", l)
	env.Expire(l)
	l = acquire(t, b, "b", env)
	next("acquire after expiry", l)
	env.Expire(l)
	l = acquire(t, b, "b", env)
	next("acquire by the same holder after expiry", l)
}

func testRefresh(t *testing.T, env Env) {
	a := env.Open()
	l := acquire(t, a, "a", env)
	r, err := a.Refresh(t.Context(), l)
	require.NoError(t, err)
	assert.Equal(t, l.Token, r.Token, "Refresh changed the token")
	assert.Equal(t, l.Holder, r.Holder, "Refresh changed the holder")
	assert.False(t, r.Expires.Before(l.Expires), "Refresh moved the expiry back from %v to %v", l.Expires, r.Expires)
	require.NoError(t, a.Save(t.Context(), r.Token, Sample(1)))
	require.NoError(t, a.Release(t.Context(), r))
}

func testReleaseFences(t *testing.T, env Env) {
	a := env.Open()
	l := acquire(t, a, "a", env)
	require.NoError(t, a.Save(t.Context(), l.Token, Sample(1)))
	require.NoError(t, a.Release(t.Context(), l))
	requireFenced(t, a.Save(t.Context(), l.Token, Sample(2)), l.Token, "", 0)
	_, err := a.Refresh(t.Context(), l)
	requireFenced(t, err, l.Token, "", 0)
	requireFenced(t, a.Release(t.Context(), l), l.Token, "", 0)
	requireStatus(t, a, Sample(1))
}

func testExpiredFences(t *testing.T, env Env) {
	a := env.Open()
	l := acquire(t, a, "a", env)
	require.NoError(t, a.Save(t.Context(), l.Token, Sample(1)))
	env.Expire(l)
	requireFenced(t, a.Save(t.Context(), l.Token, Sample(2)), l.Token, "", 0)
	_, err := a.Refresh(t.Context(), l)
	requireFenced(t, err, l.Token, "", 0)
	requireStatus(t, a, Sample(1))
}

func testTakeoverFences(t *testing.T, env Env) {
	a, b := env.Open(), env.Open()
	la := acquire(t, a, "a", env)
	require.NoError(t, a.Save(t.Context(), la.Token, Sample(1)))
	env.Expire(la)
	lb := acquire(t, b, "b", env)
	require.Greater(t, lb.Token, la.Token)
	require.NoError(t, b.Save(t.Context(), lb.Token, Sample(2)))

	requireFenced(t, a.Save(t.Context(), la.Token, Sample(3)), la.Token, "b", lb.Token)
	requireFenced(t, a.Save(t.Context(), la.Token, Sample(0)), la.Token, "b", lb.Token)
	_, err := a.Refresh(t.Context(), la)
	requireFenced(t, err, la.Token, "b", lb.Token)
	requireFenced(t, a.Release(t.Context(), la), la.Token, "b", lb.Token)
	_, err = a.Acquire(t.Context(), "a", env.TTL)
	require.ErrorIs(t, err, state.ErrLocked, "b's lease was released by a stale Release")
	requireStatus(t, a, Sample(2))
	require.NoError(t, b.Save(t.Context(), lb.Token, Sample(3)), "b's lease was fenced by a stale Release")
	requireStatus(t, a, Sample(3))
}

func testConcurrentAcquire(t *testing.T, env Env) {
	const n = 8
	handles := make([]Backend, n)
	for i := range handles {
		handles[i] = env.Open()
	}
	var wg sync.WaitGroup
	leases := make([]state.Lease, n)
	errs := make([]error, n)
	for i, h := range handles {
		wg.Go(func() { leases[i], errs[i] = h.Acquire(t.Context(), fmt.Sprint("h", i), env.TTL) })
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		if err == nil {
			won++
			require.NoError(t, handles[i].Save(t.Context(), leases[i].Token, Sample(1)))
			continue
		}
		require.ErrorIs(t, err, state.ErrLocked, "Acquire by h%d", i)
	}
	assert.Equal(t, 1, won, "%d of %d concurrent Acquires won, want exactly 1", won, n)
}

func testConcurrentSaves(t *testing.T, env Env) {
	a := env.Open()
	l := acquire(t, a, "a", env)
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() { errs[i] = env.Open().Save(t.Context(), l.Token, Sample(i%4)) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	got, err := a.Load(t.Context())
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Contains(t, []*record.Status{Sample(0), Sample(1), Sample(2), Sample(3)}, got, "Load() after concurrent Saves is none of the statuses saved")
}

// testOtherHandlesToken: a handle that wrote and released writes again
// under a token another handle acquired since (one process, a Lock and a
// Store opened apart); the released token stays fenced on it.
func testOtherHandlesToken(t *testing.T, env Env) {
	a, b := env.Open(), env.Open()
	la := acquire(t, a, "p", env)
	require.NoError(t, a.Commit(t.Context(), la.Token, Sample(1), nil))
	require.NoError(t, a.Release(t.Context(), la))
	lb := acquire(t, b, "p", env)
	require.NoError(t, a.Save(t.Context(), lb.Token, Sample(2)), "a Save on a under the token b acquired")
	require.NoError(t, a.Commit(t.Context(), lb.Token, Sample(3), []record.Ref{{Hop: 0, Component: 2}}), "a Commit on a's own view")
	require.ErrorIs(t, a.Save(t.Context(), la.Token, Sample(1)), state.ErrFenced, "the released token")
	requireStatus(t, b, Sample(3))
}

func testCancelledContext(t *testing.T, env Env) {
	a := env.Open()
	l := acquire(t, a, "a", env)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := a.Acquire(ctx, "b", env.TTL)
	assert.ErrorIs(t, err, context.Canceled, "Acquire")
	assert.ErrorIs(t, a.Save(ctx, l.Token, Sample(1)), context.Canceled, "Save")
	_, err = a.Load(ctx)
	assert.ErrorIs(t, err, context.Canceled, "Load")
	_, err = a.Refresh(ctx, l)
	assert.ErrorIs(t, err, context.Canceled, "Refresh")
	assert.ErrorIs(t, a.Release(ctx, l), context.Canceled, "Release")
	requireStatus(t, a, nil)
	require.NoError(t, a.Save(t.Context(), l.Token, Sample(1)), "the lease did not survive cancelled calls")
}
