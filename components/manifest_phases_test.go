package components_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// cm is a ConfigMap manifest in namespace web with one data key.
func cm(name, key, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: web}\ndata: {%s: %q}\n", name, key, value)
}

// webV1 is a plain manifest component: config and an old Service.
func webV1() *release.ComponentVersion {
	return manifestCV("web", "v1.0", cm("config", "v", "1")+"---\napiVersion: v1\nkind: Service\nmetadata: {name: old, namespace: web}\n")
}

// webV2 declares phases: drain shifts traffic away (the traffic
// ConfigMap at weight 0), upgrade applies the new config and a new
// object, test is a handler step, rollout shifts traffic back (the same
// ConfigMap at weight 100). v2 no longer renders the old Service.
func webV2() *release.ComponentVersion {
	phase := func(name, tpl string) release.LifecyclePhase {
		return release.LifecyclePhase{Name: name, Manifests: []release.Manifest{{Name: name + ".yaml", Template: tpl}}}
	}
	return &release.ComponentVersion{Name: "web", Version: release.MustParseVersion("v2.0"), Type: release.TypeManifest,
		Handler: "web", Lifecycle: release.Lifecycle{Phases: []release.LifecyclePhase{
			phase("drain", cm("traffic", "weight", "0")),
			phase("upgrade", cm("config", "v", "2")+"---\n"+cm("new", "v", "2")),
			{Name: "test", Handler: "test"},
			phase("rollout", cm("traffic", "weight", "100")),
		}}}
}

// webRouter routes web's manifest phases to a Manifest runner over rec
// and its test phase to a Steps handler that logs into log.
func webRouter(rec *components.Recorder, log *phaseLog) *components.Router {
	steps := components.Steps{"test": func(context.Context, runner.Task) error { log.add("test"); return nil }}
	return components.NewRouter().
		Register(release.TypeManifest, components.NewManifest(rec)).
		Register(release.TypeInline, components.NewInline().Register("web", steps))
}

// verbs returns the Recorder's actions after the first n, as
// "verb Kind ns/name [key=value]".
func verbs(rec *components.Recorder, n int) []string {
	var out []string
	for _, a := range rec.Actions()[n:] {
		s := a.Verb + " " + a.Object.String()
		if data, ok := a.Object.Content["data"].(map[string]any); ok {
			for k, v := range data {
				s += fmt.Sprintf(" %s=%v", k, v)
			}
		}
		out = append(out, s)
	}
	return out
}

// liveData returns the live objects, each with its data.
func liveData(rec *components.Recorder) []string {
	var out []string
	for _, o := range rec.Live() {
		s := o.String()
		if data, ok := o.Content["data"].(map[string]any); ok {
			for k, v := range data {
				s += fmt.Sprintf(" %s=%v", k, v)
			}
		}
		out = append(out, s)
	}
	return out
}

// Manifest phases apply their own objects in order, owned by the
// component; what the previous version had and no phase of the target
// renders is pruned after the last manifest phase, and the inventory then
// holds every object the version's phases render.
func TestManifestPhases(t *testing.T) {
	ctx := context.Background()
	rec, log := components.NewRecorder(), &phaseLog{}
	r := webRouter(rec, log)
	require.NoError(t, r.Validate(webV2()))
	require.NoError(t, r.Run(ctx, task(nil, webV1(), nil)))
	n := len(rec.Actions())

	require.NoError(t, r.Run(ctx, task(webV1(), webV2(), nil)))
	assert.Equal(t, []string{
		"apply ConfigMap web/traffic weight=0",
		"apply ConfigMap web/config v=2",
		"apply ConfigMap web/new v=2",
		"apply ConfigMap web/traffic weight=100",
		"delete Service web/old",
	}, verbs(rec, n), "phases in order, prune after the last manifest phase")
	assert.Equal(t, []string{"test"}, log.lines())
	assert.ElementsMatch(t, []string{"ConfigMap web/config v=2", "ConfigMap web/new v=2", "ConfigMap web/traffic weight=100"}, liveData(rec))
	for _, o := range rec.Live() {
		assert.True(t, components.OwnedBy(labelsOf(o), components.DefaultInstance, "web"), "%s carries web's ownership labels", o)
	}
	invs, err := rec.Inventories(ctx, components.DefaultInstance)
	require.NoError(t, err)
	require.Len(t, invs, 1)
	assert.Equal(t, "v2.0", invs[0].Version)
	assert.Equal(t, []string{"ConfigMap web/config", "ConfigMap web/new", "ConfigMap web/traffic"}, refNames(invs[0].Objects))
}

