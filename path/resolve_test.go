package path_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

func TestResolveTestdata(t *testing.T) {
	c := loadTestdata(t)
	tests := []struct {
		name     string
		from, to string
		opts     []path.Option
		want     []string // versions of the route, from first
	}{
		{name: "rc.2 goes through rc.3", from: "v26.06-rc.2", to: "v26.06",
			want: []string{"v26.06-rc.2", "v26.06-rc.3", "v26.06"}},
		{name: "rc.1 direct edge is blocked, goes through rc.3", from: "v26.06-rc.1", to: "v26.06",
			want: []string{"v26.06-rc.1", "v26.06-rc.3", "v26.06"}},
		{name: "v26.03 to v26.09 is 2 hops and avoids the deprecated edge", from: "v26.03", to: "v26.09",
			want: []string{"v26.03", "v26.06", "v26.09"}},
		{name: "rc.2 to v26.09", from: "v26.06-rc.2", to: "v26.09",
			want: []string{"v26.06-rc.2", "v26.06-rc.3", "v26.06", "v26.09"}},
		{name: "deprecated edge avoided by a longer clean route", from: "v26.03", to: "v26.06.1",
			want: []string{"v26.03", "v26.06", "v26.06.1"}},
		{name: "range rule from a patch release", from: "v26.06.1", to: "v26.09",
			want: []string{"v26.06.1", "v26.09"}},
		{name: "direct range edge beats the risky two-hop route", from: "v26.06", to: "v26.09",
			opts: []path.Option{path.AcceptRisks("containerd-v2-config")},
			want: []string{"v26.06", "v26.09"}},
		{name: "risky edge with its risk accepted", from: "v26.06", to: "v26.09-rc.1",
			opts: []path.Option{path.AcceptRisks("containerd-v2-config")},
			want: []string{"v26.06", "v26.09-rc.1"}},
		{name: "from a prerelease", from: "v26.09-rc.1", to: "v26.09",
			want: []string{"v26.09-rc.1", "v26.09"}},
		{name: "same version, no hops", from: "v26.06", to: "v26.06",
			want: []string{"v26.06"}},
		{name: "same version spelled differently", from: "v26.06", to: "26.6.0",
			want: []string{"v26.06"}},
		{name: "not installable current is fine", from: "v26.06-rc.1", to: "v26.06-rc.3",
			want: []string{"v26.06-rc.1", "v26.06-rc.3"}},
		{name: "guard does not trip on testdata", from: "v26.03", to: "v26.09",
			opts: []path.Option{path.WithGuards(path.KubernetesSkewGuard())},
			want: []string{"v26.03", "v26.06", "v26.09"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := path.Resolve(c, at(v(tt.from)), at(v(tt.to)), tt.opts...)
			require.NoError(t, err)
			assert.Equal(t, tt.want, hopsOf(r))
			assert.Len(t, r.Hops, len(tt.want)-1)
			assert.NotNil(t, r.Hops, "an empty route has an empty, non-nil Hops")
		})
	}
}

func TestResolveTestdataHopDetails(t *testing.T) {
	c := loadTestdata(t)
	r, err := path.Resolve(c, at(v("v26.03")), at(v("v26.09")))
	require.NoError(t, err)
	require.Len(t, r.Hops, 2)
	h := r.Hops[0]
	assert.Equal(t, "v26.03", h.From.String())
	assert.Equal(t, "v26.06", h.To.String())
	assert.Equal(t, "v26.03", h.Rule.From.String())
	assert.Equal(t, []release.Check{{Name: "cluster-healthy", Required: true}, {Name: "etcd-backup", Required: true}}, h.PreChecks)
	assert.Equal(t, []release.Check{{Name: "nodes-ready", Required: true}}, h.PostChecks)
	assert.Empty(t, h.Risks)
	assert.Empty(t, h.Deprecated)
	assert.Empty(t, h.Overrides)
	assert.Contains(t, h.Rule.Source.File, "upgradepath.yaml")

	h = r.Hops[1]
	assert.Equal(t, ">= v26.06, < v26.09", h.Rule.From.String(), "the range rule allowed the second hop")
	assert.Len(t, h.PreChecks, 3)
	assert.False(t, h.PreChecks[2].Required)

	// The hop's rule is a copy: changing it leaves the catalog alone.
	h.Rule.PreChecks[0].Name = "changed"
	again, err := path.Resolve(c, at(v("v26.03")), at(v("v26.09")))
	require.NoError(t, err)
	assert.Equal(t, "cluster-healthy", again.Hops[1].PreChecks[0].Name)
	assert.Equal(t, "cluster-healthy", c.Rules("")[6].PreChecks[0].Name)

	// A deprecated version is reported on the hop.
	r, err = path.Resolve(c, at(v("v26.06")), at(v("v26.09-rc.1")), path.AcceptRisks("containerd-v2-config"))
	require.NoError(t, err)
	assert.Equal(t, "preview build", r.Hops[0].ToDeprecated)
	require.Len(t, r.Hops[0].Risks, 1)
	assert.Equal(t, "containerd-v2-config", r.Hops[0].Risks[0].Name)
}

