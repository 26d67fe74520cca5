package release_test

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// Lifecycle fields are written at the ComponentVersion's level, and rule
// controls at the rule's, and decode strictly.
func TestLoadLifecycle(t *testing.T) {
	fsys := fstest.MapFS{"c.yaml": {Data: []byte(`apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: api}
spec:
  name: api
  version: v2.0
  handler: api
  gate: {reason: check the dashboards}
  irreversible: schema migration
  phases:
  - {name: drain, handler: drain, gate: {}}
  - {name: upgrade, command: {args: [/bin/true]}}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: v2.0}
spec:
  version: v2.0
  components: [{name: api, version: v2.0}]
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: api1}
spec: {name: api, version: v1.0, handler: api}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: v1.0}
spec:
  version: v1.0
  components: [{name: api, version: v1.0}]
---
apiVersion: hopdag.io/v1alpha1
kind: UpgradePath
metadata: {name: p}
spec:
  rules:
  - {from: v1.0, to: v2.0, gate: {reason: change window}, onFailure: rollback}
`)}}
	c, err := release.Load(fsys)
	require.NoError(t, err)
	cv, ok := c.Component("api", release.MustParseVersion("v2.0"))
	require.True(t, ok)
	assert.Equal(t, &release.Gate{Reason: "check the dashboards"}, cv.Gate)
	assert.Equal(t, "schema migration", cv.Irreversible)
	require.Len(t, cv.Phases, 2)
	drain, ok := cv.Phase("drain")
	require.True(t, ok, "Phase(drain)")
	assert.NotNil(t, drain.Gate, "drain gate")
	assert.Equal(t, []string{"/bin/true"}, cv.Phases[1].Command.Args)
	rule := c.Paths[0].Rules[0]
	assert.Equal(t, release.RuleControl{Gate: &release.Gate{Reason: "change window"}, OnFailure: "rollback"}, rule.RuleControl)
}

func TestLifecycleInvalid(t *testing.T) {
	fsys := fstest.MapFS{"c.yaml": {Data: []byte(`apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: api}
spec:
  name: api
  version: v2.0
  handler: api
  rollback: {args: []}
  phases:
  - {name: drain, handler: drain, command: {args: [x]}}
  - {name: drain, handler: d2}
  - {handler: d3}
`)}}
	_, err := release.Load(fsys)
	require.ErrorIs(t, err, release.ErrInvalidCatalog)
	for _, want := range []string{
		`c.yaml:10: spec.phases[0]: lifecycle phase "drain" needs exactly one of handler, command and manifests, has 2`,
		"c.yaml:11: spec.phases[1].name: lifecycle phase drain is declared twice (also at phases[0])",
		"c.yaml:12: spec.phases[2]: lifecycle phase has no name",
		"c.yaml:8: spec.rollback: a rollback command needs args",
	} {
		assert.Contains(t, err.Error(), want)
	}
}

// A phase's manifests are read from files as spec.manifests are (and the
// files are not taken for catalog documents); a component whose phases
// carry its manifests needs no spec.manifests and no type.
func TestLoadManifestPhases(t *testing.T) {
	fsys := fstest.MapFS{
		"c.yaml": {Data: []byte(`apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: web}
spec:
  name: web
  version: v2.0
  phases:
  - name: drain
    manifests: [{file: m/traffic-0.yaml}]
  - name: rollout
    manifests:
    - {file: m/traffic-100.yaml}
    - template: 'kind: ConfigMap'
`)},
		"m/traffic-0.yaml":   {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: traffic}\ndata: {weight: '0'}\n")},
		"m/traffic-100.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: traffic}\ndata: {weight: '100'}\n")},
	}
	c, err := release.Load(fsys)
	require.NoError(t, err)
	cv, ok := c.Component("web", release.MustParseVersion("v2.0"))
	require.True(t, ok)
	assert.Equal(t, release.TypeManifest, cv.Type, "the type of a component whose phases are all manifests")
	require.Len(t, cv.Phases, 2)
	assert.Equal(t, release.Manifest{Name: "m/traffic-0.yaml", File: "m/traffic-0.yaml", Template: string(fsys["m/traffic-0.yaml"].Data)}, cv.Phases[0].Manifests[0])
	assert.Equal(t, "m/traffic-100.yaml", cv.Phases[1].Manifests[0].Name)
	assert.Equal(t, "rollout/inline-1", cv.Phases[1].Manifests[1].Name, "an inline manifest of a phase is named after the phase")
	assert.Equal(t, []string{"m/traffic-0.yaml", "m/traffic-100.yaml"}, cv.ManifestFiles())
}

