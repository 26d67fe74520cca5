package path_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

func state(t testing.TB, s string) path.State {
	t.Helper()
	st, err := path.ParseState(s)
	require.NoError(t, err)
	return st
}

// steps is a route across tracks as "track version" per hop.
func steps(r *path.Route) []string {
	out := []string{}
	for _, h := range r.Hops {
		out = append(out, h.Track+" "+h.To.String())
	}
	return out
}

// The five StarlingX change types (../shared/seeds/starlingx-upgrade-operator.txt)
// come out of the rules and the supports constraints of testdata/two-track
// alone.
func TestStarlingXChangeTypes(t *testing.T) {
	c, err := release.LoadDir("../testdata/two-track")
	require.NoError(t, err)
	tests := []struct {
		name, from, to string
		want           []string
	}{
		{"patch only", "platform=13.01.0,kubernetes=v1.33.0", "platform=13.01.2",
			[]string{"platform 13.01.2"}},
		{"kubernetes only", "platform=13.01.2,kubernetes=v1.33.0", "kubernetes=v1.34.1",
			[]string{"kubernetes v1.34.1"}},
		{"patch and kubernetes: platform, then kubernetes", "platform=13.01.0,kubernetes=v1.33.0", "platform=13.01.2,kubernetes=v1.34.1",
			[]string{"platform 13.01.2", "kubernetes v1.34.1"}},
		{"patch and kubernetes patch: platform first", "platform=13.01.0,kubernetes=v1.33.0", "platform=13.01.1,kubernetes=v1.33.1",
			[]string{"platform 13.01.1", "kubernetes v1.33.1"}},
		{"major to GA: highest patch, highest kubernetes it supports, the major, the target kubernetes",
			"platform=13.01.0,kubernetes=v1.33.0", "platform=27.03.0,kubernetes=v1.35.0",
			[]string{"platform 13.01.2", "kubernetes v1.34.1", "platform 27.03.0", "kubernetes v1.35.0"}},
		{"major to a patch of the new line: ..., GA, the patch, kubernetes",
			"platform=13.01.0,kubernetes=v1.33.0", "platform=27.03.1,kubernetes=v1.35.0",
			[]string{"platform 13.01.2", "kubernetes v1.34.1", "platform 27.03.0", "platform 27.03.1", "kubernetes v1.35.0"}},
		{"a target naming one track: the other stays", "platform=13.01.0,kubernetes=v1.33.0", "platform=27.03.0",
			[]string{"platform 13.01.2", "platform 27.03.0"}},
		{"a target naming one track: the other moves as needed", "platform=13.01.0,kubernetes=v1.32.0", "platform=27.03.0",
			[]string{"platform 13.01.2", "kubernetes v1.33.1", "platform 27.03.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := path.Resolve(c, state(t, tt.from), state(t, tt.to))
			require.NoError(t, err)
			assert.Equal(t, tt.want, steps(r), "Resolve(%s, %s)", tt.from, tt.to)
			// Every state entered is allowed, and the route ends on the target.
			for _, s := range r.States()[1:] {
				p, _ := c.ReleaseOn("platform", s["platform"])
				require.NotNil(t, p)
				assert.True(t, p.Supports["kubernetes"].Check(s["kubernetes"]), "state %s is not allowed", s)
			}
			for track, v := range state(t, tt.to) {
				assert.True(t, r.ToState[track].Equal(v), "route ends at %s, want %s", r.ToState, tt.to)
			}
			assert.Equal(t, "platform", r.Track)
		})
	}
}

