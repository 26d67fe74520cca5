package controller_test

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

func TestUpdates(t *testing.T) {
	cat, err := release.LoadDir("../../testdata/catalog")
	require.NoError(t, err)
	v := release.MustParseVersion
	tests := []struct {
		name        string
		current     string
		accepted    []string
		available   []string
		conditional map[string][]string // version -> risks
	}{
		{"rc.2 sees GA and beyond, the preview behind its risk", "v26.06-rc.2", nil,
			[]string{"v26.06-rc.3", "v26.06", "v26.06.1", "v26.09"}, map[string][]string{"v26.09-rc.1": {"containerd-v2-config"}}},
		{"an accepted risk makes the target available", "v26.06", []string{"containerd-v2-config"},
			[]string{"v26.06.1", "v26.09-rc.1", "v26.09"}, nil},
		{"the newest version has nowhere to go", "v26.09", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			av, cu, err := controller.Updates(cat, path.State{"": v(tt.current)}, tt.accepted)
			require.NoError(t, err)
			// available is exactly path.Targets, which `hopdag targets` prints.
			ts, terr := path.Targets(cat, path.State{"": v(tt.current)}, path.AcceptRisks(tt.accepted...))
			if terr == nil {
				require.Len(t, av, len(ts))
				for i, tg := range ts {
					assert.Equal(t, tg.Version.Original(), av[i].Version)
					assert.Equal(t, tg.Hops, av[i].Hops)
					first := tg.Route().Hops[0]
					assert.Equal(t, first.From.Original()+" -> "+first.To.Original(), av[i].Next, "next hop of %s", av[i].Version)
				}
			}
			var gotAv []string
			for _, u := range av {
				gotAv = append(gotAv, u.Version)
			}
			assert.Equal(t, tt.available, gotAv, "Updates(%s, %v) available", tt.current, tt.accepted)
			gotCu := map[string][]string{}
			for _, u := range cu {
				for _, r := range u.Risks {
					gotCu[u.Version] = append(gotCu[u.Version], r.Name)
					assert.NotEmpty(t, r.Message, "risk %s of %s has its message", r.Name, u.Version)
				}
			}
			if tt.conditional == nil {
				tt.conditional = map[string][]string{}
			}
			assert.Equal(t, tt.conditional, gotCu, "Updates(%s, %v) conditional", tt.current, tt.accepted)
		})
	}
	_, _, err = controller.Updates(cat, path.State{"": v("v26.07")}, nil)
	assert.ErrorIs(t, err, path.ErrUnknownVersion, "an unknown current version is an error")
}

// Channels and prereleases steer what Updates offers, and
// spec.channel and spec.allowPrereleases reach the routes the webhook
// checks: on the stable channel v1.2 (fast only) is neither offered nor
// accepted, and a GA-to-GA route through a prerelease needs
// allowPrereleases.
func TestChannelAndPrereleases(t *testing.T) {
	doc := func(kind, name, spec string) string {
		return "apiVersion: hopdag.io/v1alpha1\nkind: " + kind + "\nmetadata: {name: " + name + "}\nspec: " + spec + "\n---\n"
	}
	var y string
	for _, v := range []string{"v1.0", "v1.1", "v1.2", "v1.3-rc.1", "v1.3"} {
		y += doc("Release", v, "{version: "+v+", components: [{name: a, version: v1.0}]}")
	}
	y += doc("ComponentVersion", "a", "{name: a, version: v1.0, handler: a}")
	y += doc("UpgradePath", "p", `{rules: [{from: v1.0, to: v1.1}, {from: v1.0, to: v1.2}, {from: v1.1, to: v1.3-rc.1}, {from: v1.3-rc.1, to: v1.3}],
  versions: [{version: v1.1, channels: [stable, fast]}, {version: v1.2, channels: [fast]}, {version: v1.3-rc.1, channels: [stable, fast]}, {version: v1.3, channels: [stable, fast]}]}`)
	cat, err := release.Load(fstest.MapFS{"c.yaml": {Data: []byte(y)}})
	require.NoError(t, err)
	v := release.MustParseVersion
	versions := func(us []v1alpha1.Update) []string {
		var out []string
		for _, u := range us {
			out = append(out, u.Version)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		opts []path.Option
		want []string
	}{
		// v1.3 only through its prerelease: not between GA versions.
		{"no channel", nil, []string{"v1.1", "v1.2", "v1.3-rc.1"}},
		// v1.2 is not on it; the channel lists the prerelease as fine.
		{"stable channel", []path.Option{path.WithChannel("stable")}, []string{"v1.1", "v1.3-rc.1", "v1.3"}},
		{"prereleases allowed", []path.Option{path.AllowPrereleases()}, []string{"v1.1", "v1.2", "v1.3-rc.1", "v1.3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			av, _, err := controller.Updates(cat, path.State{"": v("v1.0")}, nil, tt.opts...)
			require.NoError(t, err)
			assert.Equal(t, tt.want, versions(av))
		})
	}
	cv := &v1alpha1.ClusterVersion{Spec: v1alpha1.ClusterVersionSpec{DesiredVersion: "v1.2", Channel: "stable"}}
	cv.Name = "cluster"
	err = controller.CheckReachable(cat, cv, "v1.0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "v1.2 cannot be reached from v1.0")
	cv.Spec.Channel = ""
	assert.NoError(t, controller.CheckReachable(cat, cv, "v1.0"))
	cv.Spec.DesiredVersion = "v1.3"
	assert.Error(t, controller.CheckReachable(cat, cv, "v1.0"), "v1.3 only through the prerelease")
	cv.Spec.AllowPrereleases = true
	assert.NoError(t, controller.CheckReachable(cat, cv, "v1.0"))
}

// TestUpdatesTracks: across tracks, the available updates are each
// version of each track that a route reaches, the other tracks moving as
// needed: what `hopdag targets --from STATE` lists, route by route.
func TestUpdatesTracks(t *testing.T) {
	cat, err := release.LoadDir("../../testdata/two-track")
	require.NoError(t, err)
	from, err := path.ParseState("platform=13.01.0,kubernetes=v1.32.0")
	require.NoError(t, err)
	av, cu, err := controller.Updates(cat, from, nil)
	require.NoError(t, err)
	assert.Empty(t, cu, "the catalog declares no risks")
	var got []string
	for _, u := range av {
		got = append(got, u.Version)
		r, err := path.Resolve(cat, from, mustState(t, u.Version))
		require.NoError(t, err, u.Version)
		assert.Equal(t, len(r.Hops), u.Hops, u.Version)
		first := r.Hops[0]
		assert.Equal(t, first.Track+" "+first.From.Original()+" -> "+first.To.Original(), u.Next, "next hop of %s: the first of its route, with its track", u.Version)
	}
	assert.Equal(t, []string{
		"kubernetes=v1.32.1", "kubernetes=v1.33.0", "kubernetes=v1.33.1", "kubernetes=v1.34.0", "kubernetes=v1.34.1", "kubernetes=v1.35.0", "kubernetes=v1.35.1",
		"platform=13.01.1", "platform=13.01.2", "platform=27.03.0", "platform=27.03.1",
	}, got)

	_, _, err = controller.Updates(cat, path.State{"platform": release.MustParseVersion("13.01.0")}, nil)
	assert.ErrorIs(t, err, path.ErrInvalidOption, "a state that leaves out a tied track")
}

func mustState(t *testing.T, s string) path.State {
	t.Helper()
	st, err := path.ParseState(s)
	require.NoError(t, err)
	return st
}
