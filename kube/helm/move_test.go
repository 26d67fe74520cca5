package helm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/helm"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// at is cv with its release at namespace ns and name name ("" leaves
// the field empty: namespace default, the component's name).
func at(cv *release.ComponentVersion, ns, name string) *release.ComponentVersion {
	c := in(cv, ns)
	c.Helm.Release = name
	return c
}

// A component version whose release is not its from-version's (another
// namespace after defaulting an empty one to default, or another name
// after defaulting an empty one to the component's) is refused at plan
// time: an upgrade would install the chart a second time beside the
// from-version's release, and the rollback could not find the
// from-version. The error names the component, both versions, both
// releases and the field that changed, and says how to move a release.
// The plan reaches no cluster.
func TestHelmReleaseMoved(t *testing.T) {
	r := helm.New(&rest.Config{Host: "https://127.0.0.1:1"}, helm.WithChartRoot("testdata"), helm.WithValues(map[string]any{"site": "lab"}), helm.WithSettings(settings(t)))
	howTo := "or move it explicitly: ship it at "
	for _, tc := range []struct {
		name     string
		from, to *release.ComponentVersion // from nil: v1.0 does not ship app
		err      []string                  // the plan's error contains each; nil: the plan is accepted
	}{
		{name: "same release", from: at(appVersion("v1.0", 80), "apps", ""), to: at(appVersion("v2.0", 8080), "apps", "")},
		{name: "an empty namespace is default", from: at(appVersion("v1.0", 80), "", ""), to: at(appVersion("v2.0", 8080), "default", "")},
		{name: "an empty release is the component's name", from: at(appVersion("v1.0", 80), "apps", ""), to: at(appVersion("v2.0", 8080), "apps", "app")},
		{name: "added by the hop", to: at(appVersion("v2.0", 8080), "new", "")},
		{name: "namespace added", from: at(appVersion("v1.0", 80), "", ""), to: at(appVersion("v2.0", 8080), "apps", ""),
			err: []string{`helm: app@v2.0: release apps/app is not app@v1.0's release default/app (spec.helm.namespace "" (default) -> "apps")`,
				"hopdag does not move a Helm release", howTo, "helm uninstall app -n default"}},
		{name: "namespace changed", from: at(appVersion("v1.0", 80), "old", ""), to: at(appVersion("v2.0", 8080), "new", ""),
			err: []string{`helm: app@v2.0: release new/app is not app@v1.0's release old/app (spec.helm.namespace "old" -> "new")`,
				"would install a second release beside old/app", howTo, "helm uninstall app -n old"}},
		{name: "release renamed", from: at(appVersion("v1.0", 80), "apps", ""), to: at(appVersion("v2.0", 8080), "apps", "web"),
			err: []string{`helm: app@v2.0: release apps/web is not app@v1.0's release apps/app (spec.helm.release "" (app) -> "web")`,
				howTo, "helm uninstall app -n apps"}},
		{name: "both changed", from: at(appVersion("v1.0", 80), "old", "app"), to: at(appVersion("v2.0", 8080), "new", "web"),
			err: []string{`helm: app@v2.0: release new/web is not app@v1.0's release old/app (spec.helm.namespace "old" -> "new", spec.helm.release "app" -> "web")`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := func(v string, cv *release.ComponentVersion) release.Release {
				r := release.Release{Version: release.MustParseVersion(v)}
				if cv != nil {
					r.Components = []release.ComponentRef{{Name: cv.Name, Version: cv.Version}}
				}
				return r
			}
			cvs := []release.ComponentVersion{*tc.to}
			if tc.from != nil {
				cvs = append(cvs, *tc.from)
			}
			cat, err := release.NewCatalog([]release.Release{rel("v1.0", tc.from), rel("v2.0", tc.to)}, cvs,
				[]release.UpgradePath{{Rules: []release.Rule{{From: release.MustParseConstraint("v1.0"), To: release.MustParseVersion("v2.0")}}}})
			require.NoError(t, err)
			e := runner.New(components.NewRouter().Register(release.TypeHelm, r), runner.WithFailurePolicy(runner.Rollback))
			_, err = runner.NewPlan(cat, path.MustParseState("v1.0"), path.MustParseState("v2.0"), runner.ForExecutor(e))
			if tc.err == nil {
				assert.NoError(t, err, "NewPlan(v1.0, v2.0)")
				return
			}
			require.Error(t, err, "NewPlan(v1.0, v2.0) refuses the move")
			assert.ErrorIs(t, err, runner.ErrInvalidPlan)
			assert.ErrorIs(t, err, helm.ErrReleaseMoved)
			assert.ErrorContains(t, err, "hop 1 v1.0 -> v2.0: ", "the error names the hop")
			for _, want := range tc.err {
				assert.ErrorContains(t, err, want)
			}
		})
	}
}