func TestResolveTracksErrors(t *testing.T) {
	c, err := release.LoadDir("../testdata/two-track")
	require.NoError(t, err)

	// The target state itself is not allowed.
	_, err = path.Resolve(c, state(t, "platform=13.01.0,kubernetes=v1.33.0"), state(t, "platform=13.01.0,kubernetes=v1.35.0"))
	require.ErrorIs(t, err, path.ErrNoRoute)
	var se *path.NoRouteError
	require.True(t, errors.As(err, &se))
	assert.True(t, se.TargetNotAllowed)
	assert.Contains(t, err.Error(), "the target state is not allowed: platform 13.01.0 supports kubernetes >= v1.32.0, < v1.34.0, not v1.35.0")

	// Compatibility blocks every sequence: 13.01.1 cannot go to 27.03.0,
	// and a kubernetes v1.32 system must reach v1.35 under 13.01.x.
	_, err = path.Resolve(c, state(t, "platform=13.01.1,kubernetes=v1.33.0"), state(t, "platform=13.01.1,kubernetes=v1.34.0"))
	require.True(t, errors.As(err, &se))
	assert.True(t, se.TargetNotAllowed)

	// One track cannot reach its target: the error names its missing rule.
	_, err = path.Resolve(c, state(t, "platform=27.03.0,kubernetes=v1.35.0"), state(t, "platform=13.01.2"))
	require.True(t, errors.As(err, &se))
	assert.Equal(t, "platform", se.Track)
	var nr *path.NoRouteError
	require.True(t, errors.As(err, &nr), "unwraps to the track's NoRouteError")
	assert.Contains(t, err.Error(), "track platform cannot reach its target: no route from 27.03.0 to 13.01.2 on track platform")

	// Every track reaches its target alone, but no sequence is allowed.
	// (The current state need not be allowed: 27.03.0 runs v1.33 and later.)
	_, err = path.Resolve(c, state(t, "platform=27.03.0,kubernetes=v1.32.0"), state(t, "kubernetes=v1.32.1"))
	require.True(t, errors.As(err, &se))
	assert.False(t, se.TargetNotAllowed)
	assert.Empty(t, se.Track)
	assert.Equal(t, "path: no route from kubernetes=v1.32.0,platform=27.03.0 to kubernetes=v1.32.1: "+
		"the current state is not allowed (platform 27.03.0 supports kubernetes >= v1.33.0, < v1.36.0, not v1.32.0); every track reaches its target, "+
		"but compatibility blocks every sequence: platform 27.03.0 and 27.03.1 support kubernetes >= v1.33.0, < v1.36.0, not v1.32.0 or v1.32.1", err.Error())
	assert.Len(t, se.Blocks, 2, "Blocks keep each refusal")

	// A kubernetes target the old line cannot run moves the platform as
	// needed, in the StarlingX order.
	r, err := path.Resolve(c, state(t, "platform=13.01.0,kubernetes=v1.32.0"), state(t, "kubernetes=v1.35.0"))
	require.NoError(t, err)
	assert.Equal(t, []string{"platform 13.01.2", "kubernetes v1.33.1", "kubernetes v1.34.1", "platform 27.03.0", "kubernetes v1.35.0"}, steps(r))

	// Unknown tracks list the catalog's tracks.
	_, err = path.Resolve(c, state(t, "platform=13.01.0,kubernets=v1.33.0"), state(t, "platform=13.01.2"))
	require.ErrorIs(t, err, path.ErrUnknownTrack)
	assert.EqualError(t, err, `path: unknown track "kubernets": the catalog's tracks: kubernetes, platform`)
	_, err = path.Resolve(c, state(t, "platform=13.01.0"), state(t, "kubernetes=v1.34.0"))
	require.ErrorIs(t, err, path.ErrInvalidOption)
	_, err = path.Resolve(c, state(t, "platform=13.01.9,kubernetes=v1.33.0"), state(t, "platform=13.01.2"))
	require.ErrorIs(t, err, path.ErrUnknownVersion)
	assert.Contains(t, err.Error(), "on track platform")
}

