package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// TestPosition: what the spec and status spell (a version, or a state
// across tracks) reads, prints and compares as the reconciler needs: a
// system satisfies a target state naming only some of its tracks, the
// spellings of one position are the same position, and a version (the
// state of the default track, "" in a state) never satisfies a state of
// named tracks, nor the reverse.
func TestPosition(t *testing.T) {
	for _, tc := range []struct {
		cur, target string
		satisfies   bool
	}{
		{"v26.09", "v26.09", true},
		{"v26.09", "26.09", true},
		{"v26.06", "v26.09", false},
		{"platform=13.01.0,kubernetes=v1.32.0", "kubernetes=v1.32.0,platform=13.01.0", true},
		{"platform=13.01.0,kubernetes=v1.32.0", "platform=13.01.0", true},
		{"platform=13.01.0,kubernetes=v1.32.0", "platform=27.03.0", false},
		{"platform=13.01.0", "platform=13.01.0,kubernetes=v1.32.0", false},
		{"platform=13.01.0", "13.01.0", false},
	} {
		cur, err := parsePosition(tc.cur)
		require.NoError(t, err, tc.cur)
		target, err := parsePosition(tc.target)
		require.NoError(t, err, tc.target)
		assert.Equal(t, tc.satisfies, cur.satisfies(target), "%s satisfies %s", tc.cur, tc.target)
	}
	p, err := parsePosition("platform=13.01.0,kubernetes=v1.32.0")
	require.NoError(t, err)
	assert.Equal(t, "kubernetes=v1.32.0,platform=13.01.0", p.String())
	assert.True(t, samePosition("platform=13.01.0,kubernetes=v1.32.0", p.String()))
	assert.False(t, samePosition("platform=13.01.0", p.String()), "a partial state is not the same position")
	assert.True(t, samePosition("v26.09", "26.09"))
	assert.False(t, samePosition("not a version", "v26.09"))
	assert.True(t, samePosition("=13.01.0", "13.01.0"), "a version is the state of the default track")
	for _, bad := range []string{"", "platform=x", "platform=13.01.0,platform=13.01.1", "latest"} {
		_, err := parsePosition(bad)
		assert.Error(t, err, "%q", bad)
	}
	a, b := position{state: path.MustParseState("v26.06")}, position{state: path.MustParseState("v26.09")}
	assert.True(t, a.before(b))
	assert.False(t, b.before(a))
	assert.False(t, p.before(p))
	back, _ := parsePosition("platform=13.01.0")
	on, _ := parsePosition("platform=13.01.2,kubernetes=v1.32.0")
	assert.True(t, back.before(on), "a track moved back")
	assert.False(t, on.before(back))
	other, _ := parsePosition("kubernetes=v1.33.0")
	assert.False(t, other.before(on), "a track moved forward only")
}

// TestReachedByAndRecordOf: a run across tracks is where its from-state
// was moved by each hop that succeeded, in order, and its record (which
// names the first track, as path.Route does) is recognized as the upgrade
// the status names.
func TestReachedByAndRecordOf(t *testing.T) {
	cat, err := release.LoadDir("../../testdata/two-track")
	require.NoError(t, err)
	from, err := path.ParseState("platform=13.01.0,kubernetes=v1.32.0")
	require.NoError(t, err)
	to, err := path.ParseState("platform=27.03.0")
	require.NoError(t, err)
	p, err := runner.NewPlan(cat, from, to)
	require.NoError(t, err)
	route := p.Route
	require.Len(t, p.Hops, 3)
	s := runner.NewStatus(p)
	assert.Equal(t, "kubernetes=v1.32.0,platform=13.01.0", reachedBy(p, s), "nothing succeeded yet")
	s.Hops[0].Phase = record.Succeeded
	assert.Equal(t, "kubernetes=v1.32.0,platform=13.01.2", reachedBy(p, s))
	s.Hops[2].Phase = record.Succeeded // not in order: the second has not
	assert.Equal(t, "kubernetes=v1.32.0,platform=13.01.2", reachedBy(p, s))
	s.Hops[1].Phase = record.Succeeded
	assert.Equal(t, "kubernetes=v1.33.1,platform=27.03.0", reachedBy(p, s))

	assert.True(t, recordOf(s, routeFrom(route).String(), routeTo(route).String()))
	assert.False(t, recordOf(s, "kubernetes=v1.32.0,platform=13.01.1", routeTo(route).String()))
	assert.False(t, recordOf(s, "v26.06", "v26.09"))
	assert.Equal(t, "kubernetes=v1.32.0,platform=13.01.0", s.From, "a record across tracks spells its states")

	// A one-track route is where its versions say, spelled as versions.
	one, err := release.LoadDir("../../testdata/catalog")
	require.NoError(t, err)
	op, err := runner.NewPlan(one, path.MustParseState("v26.06-rc.2"), path.MustParseState("v26.09"))
	require.NoError(t, err)
	os := runner.NewStatus(op)
	assert.Equal(t, "v26.06-rc.2", reachedBy(op, os))
	os.Hops[0].Phase = record.Succeeded
	assert.Equal(t, op.Hops[0].To.String(), reachedBy(op, os))
	assert.True(t, recordOf(os, routeFrom(op.Route).String(), routeTo(op.Route).String()))
	assert.Equal(t, "v26.06-rc.2", routeFrom(op.Route).String())
}

// rollbackNext offers a retry only when a component rollback failed: an
// irreversible stop is not changed by one.
func TestRollbackNext(t *testing.T) {
	status := func(cs ...record.ComponentStatus) *record.Status {
		return &record.Status{Hops: []record.HopStatus{{Phase: record.RollbackFailed, Components: cs}}}
	}
	irreversible := record.ComponentStatus{Name: "etcd", ToVersion: "v3.6.4", Phase: record.RollbackFailed, Code: record.CodeIrreversible}
	failed := record.ComponentStatus{Name: "web", ToVersion: "v2.0", Phase: record.RollbackFailed, Code: record.CodeRollbackFailed}
	for _, tc := range []struct {
		s    *record.Status
		want string
	}{
		{status(irreversible, failed), "increment spec.retry to retry the rollbacks that failed, or abandon the upgrade (spec.abandon)"},
		{status(irreversible), "the rollback stopped at irreversible components, which stay at their target (etcd v3.6.4 on hop 1), so a retry changes nothing: bring the system to one release by hand, then abandon the upgrade (spec.abandon)"},
	} {
		if got := rollbackNext(tc.s); got != tc.want {
			t.Errorf("rollbackNext = %q, want %q", got, tc.want)
		}
	}
}
