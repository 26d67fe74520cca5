package release_test

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// twoTracks is a file of releases p v1.0.0 and v2.0.0, and k v1.0.0 and
// v1.1.0, none with supports.
const twoTracks = header + "kind: Release\nmetadata: {name: p1}\nspec: {version: v1.0.0, track: p, components: []}\n---\n" +
	header + "kind: Release\nmetadata: {name: p2}\nspec: {version: v2.0.0, track: p, components: []}\n---\n" +
	header + "kind: Release\nmetadata: {name: k1}\nspec: {version: v1.0.0, track: k, components: []}\n---\n" +
	header + "kind: Release\nmetadata: {name: k2}\nspec: {version: v1.1.0, track: k, components: []}\n"

// TestLoadSilentAcceptances: what admits nothing loaded without a word: a
// release that supports its own track, a rule from a version to itself, a
// from that no version meets, a supports range that no release of the
// other track meets, an UpgradePath with no rules for a track without
// releases. Each is a problem with its line and how to fix it: an error
// (Load fails) where it names what it cannot (a supports of the release's
// own track, an UpgradePath of a track without releases), as a supports of
// a track without releases already was; a warning (Catalog.Warnings) where
// it is well formed but does nothing in this catalog (a rule that applies
// to no edge, as one of ../testdata/two-track does; a release that no
// state holds, as path's property tests generate).
func TestLoadSilentAcceptances(t *testing.T) {
	release3 := func(spec string) string {
		return header + "kind: Release\nmetadata: {name: p3}\nspec:\n  version: v3.0.0\n  track: p\n  components: []\n" + spec
	}
	rule := func(r string) string {
		return header + "kind: UpgradePath\nmetadata: {name: up}\nspec:\n  track: p\n  rules:\n  - " + r + "\n"
	}
	tests := []struct {
		name, yaml string
		want       []string // the errors
		warnings   []string // when it loads
	}{
		{
			"supports naming its own track",
			release3("  supports: {p: \">= v1.0.0\", k: \">= v1.0.0\"}\n"),
			[]string{`c.yaml:8: spec.supports.p: release v3.0.0 supports its own track "p"; remove it: supports names the versions of the other tracks that may run beside the release; its own track moves by UpgradePath rules`},
			nil,
		},
		{
			"supports admitting no release of the other track",
			release3("  supports:\n    k: \">= v1.2.0\"\n"),
			nil,
			[]string{`c.yaml:9: spec.supports.k: ">= v1.2.0" admits no release of track k in the catalog: release v3.0.0 can run beside none; widen the range to the versions it runs beside, or add their releases; known releases: v1.0.0, v1.1.0`},
		},
		{"supports admitting a release of the other track", release3("  supports:\n    k: \">= v1.1.0\"\n"), nil, nil},
		{
			"a rule from a version to itself",
			rule("{from: v1.0.0, to: v1.0.0}"),
			nil,
			[]string{"c.yaml:7: spec.rules[0].to: rule upgrades from v1.0.0 to itself: it gives no edge; set to to the version the rule upgrades to, or remove the rule"},
		},
		{
			"a rule from a version to itself, spelt another way",
			rule("{from: \"= v1.0\", to: v1.0.0}"),
			nil,
			[]string{"c.yaml:7: spec.rules[0].to: rule upgrades from v1.0 to itself (v1.0 and v1.0.0 are the same version): it gives no edge; set to to the version the rule upgrades to, or remove the rule"},
		},
		{"a downgrade", rule("{from: v2.0.0, to: v1.0.0}"), nil, nil},
		{
			"a from whose bounds are swapped",
			rule("{from: \">= v5.0.0, < v3.0.0\", to: v2.0.0}"),
			nil,
			[]string{`c.yaml:7: spec.rules[0].from: from ">= v5.0.0, < v3.0.0" admits no version: none is >= v5.0.0 and < v3.0.0: the rule gives no edge; correct the range (are its bounds the wrong way round?), or remove the rule`},
		},
		{
			"a blocked rule whose bounds are swapped",
			rule("{from: \">= v5.0.0, < v3.0.0\", to: v2.0.0, blocked: data loss}"),
			nil,
			[]string{`c.yaml:7: spec.rules[0].from: from ">= v5.0.0, < v3.0.0" admits no version: none is >= v5.0.0 and < v3.0.0: the rule blocks nothing; correct the range (are its bounds the wrong way round?), or remove the rule`},
		},
		{
			"a from of one version excluded",
			rule("{from: \">= v1.0.0, <= v1.0.0, != v1.0.0\", to: v2.0.0}"),
			nil,
			[]string{`c.yaml:7: spec.rules[0].from: from ">= v1.0.0, <= v1.0.0, != v1.0.0" admits no version: none is >= v1.0.0 and <= v1.0.0 and != v1.0.0: the rule gives no edge; correct the range (are its bounds the wrong way round?), or remove the rule`},
		},
		{
			"a from whose second alternative is two versions",
			rule("{from: \"v1.0.0 || v1.0.0, v2.0.0\", to: v2.0.0, blocked: data loss}"),
			nil,
			[]string{`c.yaml:7: spec.rules[0].from: from "v1.0.0 || v1.0.0, v2.0.0" admits no version: none is = v1.0.0 and = v2.0.0: the rule blocks nothing; correct the range (are its bounds the wrong way round?), or remove the rule`},
		},
		{"a from of one version by its bounds", rule("{from: \">= v1.0.0, <= v1.0.0\", to: v2.0.0}"), nil, nil},
		{
			"an empty UpgradePath on a track without releases",
			header + "kind: UpgradePath\nmetadata: {name: up}\nspec:\n  track: kubernetes\n  rules: []\n",
			[]string{`c.yaml:5: spec.track: UpgradePath up has no rules, and track "kubernetes" has no releases: it applies to nothing; set spec.track to the track of the releases it is for (k, p), or remove it`},
			nil,
		},
		{"an empty UpgradePath on a track with releases", header + "kind: UpgradePath\nmetadata: {name: up}\nspec:\n  track: k\n", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{"c.yaml": {Data: []byte(tt.yaml)}, "r.yaml": {Data: []byte(twoTracks)}}
			if tt.want == nil {
				c, err := release.Load(fsys)
				require.NoError(t, err)
				var got []string
				for _, w := range c.Warnings() {
					got = append(got, w.Error())
				}
				assert.Equal(t, tt.warnings, got, "warnings of\n%s", tt.yaml)
				return
			}
			assert.Equal(t, tt.want, problemLines(t, fsys), "problems of\n%s", tt.yaml)
		})
	}
}

// TestSampleCatalogsLoadWithWarnings: the sample catalogs load; the
// two-track one has a rule whose from admits no version (the pattern
// ">= minor.0, < to" written for its first version too), a warning.
func TestSampleCatalogsLoadWithWarnings(t *testing.T) {
	for _, tt := range []struct {
		dir      string
		warnings []string
	}{
		{"../testdata/catalog", nil},
		{"../testdata/two-track", []string{`upgradepath.yaml:29: spec.rules[0].from: from ">= v1.32.0, < v1.32.0" admits no version: none is >= v1.32.0 and < v1.32.0: the rule gives no edge; correct the range (are its bounds the wrong way round?), or remove the rule`}},
	} {
		c, err := release.LoadDir(tt.dir)
		require.NoError(t, err, "LoadDir(%s)", tt.dir)
		var got []string
		for _, w := range c.Warnings() {
			got = append(got, w.Error())
		}
		assert.Equal(t, tt.warnings, got, "warnings of LoadDir(%s)", tt.dir)
	}
}