// A current state that leaves out a track tied to one it names (Supports,
// either way) cannot keep to it: platform=13.01.2 alone went straight to
// 27.03.0, which needs kubernetes >= v1.33. Resolve refuses it, as a
// one-track query is refused; a target naming only some tracks stays
// allowed.
func TestResolveTracksCurrentLeavesOutTiedTrack(t *testing.T) {
	c, err := release.LoadDir("../testdata/two-track")
	require.NoError(t, err)
	tests := []struct {
		name, from, to string
		// err is the whole message; "" for a route.
		err string
	}{
		{"platform without its kubernetes", "platform=13.01.2", "platform=27.03.0",
			"path: invalid option: the current state leaves out track kubernetes, tied to track platform (release 13.01.0 on track platform supports kubernetes >= v1.32.0, < v1.34.0): " +
				"give its version in the current state (the current argument of Resolve): platform=13.01.2,kubernetes=VERSION"},
		{"platform without its kubernetes, a patch", "platform=13.01.0", "platform=13.01.2",
			"path: invalid option: the current state leaves out track kubernetes, tied to track platform (release 13.01.0 on track platform supports kubernetes >= v1.32.0, < v1.34.0): " +
				"give its version in the current state (the current argument of Resolve): platform=13.01.0,kubernetes=VERSION"},
		{"kubernetes without the platform that constrains it", "kubernetes=v1.33.0", "kubernetes=v1.35.0",
			"path: invalid option: the current state leaves out track platform, tied to track kubernetes (release 13.01.0 on track platform supports kubernetes >= v1.32.0, < v1.34.0): " +
				"give its version in the current state (the current argument of Resolve): kubernetes=v1.33.0,platform=VERSION"},
		{"both tracks, a target naming one", "platform=13.01.2,kubernetes=v1.33.0", "platform=27.03.0", ""},
		{"both tracks, a target naming the other", "platform=13.01.2,kubernetes=v1.33.0", "kubernetes=v1.34.1", ""},
	}
	// Two tracks left out: both named, in order.
	rels := []release.Release{
		{Name: "a1", Version: v("v1.0"), Track: "a", Supports: map[string]release.Constraint{
			"b": release.MustParseConstraint(">= v1.0"), "c": release.MustParseConstraint(">= v2.0")}},
		{Name: "a2", Version: v("v1.1"), Track: "a"},
		{Name: "b1", Version: v("v1.0"), Track: "b"}, {Name: "c1", Version: v("v2.0"), Track: "c"},
	}
	three, err := release.NewCatalog(rels, nil, []release.UpgradePath{{Name: "a", Track: "a", Rules: []release.Rule{rule("v1.0", "v1.1")}}})
	require.NoError(t, err)
	_, err = path.Resolve(three, state(t, "a=v1.0"), state(t, "a=v1.1"))
	require.ErrorIs(t, err, path.ErrInvalidOption)
	assert.EqualError(t, err, "path: invalid option: the current state leaves out tracks b, tied to track a (release v1.0 on track a supports b >= v1.0); "+
		"c, tied to track a (release v1.0 on track a supports c >= v2.0): give their versions in the current state (the current argument of Resolve): a=v1.0,b=VERSION,c=VERSION")
	_, err = path.Resolve(three, state(t, "a=v1.0,b=v1.0,c=v2.0"), state(t, "a=v1.1"))
	require.NoError(t, err, "every tied track named")

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := path.Resolve(c, state(t, tt.from), state(t, tt.to))
			if tt.err == "" {
				require.NoError(t, err, "Resolve(%s, %s)", tt.from, tt.to)
				assert.NotEmpty(t, r.Hops)
				return
			}
			require.ErrorIs(t, err, path.ErrInvalidOption, "Resolve(%s, %s) = %v, want a refusal", tt.from, tt.to, r)
			assert.EqualError(t, err, tt.err)
		})
	}
}

func TestParseState(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{in: "platform=13.01.0,kubernetes=v1.33.0", want: "kubernetes=v1.33.0,platform=13.01.0"},
		{in: " platform = 13.01.0 ", want: "platform=13.01.0"},
		{in: "v26.06", want: "v26.06"},
		{in: "", err: `path: empty state: want a version ("v26.09") or one version per track ("platform=27.03.0,kubernetes=v1.34.1")`},
		{in: "platform=13.01.0,v1.33", err: `path: invalid state "platform=13.01.0,v1.33": part 2, "v1.33", is not track=version: a state of several tracks names the track of each version`},
		{in: "platform=13.01.0,platform=13.01.1", err: `track "platform" is given twice`},
		{in: "platform=x", err: `track "platform": release: invalid version "x"`},
		{in: "k8s.io/x=v1.2", err: `path: invalid state "k8s.io/x=v1.2": track "k8s.io/x" holds "/"; a track name takes only letters, digits, ".", "_" and "-"`},
		{in: "plat form=v1.2", err: `track "plat form" holds " "`},
	} {
		s, err := path.ParseState(tt.in)
		if tt.err != "" {
			assert.ErrorContains(t, err, tt.err, "ParseState(%q)", tt.in)
			continue
		}
		require.NoError(t, err, "ParseState(%q)", tt.in)
		assert.Equal(t, tt.want, s.String(), "ParseState(%q)", tt.in)
	}
}