func TestResolveTestdataRiskNeedsAcceptance(t *testing.T) {
	c := loadTestdata(t)
	_, err := path.Resolve(c, at(v("v26.06")), at(v("v26.09-rc.1")))
	nr := noRoute(t, err)
	assert.Contains(t, err.Error(), "containerd-v2-config")
	assert.Contains(t, err.Error(), "accept risk containerd-v2-config to get a route")
	assert.Equal(t, []string{"containerd-v2-config"}, nr.Risks)
	require.NotNil(t, nr.Relaxed)
	assert.Equal(t, []string{"v26.06", "v26.09-rc.1"}, hopsOf(nr.Relaxed))
	require.Len(t, nr.Closed, 1)
	assert.Equal(t, "v26.06", nr.Closed[0].From.String())
	assert.Equal(t, "v26.09-rc.1", nr.Closed[0].To.String())
	require.Len(t, nr.Closed[0].Risks, 1)
	assert.Equal(t, "containerd-v2-config", nr.Closed[0].Risks[0].Name)
	assert.Equal(t, []string{"v26.09", "v26.06.1"}, strs(nr.Reachable), "furthest first")
	assert.Empty(t, nr.Reaching, "nothing leads to v26.09-rc.1 without risk")
	assert.False(t, nr.Downgrade)

	// Accepting another risk does not help.
	_, err = path.Resolve(c, at(v("v26.06")), at(v("v26.09-rc.1")), path.AcceptRisks("something-else"))
	require.ErrorIs(t, err, path.ErrNoRoute)

	// From v26.03 the risky edge is one hop further.
	_, err = path.Resolve(c, at(v("v26.03")), at(v("v26.09-rc.1")))
	nr = noRoute(t, err)
	assert.Equal(t, []string{"containerd-v2-config"}, nr.Risks)
	assert.Equal(t, []string{"v26.03", "v26.06", "v26.09-rc.1"}, hopsOf(nr.Relaxed))
	r, err := path.Resolve(c, at(v("v26.03")), at(v("v26.09-rc.1")), path.AcceptRisks(nr.Risks...))
	require.NoError(t, err)
	assert.Equal(t, hopsOf(nr.Relaxed), hopsOf(r))
}

func TestResolveTestdataDowngradeRefused(t *testing.T) {
	c := loadTestdata(t)
	for _, p := range [][2]string{{"v26.06", "v26.03"}, {"v26.09", "v26.06"}, {"v26.06", "v26.06-rc.3"}, {"v26.06.1", "v26.06"}} {
		_, err := path.Resolve(c, at(v(p[0])), at(v(p[1])))
		nr := noRoute(t, err)
		assert.True(t, nr.Downgrade, "%s -> %s", p[0], p[1])
		assert.Nil(t, nr.Relaxed)
		assert.Contains(t, err.Error(), "downgrade")
	}
}

func TestResolveTestdataUnknownVersion(t *testing.T) {
	c := loadTestdata(t)
	_, err := path.Resolve(c, at(v("v26.06")), at(v("v26.07")))
	require.ErrorIs(t, err, path.ErrUnknownVersion)
	assert.NotErrorIs(t, err, path.ErrNoRoute)
	var uv *path.UnknownVersionError
	require.True(t, errors.As(err, &uv))
	assert.Equal(t, "v26.07", uv.Version.String())
	assert.Equal(t, "target", uv.Role)
	assert.Equal(t, []string{"v26.06", "v26.06.1", "v26.09-rc.1", "v26.09"}, strs(uv.Nearest))
	assert.Contains(t, err.Error(), "v26.06.1, v26.09-rc.1")

	_, err = path.Resolve(c, at(v("v25.12")), at(v("v26.06")))
	require.True(t, errors.As(err, &uv))
	assert.Equal(t, "current", uv.Role)
	assert.Equal(t, []string{"v26.03", "v26.06-rc.1"}, strs(uv.Nearest))

	_, err = path.Resolve(c, at(v("v26.06")), at(v("v27.01")))
	require.True(t, errors.As(err, &uv))
	assert.Equal(t, []string{"v26.09-rc.1", "v26.09"}, strs(uv.Nearest))

	_, err = path.Targets(c, at(v("v26.06-rc.9")))
	require.True(t, errors.As(err, &uv))
	assert.Equal(t, []string{"v26.06-rc.2", "v26.06-rc.3", "v26.06", "v26.06.1"}, strs(uv.Nearest))

	_, err = path.Resolve(c, at(release.Version{}), at(v("v26.06")))
	require.ErrorIs(t, err, path.ErrUnknownVersion)

	// A track without releases is unknown to Resolve; an Index of it
	// knows no version.
	_, err = path.Resolve(c, path.State{"lts": v("v26.03")}, path.State{"lts": v("v26.06")})
	require.ErrorIs(t, err, path.ErrUnknownTrack)
	ix, err := path.NewIndex(c, path.WithTrack("lts"))
	require.NoError(t, err)
	_, err = ix.Resolve(v("v26.03"), v("v26.06"))
	require.True(t, errors.As(err, &uv))
	assert.Empty(t, uv.Nearest)
	assert.Contains(t, err.Error(), "on track lts: the track has no releases")
}

