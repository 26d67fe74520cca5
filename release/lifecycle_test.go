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