// Run refuses a moved release too (for a plan Execute did not validate,
// or a Task built by hand), before it changes anything; Rollback of that
// task has nothing to undo while the target's release does not exist,
// and refuses to touch one that does (hopdag did not install it: it
// may be a second copy of the from-version's, or another's), saying
// how to remove it by hand. Against a real API server.
func TestHelmReleaseMovedRun(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	r := helm.New(c.rc, helm.WithChartRoot("testdata"), helm.WithValues(map[string]any{"site": "lab"}), helm.WithSettings(settings(t)))
	v1, v2 := in(appVersion("v1.0", 80), "old"), in(appVersion("v2.0", 8080), "new")
	require.NoError(t, r.Run(ctx, task(nil, v1)), "install v1.0 in old")

	err := r.Run(ctx, task(v1, v2))
	require.Error(t, err, "Run(v1.0 in old -> v2.0 in new) refuses the move")
	assert.True(t, runner.IsPermanent(err), "a move is not retried: %v", err)
	assert.ErrorIs(t, err, helm.ErrReleaseMoved)
	assert.ErrorContains(t, err, `helm: app@v2.0: release new/app is not app@v1.0's release old/app (spec.helm.namespace "old" -> "new")`)
	assert.Equal(t, "hello v1.0 from lab", c.greeting(t, "old"), "old is untouched")
	assert.Len(t, c.revisions(t, "old"), 1, "old's revisions")
	assert.Equal(t, "", c.greeting(t, "new"), "nothing is installed in new")
	assert.Empty(t, c.revisions(t, "new"), "new's revisions")

	for i := range 2 {
		require.NoError(t, r.Rollback(ctx, task(v1, v2)), "rollback %d: nothing to undo", i+1)
		assert.Equal(t, "hello v1.0 from lab", c.greeting(t, "old"), "rollback %d: old is at v1.0", i+1)
		assert.Len(t, c.revisions(t, "old"), 1, "rollback %d: old's revisions", i+1)
		assert.Empty(t, c.revisions(t, "new"), "rollback %d: new's revisions", i+1)
	}

	// A release new/app that hopdag did not install for this hop (here:
	// v2.0 installed as a component of its own).
	require.NoError(t, r.Run(ctx, task(nil, v2)), "install v2.0 in new")
	err = r.Rollback(ctx, task(v1, v2))
	require.Error(t, err, "Rollback leaves a release new/app it did not install")
	assert.True(t, runner.IsPermanent(err), "retrying cannot help: %v", err)
	assert.ErrorIs(t, err, helm.ErrReleaseMoved)
	assert.ErrorContains(t, err, "helm: app@v2.0: roll back to app@v1.0: release new/app exists, and app@v1.0's release is old/app")
	assert.ErrorContains(t, err, "helm uninstall app -n new")
	assert.Equal(t, "hello v1.0 from lab", c.greeting(t, "old"), "old is untouched")
	assert.Equal(t, "hello v2.0 from lab", c.greeting(t, "new"), "new is untouched")
	assert.Len(t, c.revisions(t, "new"), 1, "new's revisions")
}