// A component whose phases are all commands is an exec component (with
// or without type: exec) and needs no spec.command.
func TestLoadCommandPhases(t *testing.T) {
	for _, typ := range []string{"", "  type: exec\n"} {
		fsys := fstest.MapFS{"c.yaml": {Data: []byte(`apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: node}
spec:
  name: node
  version: v2.0
` + typ + `  phases:
  - {name: drain, command: {args: [kubectl, drain, node-1]}}
  - {name: upgrade, command: {args: [/usr/bin/upgrade-node]}, gate: {reason: check the node}}
  - {name: uncordon, command: {args: [kubectl, uncordon, node-1]}}
`)}}
		c, err := release.Load(fsys)
		require.NoError(t, err, "type %q", typ)
		cv, ok := c.Component("node", release.MustParseVersion("v2.0"))
		require.True(t, ok)
		assert.Equal(t, release.TypeExec, cv.Type)
		assert.Len(t, cv.Phases, 3)
	}
	// An exec component still needs a command somewhere.
	_, err := release.Load(fstest.MapFS{"c.yaml": {Data: []byte("apiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata: {name: node}\nspec:\n  name: node\n  version: v2.0\n  type: exec\n  phases:\n  - {name: drain, handler: drain}\n")}})
	require.ErrorIs(t, err, release.ErrInvalidCatalog)
	assert.ErrorContains(t, err, "c.yaml:7: spec.type: an exec component needs a command; set spec.command.args to an argv list, e.g. [/usr/bin/upgrade, --to, \"{{.Component.Version}}\"], or give its phases commands")
}

func TestManifestPhasesInvalid(t *testing.T) {
	fsys := fstest.MapFS{"c.yaml": {Data: []byte(`apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: web}
spec:
  name: web
  version: v2.0
  type: manifest
  manifests: [{template: 'kind: ConfigMap'}]
  phases:
  - name: drain
    manifests: [{file: m/missing.yaml}]
  - {name: test, handler: test}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: mixed}
spec:
  name: mixed
  version: v1.0
  phases:
  - {name: drain, command: {args: [/bin/true]}}
  - {name: up, manifests: [{template: 'kind: ConfigMap'}]}
`)}}
	_, err := release.Load(fsys)
	require.ErrorIs(t, err, release.ErrInvalidCatalog)
	for _, want := range []string{
		"c.yaml:11: spec.phases[0].manifests[0].file: manifest file m/missing.yaml does not exist",
		"c.yaml:8: spec.manifests: a component with lifecycle phases runs them in place of its type's step: spec.manifests are never applied; move them into a phase's manifests",
		"c.yaml:18: spec: component version has no type",
	} {
		assert.Contains(t, err.Error(), want)
	}
}

// A rule's onFailure is "" or rollback: a misspelt policy would silently
// fall back to the executor's (and the CRD refuses it).
func TestRuleOnFailureInvalid(t *testing.T) {
	fsys := fstest.MapFS{"c.yaml": {Data: []byte(`apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: api}
spec: {name: api, version: v1.0, handler: api}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: v1.0}
spec: {version: v1.0, components: [{name: api, version: v1.0}]}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: v2.0}
spec: {version: v2.0, components: [{name: api, version: v1.0}]}
---
apiVersion: hopdag.io/v1alpha1
kind: UpgradePath
metadata: {name: p}
spec:
  rules:
  - {from: v1.0, to: v2.0, onFailure: Rollback}
`)}}
	_, err := release.Load(fsys)
	require.ErrorIs(t, err, release.ErrInvalidCatalog)
	assert.Contains(t, err.Error(), `c.yaml:21: spec.rules[0].onFailure: onFailure must be "rollback" or unset, got "Rollback"; write onFailure: rollback, or remove it to use the executor's failure policy`)
}

// CatalogFiles lists what Load reads and the chart directories it skips.
func TestCatalogFiles(t *testing.T) {
	fsys := fstest.MapFS{
		"a.yaml":                       {Data: []byte("x")},
		"B.YAML":                       {Data: []byte("x")},
		"sub/c.yml":                    {Data: []byte("x")},
		".github/ci.yml":               {Data: []byte("x")},
		".hidden.yaml":                 {Data: []byte("x")},
		"charts/app/Chart.yaml":        {Data: []byte("x")},
		"charts/app/templates/cm.yaml": {Data: []byte("x")},
		"notes.txt":                    {Data: []byte("x")},
	}
	files, charts, err := release.CatalogFiles(fsys)
	require.NoError(t, err)
	assert.Equal(t, []string{"B.YAML", "a.yaml", "sub/c.yml"}, files)
	assert.Equal(t, []string{"charts/app"}, charts)
}
