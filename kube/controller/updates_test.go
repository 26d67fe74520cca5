package controller_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
			av, cu, err := controller.Updates(cat, "", v(tt.current), tt.accepted)
			require.NoError(t, err)
			// available is exactly path.Targets, which `hopdag targets` prints.
			ts, terr := path.Targets(cat, v(tt.current), path.AcceptRisks(tt.accepted...))
			if terr == nil {
				require.Len(t, av, len(ts))
				for i, tg := range ts {
					assert.Equal(t, tg.Version.Original(), av[i].Version)
					assert.Equal(t, tg.Hops, av[i].Hops)
					assert.Len(t, av[i].Route, tg.Hops+1, "route of %s is current then one version per hop", av[i].Version)
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
	_, _, err = controller.Updates(cat, "", v("v26.07"), nil)
	assert.ErrorIs(t, err, path.ErrUnknownVersion, "an unknown current version is an error")
}