// A run resumed at a manifest phase applies that phase and the later ones
// only, and still prunes: the inventory kept what the earlier phases
// applied before the crash.
func TestManifestPhasesResume(t *testing.T) {
	for _, at := range []string{"upgrade", "test", "rollout"} {
		t.Run(at, func(t *testing.T) {
			ctx := context.Background()
			rec, log := components.NewRecorder(), &phaseLog{}
			r := webRouter(rec, log)
			require.NoError(t, r.Run(ctx, task(nil, webV1(), nil)))
			// The first attempt ran the manifest phases before at, then
			// died: they applied their objects and saved the inventory.
			m := components.NewManifest(rec)
			for _, p := range webV2().Phases {
				if p.Name == at {
					break
				}
				if len(p.Manifests) > 0 {
					require.NoError(t, m.RunPhase(ctx, task(webV1(), webV2(), nil), p.Name))
				}
			}
			n := len(rec.Actions())

			resumed := task(webV1(), webV2(), nil)
			resumed.Step = at
			require.NoError(t, r.Run(ctx, resumed))
			var want []string
			if at == "upgrade" {
				want = append(want, "apply ConfigMap web/config v=2", "apply ConfigMap web/new v=2")
			}
			want = append(want, "apply ConfigMap web/traffic weight=100", "delete Service web/old")
			assert.Equal(t, want, verbs(rec, n), "actions after resuming at %s", at)
			assert.ElementsMatch(t, []string{"ConfigMap web/config v=2", "ConfigMap web/new v=2", "ConfigMap web/traffic weight=100"}, liveData(rec))
		})
	}
}

// Rolling a phased component back applies the previous version's objects
// and prunes what the target's phases added; rolling back to a phased
// version applies what its phases leave behind (the last phase's content
// of an object two phases render).
func TestManifestPhasesRollback(t *testing.T) {
	ctx := context.Background()
	rec, log := components.NewRecorder(), &phaseLog{}
	r := webRouter(rec, log)
	require.NoError(t, r.Run(ctx, task(nil, webV1(), nil)))
	require.NoError(t, r.Run(ctx, task(webV1(), webV2(), nil)))

	require.NoError(t, r.Rollback(ctx, task(webV1(), webV2(), nil)))
	assert.ElementsMatch(t, []string{"ConfigMap web/config v=1", "Service web/old"}, liveData(rec), "back at v1")

	v3 := webV2()
	v3.Version = release.MustParseVersion("v3.0")
	require.NoError(t, r.Run(ctx, task(webV1(), webV2(), nil)))
	require.NoError(t, r.Run(ctx, task(webV2(), v3, nil)))
	n := len(rec.Actions())
	require.NoError(t, r.Rollback(ctx, task(webV2(), v3, nil)))
	assert.ElementsMatch(t, []string{
		"apply ConfigMap web/config v=2", "apply ConfigMap web/new v=2", "apply ConfigMap web/traffic weight=100",
	}, verbs(rec, n), "v2's end state, in one apply, nothing pruned")
	assert.Equal(t, []string{"test", "test", "test"}, log.lines(), "a rollback runs no phase")
}

// Through the executor: phases are entered (the status records the
// phase), and a failure in a manifest phase names the phase and leaves
// the record at it.
func TestManifestPhasesExecute(t *testing.T) {
	rec, log := components.NewRecorder(), &phaseLog{}
	bad := webV2()
	// It renders at plan time (no From) and fails in the run.
	bad.Phases[3].Manifests[0].Template = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ if .From }}{{ .Values.missing }}{{ end }}x'}\n"
	v1 := webV1()
	g, err := dag.New([]dag.Node{{Name: "web", From: v1, To: bad}})
	require.NoError(t, err)
	h := path.Hop{From: v1.Version, To: bad.Version}
	p := &runner.Plan{Route: &path.Route{From: h.From, To: h.To, Hops: []path.Hop{h}}, Hops: []*runner.HopPlan{{Hop: h, Graph: g}}}
	st, err := runner.New(webRouter(rec, log)).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	cs, _ := st.Component(0, "web")
	assert.Equal(t, record.Failed, cs.Phase)
	assert.Equal(t, "rollout", cs.Step, "the record names the phase that failed")
	assert.Contains(t, cs.Error, "rollout")
	assert.Contains(t, cs.Error, "missing")
}