// Regression: a version asked for on a track with no releases said "the
// track has no releases" without naming the catalog's tracks. A bare
// version is the state of the one track that has it, so Resolve names the
// track it leaves out; an Index of the default track names the track that
// has the version.
func TestUnknownVersionNamesTracks(t *testing.T) {
	c, err := release.LoadDir("../testdata/two-track")
	require.NoError(t, err)
	_, err = path.Resolve(c, at(v("13.01.0")), at(v("27.03.0")))
	require.ErrorIs(t, err, path.ErrInvalidOption)
	assert.EqualError(t, err, `path: invalid option: the current state leaves out track kubernetes, tied to track platform (release 13.01.0 on track platform supports kubernetes >= v1.32.0, < v1.34.0): give its version in the current state (the current argument of Resolve): platform=13.01.0,kubernetes=VERSION`)
	ix, err := path.NewIndex(c)
	require.NoError(t, err)
	_, err = ix.Resolve(v("13.01.0"), v("27.03.0"))
	require.ErrorIs(t, err, path.ErrUnknownVersion)
	assert.EqualError(t, err, `path: unknown current version 13.01.0: 13.01.0 is a version of track platform, not of this one; give a state, one version per track (the command line: --from platform=13.01.0,...)`)
	_, err = ix.Resolve(v("v1.33.0"), v("v9.9"))
	assert.EqualError(t, err, `path: unknown current version v1.33.0: v1.33.0 is a version of track kubernetes, not of this one; give a state, one version per track (the command line: --from kubernetes=v1.33.0,...)`)
}

// A one-track route on a track that another track's versions constrain
// (Release.Supports) cannot keep to them: it went from platform 13.01.0 to
// 27.03.1 whatever Kubernetes version ran. Resolve and Targets refuse a
// state that leaves out the tied track, and NewIndex an index of it.
func TestOneTrackRefusedWhereTracksAreTied(t *testing.T) {
	c, err := release.LoadDir("../testdata/two-track")
	require.NoError(t, err)
	const want = `path: invalid option: the current state leaves out track kubernetes, tied to track platform (release 13.01.0 on track platform supports kubernetes >= v1.32.0, < v1.34.0): give its version in the current state (the current argument of Resolve): platform=13.01.0,kubernetes=VERSION`
	_, err = path.Resolve(c, path.State{"platform": v("13.01.0")}, path.State{"platform": v("27.03.1")})
	require.ErrorIs(t, err, path.ErrInvalidOption)
	assert.EqualError(t, err, want)
	_, err = path.Targets(c, path.State{"platform": v("13.01.0")})
	assert.EqualError(t, err, want)
	_, err = path.Resolve(c, path.State{"kubernetes": v("v1.33.0")}, path.State{"kubernetes": v("v1.34.0")})
	assert.ErrorContains(t, err, "the current state leaves out track platform, tied to track kubernetes")
	_, err = path.NewIndex(c, path.WithTrack("platform"))
	assert.EqualError(t, err, `path: invalid option: track platform is tied to track kubernetes (release 13.01.0 on track platform supports kubernetes >= v1.32.0, < v1.34.0): a route on one track cannot keep to it; resolve across tracks with Resolve, a state naming both (the command line: --from platform=VERSION,kubernetes=VERSION)`)
	r, err := path.Resolve(c, path.State{"platform": v("13.01.0"), "kubernetes": v("v1.33.0")}, path.State{"platform": v("27.03.1")})
	require.NoError(t, err)
	assert.NotEmpty(t, r.Hops)
}