func TestResolveTestdataNotInstallable(t *testing.T) {
	c := loadTestdata(t)
	_, err := path.Resolve(c, at(v("v26.03")), at(v("v26.06-rc.1")))
	nr := noRoute(t, err)
	assert.True(t, nr.NotInstallable)
	assert.Equal(t, "withdrawn; use v26.06-rc.3", nr.NotInstallableReason)
	assert.Contains(t, err.Error(), "installable: false")
	for _, from := range c.Versions() {
		ts, _ := path.Targets(c, at(from), path.AcceptRisks("containerd-v2-config"))
		for _, tg := range ts {
			assert.NotEqual(t, "v26.06-rc.1", tg.Version.String(), "from %s", from)
			for _, h := range tg.Route().Hops {
				assert.NotEqual(t, "v26.06-rc.1", h.To.String())
			}
		}
	}
}

func TestTargetsTestdata(t *testing.T) {
	c := loadTestdata(t)
	type tg struct {
		Version string
		Hops    int
	}
	tests := []struct {
		from string
		opts []path.Option
		want []tg
	}{
		{from: "v26.03", want: []tg{{"v26.06", 1}, {"v26.06.1", 2}, {"v26.09", 2}}},
		{from: "v26.06-rc.1", want: []tg{{"v26.06-rc.3", 1}, {"v26.06", 2}, {"v26.06.1", 3}, {"v26.09", 3}}},
		{from: "v26.06-rc.2", want: []tg{{"v26.06-rc.3", 1}, {"v26.06", 2}, {"v26.06.1", 3}, {"v26.09", 3}}},
		{from: "v26.06-rc.3", want: []tg{{"v26.06", 1}, {"v26.06.1", 2}, {"v26.09", 2}}},
		{from: "v26.06", want: []tg{{"v26.06.1", 1}, {"v26.09", 1}}},
		{from: "v26.06", opts: []path.Option{path.AcceptRisks("containerd-v2-config")},
			want: []tg{{"v26.06.1", 1}, {"v26.09-rc.1", 1}, {"v26.09", 1}}},
		{from: "v26.03", opts: []path.Option{path.AcceptRisks("containerd-v2-config")},
			want: []tg{{"v26.06", 1}, {"v26.06.1", 2}, {"v26.09-rc.1", 2}, {"v26.09", 2}}},
		{from: "v26.06.1", want: []tg{{"v26.09", 1}}},
		{from: "v26.09-rc.1", want: []tg{{"v26.09", 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.from, func(t *testing.T) {
			ts, err := path.Targets(c, at(v(tt.from)), tt.opts...)
			require.NoError(t, err)
			var got []tg
			for _, x := range ts {
				got = append(got, tg{x.Version.String(), x.Hops})
				require.Len(t, x.Route().Hops, x.Hops)
				// Each route is the one Resolve gives.
				r, err := path.Resolve(c, at(v(tt.from)), at(x.Version), tt.opts...)
				require.NoError(t, err)
				assert.Equal(t, r, x.Route())
				// Next and Last are its first and last hops.
				assert.Equal(t, r.Hops[0], *x.Next(), "Targets(%s): Next of %s", tt.from, x.Version)
				assert.Equal(t, r.Hops[len(r.Hops)-1], *x.Last(), "Targets(%s): Last of %s", tt.from, x.Version)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestTargetsTestdataEmptyExplains(t *testing.T) {
	c := loadTestdata(t)
	ts, err := path.Targets(c, at(v("v26.09")))
	assert.Empty(t, ts)
	nr := noRoute(t, err)
	assert.True(t, nr.To.IsZero())
	assert.Empty(t, nr.Reachable)
	assert.Contains(t, err.Error(), "no version is reachable from v26.09")
	assert.Contains(t, err.Error(), "no usable rule leads out of v26.09")
}

func TestRouteStringTestdata(t *testing.T) {
	c := loadTestdata(t)
	r, err := path.Resolve(c, at(v("v26.03")), at(v("v26.09")))
	require.NoError(t, err)
	want := `v26.03 -> v26.09: 2 hops
  1. v26.03 -> v26.06  pre: cluster-healthy, etcd-backup  post: nodes-ready
  2. v26.06 -> v26.09  pre: cluster-healthy, etcd-backup, registry-mirror-reachable (optional)  post: nodes-ready, conformance-smoke (optional)
`
	assert.Equal(t, want, r.String())

	r, err = path.Resolve(c, at(v("v26.03")), at(v("v26.09-rc.1")), path.AcceptRisks("containerd-v2-config"))
	require.NoError(t, err)
	want = `v26.03 -> v26.09-rc.1: 2 hops
  1. v26.03 -> v26.06  pre: cluster-healthy, etcd-backup  post: nodes-ready
  2. v26.06 -> v26.09-rc.1 (deprecated version: "preview build")  risks: containerd-v2-config ("containerd 2.x rewrites config.toml; custom registry mirrors must be declared again")
`
	assert.Equal(t, want, r.String())

	r, err = path.Resolve(c, at(v("v26.03")), at(v("v26.06.1")))
	require.NoError(t, err)
	assert.Equal(t, "v26.03 -> v26.06.1: 2 hops\n  1. v26.03 -> v26.06  pre: cluster-healthy, etcd-backup  post: nodes-ready\n  2. v26.06 -> v26.06.1  post: nodes-ready\n", r.String(),
		"the deprecated v26.03 -> v26.06.1 edge is avoided")

	r, err = path.Resolve(c, at(v("v26.06")), at(v("v26.06")))
	require.NoError(t, err)
	assert.Equal(t, "v26.06 -> v26.06: no hops, already there\n", r.String())

	var nilRoute *path.Route
	assert.Equal(t, "<nil route>", nilRoute.String())
}

func TestRouteMarshal(t *testing.T) {
	c := loadTestdata(t)
	r, err := path.Resolve(c, at(v("v26.03")), at(v("v26.09-rc.1")), path.AcceptRisks("containerd-v2-config"))
	require.NoError(t, err)

	js, err := json.Marshal(r)
	require.NoError(t, err)
	assert.Contains(t, string(js), `"from":"v26.03"`)
	assert.Contains(t, string(js), `"risks":[{"name":"containerd-v2-config"`)
	var back path.Route
	require.NoError(t, json.Unmarshal(js, &back))
	js2, err := json.Marshal(&back)
	require.NoError(t, err)
	assert.JSONEq(t, string(js), string(js2))
	assert.Equal(t, r.String(), back.String())

	ys, err := yaml.Marshal(r)
	require.NoError(t, err)
	assert.Contains(t, string(ys), "from: v26.03")
	var yback path.Route
	require.NoError(t, yaml.Unmarshal(ys, &yback))
	assert.Equal(t, r.String(), yback.String())
	js3, err := json.Marshal(&yback)
	require.NoError(t, err)
	assert.JSONEq(t, string(js), string(js3))

	// Targets and errors are data too.
	ts, err := path.Targets(c, at(v("v26.03")))
	require.NoError(t, err)
	_, err = json.Marshal(ts)
	require.NoError(t, err)
	_, err = path.Resolve(c, at(v("v26.06")), at(v("v26.09-rc.1")))
	nr := noRoute(t, err)
	js, err = json.Marshal(nr)
	require.NoError(t, err)
	assert.Contains(t, string(js), `"risks":["containerd-v2-config"]`)
	_, err = yaml.Marshal(nr)
	require.NoError(t, err)
}

func TestRouteClone(t *testing.T) {
	c := loadTestdata(t)
	ts, err := path.Targets(c, at(v("v26.03")))
	require.NoError(t, err)
	var r *path.Route
	for _, x := range ts {
		if x.Version.String() == "v26.09" {
			r = x.Route()
		}
	}
	require.NotNil(t, r)
	cl := r.Clone()
	assert.Equal(t, r, cl)
	cl.Hops[0].PreChecks[0].Name = "changed"
	cl.Hops[0].Rule.Risks = append(cl.Hops[0].Rule.Risks, release.Risk{Name: "x"})
	assert.Equal(t, "cluster-healthy", r.Hops[0].PreChecks[0].Name)
	assert.Empty(t, r.Hops[0].Rule.Risks)
	assert.Equal(t, []string{"v26.03", "v26.06", "v26.09"}, hopsOf(r))
	assert.Nil(t, (*path.Route)(nil).Clone())
}