// The plan refuses manifest phases that do not render or that nothing can
// run, naming the phase; an object a phase renders is one of the
// component's in the hop's shared-object check.
func TestManifestPhasesValidate(t *testing.T) {
	bad := webV2()
	bad.Phases[1].Manifests[0].Template = "kind: [\n"
	r := webRouter(components.NewRecorder(), &phaseLog{})
	err := r.Validate(bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "upgrade.yaml")
	assert.NotContains(t, err.Error(), "drain")

	noManifest := components.NewRouter().Register(release.TypeInline, components.NewInline().Register("web", components.Steps{"test": nil}))
	err = noManifest.Validate(webV2())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "phase drain: ")
	assert.Contains(t, err.Error(), "manifest")

	other := manifestCV("other", "v1.0", cm("new", "v", "x"))
	g, err := dag.New([]dag.Node{{Name: "web", To: webV2()}, {Name: "other", To: other}})
	require.NoError(t, err)
	err = components.NewManifest(components.NewRecorder()).ValidateHop(&runner.HopPlan{Graph: g})
	require.ErrorIs(t, err, components.ErrSharedObject)
	assert.Contains(t, err.Error(), "ConfigMap web/new")
}

func refNames(refs []components.Ref) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.String())
	}
	return out
}

func labelsOf(o components.Object) map[string]string {
	md, _ := o.Content["metadata"].(map[string]any)
	ls, _ := md["labels"].(map[string]any)
	out := map[string]string{}
	for k, v := range ls {
		out[k], _ = v.(string)
	}
	return out
}

// A manifest component the hop installed rolls back to nothing: what its
// inventory holds is pruned, and no template is rendered (the regression:
// the rollback rendered "no manifests" and failed as Permanent).
func TestManifestRollbackInstalled(t *testing.T) {
	for _, to := range []*release.ComponentVersion{webV1(), webV2()} {
		t.Run(to.Version.String(), func(t *testing.T) {
			ctx := context.Background()
			rec, log := components.NewRecorder(), &phaseLog{}
			r := webRouter(rec, log)
			keep := manifestCV("other", "v1.0", cm("other", "v", "1"))
			require.NoError(t, r.Run(ctx, task(nil, keep, nil)))
			require.NoError(t, r.Run(ctx, task(nil, to, nil)))
			require.NoError(t, r.Rollback(ctx, task(nil, to, nil)))
			assert.Equal(t, []string{"ConfigMap web/other v=1"}, liveData(rec), "only the other component's object is left")
			invs, err := rec.Inventories(ctx, components.DefaultInstance)
			require.NoError(t, err)
			for _, inv := range invs {
				if inv.Component == "web" {
					assert.Empty(t, inv.Objects, "web's inventory after the rollback")
				}
			}
		})
	}
}

// A version whose manifest phases render no object at all still prunes:
// rolling back to it deletes what the target had.
func TestManifestPhasesRenderingNothingPrune(t *testing.T) {
	ctx := context.Background()
	rec, log := components.NewRecorder(), &phaseLog{}
	r := webRouter(rec, log)
	empty := &release.ComponentVersion{Name: "web", Version: release.MustParseVersion("v0.9"), Type: release.TypeManifest,
		Lifecycle: release.Lifecycle{Phases: []release.LifecyclePhase{{Name: "p", Manifests: []release.Manifest{{Name: "p.yaml", Template: "# nothing yet\n"}}}}}}
	require.NoError(t, r.Run(ctx, task(nil, empty, nil)))
	require.NoError(t, r.Run(ctx, task(empty, webV1(), nil)))
	require.NotEmpty(t, liveData(rec))
	require.NoError(t, r.Rollback(ctx, task(empty, webV1(), nil)))
	assert.Empty(t, liveData(rec), "back at a version with no objects")
}