// FuzzParseState: a state that parses prints as a state that parses to the
// same versions.
func FuzzParseState(f *testing.F) {
	for _, s := range []string{"platform=13.01.0,kubernetes=v1.33.0", "v26.06", "=v1.0", "a=1.0,b=2.0-rc.1", " a = 1.0 ", "a=1.0,a=1.1", ","} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := path.ParseState(s)
		if err != nil {
			return
		}
		back, err := path.ParseState(st.String())
		if err != nil {
			t.Fatalf("ParseState(%q) = %v, but its String %q does not parse: %v", s, st, st.String(), err)
		}
		if len(back) != len(st) {
			t.Fatalf("ParseState(%q).String() = %q parses to %d tracks, want %d", s, st.String(), len(back), len(st))
		}
		for tr, v := range st {
			if !back[tr].Equal(v) {
				t.Fatalf("ParseState(%q): track %q is %s, after a round trip %s", s, tr, v, back[tr])
			}
		}
	})
}

// Within one track, Resolve across tracks breaks ties as Resolve does (the highest
// version); the smallest change decides only between tracks.
func TestResolveTracksTieBreakWithinTrack(t *testing.T) {
	rels := []release.Release{
		{Name: "a1", Version: v("v1.0"), Track: "a"}, {Name: "a2", Version: v("v1.0.1"), Track: "a"},
		{Name: "a3", Version: v("v2.0"), Track: "a"}, {Name: "a4", Version: v("v3.0"), Track: "a"},
		{Name: "b1", Version: v("v1.0"), Track: "b"},
	}
	paths := []release.UpgradePath{{Name: "a", Track: "a", Rules: []release.Rule{
		rule("v1.0", "v1.0.1"), rule("v1.0", "v2.0"), rule("v1.0.1", "v3.0"), rule("v2.0", "v3.0"),
	}}}
	c, err := release.NewCatalog(rels, nil, paths)
	require.NoError(t, err)
	one, err := path.Resolve(c, path.State{"a": v("v1.0")}, path.State{"a": v("v3.0")})
	require.NoError(t, err)
	r, err := path.Resolve(c, state(t, "a=v1.0,b=v1.0"), state(t, "a=v3.0"))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v2.0", "v3.0"}, hopsOf(one))
	assert.Equal(t, []string{"a v2.0", "a v3.0"}, steps(r), "the one-track rule: the highest version")
}

// A version without a track (a bare --to 27.03.0, or =27.03.0, its
// spelling with an empty track name) in a catalog without a default track
// is the version of the one track that has it; when none has it or
// several do, the error says so and how to name the track.
// Regression: it was `unknown track "": the catalog's tracks: ...`.
func TestResolveTracksVersionWithoutTrack(t *testing.T) {
	two, err := release.LoadDir("../testdata/two-track")
	require.NoError(t, err)
	rels := []release.Release{
		{Name: "a1", Version: v("v1.0"), Track: "a"}, {Name: "a2", Version: v("v2.0"), Track: "a"},
		{Name: "b1", Version: v("v1.0"), Track: "b"}, {Name: "b2", Version: v("v2.0"), Track: "b"},
		{Name: "b3", Version: v("v3.0"), Track: "b"},
	}
	paths := []release.UpgradePath{
		{Name: "a", Track: "a", Rules: []release.Rule{rule("v1.0", "v2.0")}},
		{Name: "b", Track: "b", Rules: []release.Rule{rule("v1.0", "v2.0"), rule("v2.0", "v3.0")}},
	}
	ab, err := release.NewCatalog(rels, nil, paths)
	require.NoError(t, err)

	const starlingx = "platform=13.01.0,kubernetes=v1.32.0"
	tests := []struct {
		name     string
		c        *release.Catalog
		from, to string
		same     string // the target, as a state naming its track
		err      string
		is       error
	}{
		{name: "bare platform version", c: two, from: starlingx, to: "27.03.0", same: "platform=27.03.0"},
		{name: "bare kubernetes version", c: two, from: starlingx, to: "v1.35.1", same: "kubernetes=v1.35.1"},
		{name: "empty track name", c: two, from: starlingx, to: "=27.03.0", same: "platform=27.03.0"},
		{name: "one track of two has it", c: ab, from: "a=v1.0,b=v1.0", to: "v3.0", same: "b=v3.0"},
		{name: "bare current version", c: two, from: "13.01.0", to: "kubernetes=v1.33.0", is: path.ErrInvalidOption,
			err: `path: invalid option: the target names track "kubernetes" but the current state does not: give its version in the current state (platform=13.01.0)`},
		{name: "no track has it", c: two, from: starlingx, to: "9.9.9", is: path.ErrUnknownTrack,
			err: `path: target version 9.9.9 names no track (its track is empty) and the catalog has no default track; no track has 9.9.9: ` +
				`give track=version, the catalog's tracks: kubernetes, platform (the command line: --to TRACK=VERSION)`},
		{name: "several tracks have it", c: ab, from: "a=v1.0,b=v1.0", to: "v2.0", is: path.ErrUnknownTrack,
			err: `path: target version v2.0 names no track (its track is empty) and the catalog has no default track; tracks a, b have v2.0: ` +
				`name one (the command line: --to a=v2.0 or --to b=v2.0)`},
		{name: "several tracks have the current version", c: ab, from: "v1.0", to: "a=v2.0", is: path.ErrUnknownTrack,
			err: `path: current version v1.0 names no track (its track is empty) and the catalog has no default track; tracks a, b have v1.0: ` +
				`name one (the command line: --from a=v1.0 or --from b=v1.0)`},
		{name: "its track given too", c: two, from: starlingx, to: "=27.03.0,platform=27.03.1", is: path.ErrInvalidOption,
			err: `path: invalid option: the target state gives track platform twice: platform=27.03.1, and 27.03.0 without a track name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := path.Resolve(tt.c, state(t, tt.from), state(t, tt.to))
			if tt.err != "" {
				require.ErrorIs(t, err, tt.is)
				assert.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err, "Resolve(%s, %s)", tt.from, tt.to)
			want, err := path.Resolve(tt.c, state(t, tt.from), state(t, tt.same))
			require.NoError(t, err)
			assert.Equal(t, want, r, "Resolve(%s, %s), want the route to %s", tt.from, tt.to, tt.same)
			for tr, v := range state(t, tt.same) {
				assert.Equal(t, v.String(), r.ToState[tr].String(), "track %s of the route's target state %s", tr, r.ToState)
			}
		})
	}
}

// twoTracks builds a catalog of tracks p and k: each p release supports the
// k versions sup gives it; pRules and kRules are the tracks' rules.
func twoTracks(t testing.TB, pv, kv []string, sup map[string]string, pRules, kRules []release.Rule) *release.Catalog {
	t.Helper()
	var rels []release.Release
	for _, x := range pv {
		r := release.Release{Name: "p-" + x, Version: v(x), Track: "p"}
		if s, ok := sup[x]; ok {
			r.Supports = map[string]release.Constraint{"k": release.MustParseConstraint(s)}
		}
		rels = append(rels, r)
	}
	for _, x := range kv {
		rels = append(rels, release.Release{Name: "k-" + x, Version: v(x), Track: "k"})
	}
	c, err := release.NewCatalog(rels, nil, []release.UpgradePath{
		{Name: "p", Track: "p", Rules: pRules},
		{Name: "k", Track: "k", Rules: kRules},
	})
	require.NoError(t, err)
	return c
}

// Regression (issue 25): when only an interleaving through a risky edge is
// compatible, every track reaches its target alone, and the error said only
// that compatibility blocks every sequence. The relaxations are found over
// the states: a minimal set, each needed, in route order, with the route
// it gives.
func TestResolveTracksRelaxations(t *testing.T) {
	pv, kv := []string{"v1.0.0", "v2.0.0"}, []string{"v1.0", "v1.1", "v1.2"}
	sup := map[string]string{"v1.0.0": ">= v1.0, < v1.2", "v2.0.0": ">= v1.1"}
	tests := []struct {
		name           string
		pRules, kRules []release.Rule
		opts           []path.Option
		want           []string // the relaxations; nil: none gives a route
		relaxed        []string
		text           string
	}{
		{
			name:   "a risky edge of one track",
			pRules: []release.Rule{rule("v1.0.0", "v2.0.0")},
			kRules: []release.Rule{rule("v1.0", "v1.2"), rule("v1.0", "v1.1", risks("etcd-migration")), rule("v1.1", "v1.2")},
			want:   []string{"accept risk etcd-migration"}, relaxed: []string{"k v1.1", "p v2.0.0", "k v1.2"},
			text: "path: no route from k=v1.0,p=v1.0.0 to k=v1.2,p=v2.0.0: every track reaches its target, but compatibility blocks every sequence; accept risk etcd-migration to get a route; the constraints in the way: ",
		},
		{
			name:   "risks of two tracks, an unneeded one left out",
			pRules: []release.Rule{rule("v1.0.0", "v2.0.0", risks("major"))},
			kRules: []release.Rule{rule("v1.0", "v1.2", risks("skip")), rule("v1.0", "v1.1", risks("etcd-migration")), rule("v1.1", "v1.2")},
			opts:   []path.Option{path.AcceptRisks("skip")},
			want:   []string{"accept risk etcd-migration", "accept risk major"}, relaxed: []string{"k v1.1", "p v2.0.0", "k v1.2"},
			text: "accept risks etcd-migration and major, together, to get a route",
		},
		{
			name:   "no relaxation helps",
			pRules: []release.Rule{rule("v1.0.0", "v2.0.0")},
			kRules: []release.Rule{rule("v1.0", "v1.2"), rule("v1.0", "v1.1", blocked("no")), rule("v1.1", "v1.2")},
			text:   "every track reaches its target, but compatibility blocks every sequence: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := twoTracks(t, pv, kv, sup, tt.pRules, tt.kRules)
			from, to := state(t, "p=v1.0.0,k=v1.0"), state(t, "p=v2.0.0,k=v1.2")
			_, err := path.Resolve(c, from, to, tt.opts...)
			var se *path.NoRouteError
			require.True(t, errors.As(err, &se), "Resolve(%s, %s) = %v, want a *NoRouteError", from, to, err)
			var got []string
			for _, r := range se.Relaxations {
				got = append(got, r.String())
			}
			assert.Equal(t, tt.want, got, "Resolve(%s, %s): relaxations", from, to)
			assert.Contains(t, err.Error(), tt.text)
			if tt.want == nil {
				assert.Nil(t, se.Relaxed)
				return
			}
			require.NotNil(t, se.Relaxed, "the route the relaxations give")
			assert.Equal(t, tt.relaxed, steps(se.Relaxed))
			// The relaxations give that route, and each one is needed.
			r, err := path.Resolve(c, from, to, append(slices.Clone(tt.opts), path.AcceptRisks(se.Risks...))...)
			require.NoError(t, err, "with %v", se.Risks)
			assert.Equal(t, tt.relaxed, steps(r))
			for i := range se.Risks {
				fewer := slices.Delete(slices.Clone(se.Risks), i, i+1)
				_, err := path.Resolve(c, from, to, append(slices.Clone(tt.opts), path.AcceptRisks(fewer...))...)
				assert.ErrorIs(t, err, path.ErrNoRoute, "accepting %v only, want no route", fewer)
			}
		})
	}
}

// Regression (issue 25): the multi-track message listed one line per
// version a constraint refused (near duplicates, the constraint repeated),
// and never said that the current state itself is not allowed.
func TestNoRouteMessageTracks(t *testing.T) {
	var kv []string
	for i := range 21 {
		kv = append(kv, fmt.Sprintf("v1.%d", i))
	}
	var kRules []release.Rule
	for i := 1; i < len(kv); i++ {
		kRules = append(kRules, rule(kv[i-1], kv[i]))
	}
	c := twoTracks(t, []string{"v1.0.0", "v2.0.0"}, kv, map[string]string{"v1.0.0": "< v1.10", "v2.0.0": ">= v1.15"},
		[]release.Rule{rule("v1.0.0", "v2.0.0")}, kRules)
	tests := []struct {
		name, from, to string
		want           string
	}{
		{"one line per constraint", "p=v1.0.0,k=v1.0", "p=v2.0.0,k=v1.20",
			"path: no route from k=v1.0,p=v1.0.0 to k=v1.20,p=v2.0.0: every track reaches its target, but compatibility blocks every sequence: " +
				"p v1.0.0 supports k < v1.10, not v1.10; " +
				"p v2.0.0 supports k >= v1.15, not v1.0, v1.1, v1.2, v1.3, v1.4, v1.5, v1.6, v1.7 or 2 more"},
		{"the current state first", "p=v2.0.0,k=v1.3", "k=v1.20",
			"path: no route from k=v1.3,p=v2.0.0 to k=v1.20: the current state is not allowed (p v2.0.0 supports k >= v1.15, not v1.3); " +
				"every track reaches its target, but compatibility blocks every sequence: p v2.0.0 supports k >= v1.15, not v1.4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := path.Resolve(c, state(t, tt.from), state(t, tt.to))
			require.ErrorIs(t, err, path.ErrNoRoute)
			assert.Equal(t, tt.want, err.Error(), "Resolve(%s, %s)", tt.from, tt.to)
		})
	}
}

// A target that only a risky edge of another track makes allowed is not
// ruled out before the search: the error names the risk.
func TestResolveTracksStaticLeavesRelaxations(t *testing.T) {
	c := twoTracks(t, []string{"v1.0.0", "v2.0.0"}, []string{"v1.0", "v1.1"}, map[string]string{"v1.0.0": "*", "v2.0.0": ">= v1.1"},
		[]release.Rule{rule("v1.0.0", "v2.0.0")}, []release.Rule{rule("v1.0", "v1.1", risks("etcd-migration"))})
	from, to := state(t, "p=v1.0.0,k=v1.0"), state(t, "p=v2.0.0")
	_, err := path.Resolve(c, from, to)
	var se *path.NoRouteError
	require.True(t, errors.As(err, &se), "Resolve(%s, %s) = %v, want a *NoRouteError", from, to, err)
	assert.Equal(t, []string{"etcd-migration"}, se.Risks, "Resolve(%s, %s): %v", from, to, err)
	assert.Empty(t, se.Static)
	r, err := path.Resolve(c, from, to, path.AcceptRisks(se.Risks...))
	require.NoError(t, err)
	assert.Equal(t, []string{"k v1.1", "p v2.0.0"}, steps(r))
}

// Targets of a state across tracks: every version of each track that
// Resolve reaches, by track then version, each with the route Resolve
// returns; from the newest state, none (a *NoRouteError of the states).
func TestTargetsTracks(t *testing.T) {
	c, err := release.LoadDir("../testdata/two-track")
	require.NoError(t, err)
	from := state(t, "platform=13.01.0,kubernetes=v1.33.0")
	ts, err := path.Targets(c, from)
	require.NoError(t, err)
	require.NotEmpty(t, ts)
	var got []string
	for i, tg := range ts {
		got = append(got, tg.Track+"="+tg.Version.String())
		if i > 0 {
			prev := ts[i-1]
			assert.True(t, prev.Track < tg.Track || prev.Track == tg.Track && prev.Version.Compare(tg.Version) < 0, "Targets(%s): %s before %s, want by track then version", from, got[i-1], got[i])
		}
		want, err := path.Resolve(c, from, tg.State())
		require.NoError(t, err, "Resolve(%s, %s)", from, tg.State())
		assert.Equal(t, want, tg.Route(), "Targets(%s): the route to %s", from, tg.State())
		assert.Equal(t, len(want.Hops), tg.Hops, "Targets(%s): hops to %s", from, tg.State())
		assert.Equal(t, want.Hops[0], *tg.Next(), "Targets(%s): next hop to %s", from, tg.State())
		assert.Equal(t, want.Hops[len(want.Hops)-1], *tg.Last(), "Targets(%s): last hop to %s", from, tg.State())
	}
	assert.Contains(t, got, "platform=27.03.0", "Targets(%s)", from)
	assert.Contains(t, got, "kubernetes=v1.34.1", "Targets(%s)", from)

	last := path.State{}
	for _, tr := range []string{"platform", "kubernetes"} {
		vs := c.TrackVersions(tr)
		last[tr] = vs[len(vs)-1]
	}
	_, err = path.Targets(c, last)
	var nr *path.NoRouteError
	require.True(t, errors.As(err, &nr), "Targets(%s) = %v, want a *NoRouteError", last, err)
	assert.Equal(t, last, nr.FromState)
	assert.EqualError(t, err, "path: no version of tracks kubernetes, platform is reachable from "+last.String())
}
