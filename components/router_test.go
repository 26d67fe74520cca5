package components_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// validatingRunner records its calls and refuses components named "bad".
type validatingRunner struct{ log *phaseLog }

func (v validatingRunner) Run(_ context.Context, t runner.Task) error {
	v.log.add("run %s", t.Component)
	return nil
}

func (v validatingRunner) Validate(cv *release.ComponentVersion) error {
	if cv.Name == "bad" {
		return errors.New("bad is refused")
	}
	return nil
}

func TestRouterRun(t *testing.T) {
	log := &phaseLog{}
	errUser := errors.New("user failure")
	r := components.NewRouter().
		Register("custom", validatingRunner{log}).
		Register("failing", runner.RunnerFunc(func(context.Context, runner.Task) error { return errUser })).
		Register("permanent", runner.RunnerFunc(func(context.Context, runner.Task) error { return runner.Permanent(errUser) })).
		Register("skipping", runner.RunnerFunc(func(context.Context, runner.Task) error { return runner.Skip("nothing to do") }))
	assert.Equal(t, []string{"custom", "failing", "permanent", "skipping"}, r.Types())

	cv := func(typ string) *release.ComponentVersion {
		return &release.ComponentVersion{Name: "app", Version: release.MustParseVersion("v1.2.0"), Type: typ}
	}
	tests := []struct {
		name      string
		to        *release.ComponentVersion
		wantIs    []error
		permanent bool
		msg       string
	}{
		{name: "dispatches by type", to: cv("custom")},
		{name: "wraps a runner's error with component and version", to: cv("failing"), wantIs: []error{errUser},
			msg: "components: app v1.2.0: run: user failure"},
		{name: "keeps Permanent", to: cv("permanent"), wantIs: []error{errUser}, permanent: true},
		{name: "passes a skip on", to: cv("skipping"), wantIs: []error{runner.ErrSkipped}, msg: "runner: skipped: nothing to do"},
		{name: "unknown type is permanent and lists the registered", to: cv("helm"), wantIs: []error{components.ErrUnknownType}, permanent: true,
			msg: `components: app v1.2.0: run: no runner registered for component type "helm" (registered: custom, failing, permanent, skipping)`},
		{name: "empty type", to: cv(""), wantIs: []error{components.ErrUnknownType}, permanent: true},
		{name: "no target", to: nil, permanent: true, msg: "components: app: run: task has no target version (To is nil)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.Run(context.Background(), runner.Task{Component: "app", To: tt.to})
			if tt.to != nil && tt.to.Type == "custom" {
				require.NoError(t, err)
				assert.Equal(t, []string{"run app"}, log.lines())
				return
			}
			require.Error(t, err)
			for _, target := range tt.wantIs {
				assert.ErrorIs(t, err, target)
			}
			assert.Equal(t, tt.permanent, runner.IsPermanent(err), "IsPermanent(%v)", err)
			if tt.msg != "" {
				assert.EqualError(t, err, tt.msg)
			}
		})
	}
}

func TestRouterUnknownTypeError(t *testing.T) {
	r := components.NewRouter().Register("b", noop).Register("a", noop)
	err := r.Run(context.Background(), runner.Task{To: &release.ComponentVersion{Name: "x", Version: release.MustParseVersion("v1.0"), Type: "c"}})
	nr, ok := errors.AsType[*components.NotRegisteredError](err)
	require.True(t, ok, "errors.As(%v, *NotRegisteredError)", err)
	assert.Equal(t, &components.NotRegisteredError{Kind: "type", Name: "c", Registered: []string{"a", "b"}}, nr)
	ce, ok := errors.AsType[*components.Error](err)
	require.True(t, ok)
	assert.Equal(t, "x", ce.Component)
	assert.Equal(t, "v1.0", ce.Version)

	var zero components.Router
	err = zero.Validate(&release.ComponentVersion{Name: "x", Version: release.MustParseVersion("v1.0"), Type: "c"})
	assert.EqualError(t, err, `components: x v1.0: validate: no runner registered for component type "c" (none registered)`)
}

func TestRouterValidate(t *testing.T) {
	inline := components.NewInline().Register("etcd", noop)
	r := components.NewRouter().
		Register("custom", validatingRunner{&phaseLog{}}).
		Register(release.TypeInline, inline).
		Register("plain", noop)
	v := func(name, typ, handler string) *release.ComponentVersion {
		return &release.ComponentVersion{Name: name, Version: release.MustParseVersion("v1.0.0"), Type: typ, Handler: handler}
	}
	tests := []struct {
		name string
		cv   *release.ComponentVersion
		is   error
		msg  string
	}{
		{name: "registered, runner validates", cv: v("good", "custom", "")},
		{name: "registered, runner without Validate", cv: v("bad", "plain", "")},
		{name: "registered, runner refuses", cv: v("bad", "custom", ""), msg: "components: bad v1.0.0: validate: bad is refused"},
		{name: "inline handler known", cv: v("etcd", release.TypeInline, "etcd")},
		{name: "inline handler unknown is a plan-time error", cv: v("kubelet", release.TypeInline, "kubelet"), is: components.ErrUnknownHandler,
			msg: `components: kubelet v1.0.0: validate: no inline handler registered as "kubelet" (registered: etcd)`},
		{name: "type unknown", cv: v("x", "helm", ""), is: components.ErrUnknownType,
			msg: `components: x v1.0.0: validate: no runner registered for component type "helm" (registered: custom, inline, plain)`},
		{name: "nil", cv: nil, msg: "components: validate: nil component version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.Validate(tt.cv)
			if tt.msg == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tt.msg)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
		})
	}
}

// A plan over testdata/catalog with a router that lacks the manifest type
// and one inline handler fails at NewPlan, naming every component.
func TestRouterPlanValidation(t *testing.T) {
	c := loadCatalog(t)
	inline := components.NewInline()
	for _, h := range []string{"bkeagent", "containerd", "etcd", "kubernetes-master"} {
		inline.Register(h, noop)
	}
	r := components.NewRouter().Register(release.TypeInline, inline)
	_, err := runner.NewPlan(c, path.MustParseState("v26.06-rc.2"), path.MustParseState("v26.06-rc.3"), runner.ForExecutor(runner.New(r)))
	require.ErrorIs(t, err, runner.ErrInvalidPlan)
	for _, want := range []string{
		`component calico: components: calico v3.29.4: validate: no runner registered for component type "manifest" (registered: inline)`,
		`component kubernetes-worker: components: kubernetes-worker v1.33.3: validate: no inline handler registered as "kubernetes-worker" (registered: bkeagent, containerd, etcd, kubernetes-master)`,
		"component provider:", "component pre-upgrade-resources:", "component kube-proxy:",
	} {
		assert.Contains(t, err.Error(), want)
	}

	inline.Register("kubernetes-worker", noop)
	r.Register(release.TypeManifest, components.NewManifest(components.NewRecorder(), components.WithValues(testValues)))
	_, err = runner.NewPlan(c, path.MustParseState("v26.06-rc.2"), path.MustParseState("v26.06-rc.3"),
		runner.ForExecutor(runner.New(r, runner.WithCheck("cluster-healthy", okCheck))))
	assert.NoError(t, err)
}

func TestRouterRegisterPanics(t *testing.T) {
	assert.PanicsWithValue(t, "components: Router.Register with an empty component type", func() { components.NewRouter().Register("", noop) })
	assert.PanicsWithValue(t, `components: Router.Register("x") with a nil runner`, func() { components.NewRouter().Register("x", nil) })
	assert.PanicsWithValue(t, `components: component type "x" registered twice`, func() { components.NewRouter().Register("x", noop).Register("x", noop) })
}

// The plan refuses a hop in which two components render one object: the
// Router passes runner.HopValidator on to the Manifest runner, so the
// refusal comes at plan time, before anything is applied.
func TestRouterValidatesHop(t *testing.T) {
	ns := "apiVersion: v1\nkind: Namespace\nmetadata: {name: platform}\n"
	g, err := dag.New([]dag.Node{{Name: "a", To: manifestCV("a", "v1.0", ns)}, {Name: "b", To: manifestCV("b", "v1.0", ns)}})
	require.NoError(t, err)
	rec := components.NewRecorder()
	r := components.NewRouter().Register(release.TypeManifest, components.NewManifest(rec))
	hop := &runner.HopPlan{Hop: path.Hop{From: release.MustParseVersion("v1.0"), To: release.MustParseVersion("v1.1")}, Graph: g}
	err = runner.New(r).Validate(&runner.Plan{Hops: []*runner.HopPlan{hop}})
	require.ErrorIs(t, err, runner.ErrInvalidPlan)
	require.ErrorIs(t, err, components.ErrSharedObject, "the manifest runner's own error, not a string")
	assert.Contains(t, err.Error(), "hop 1 v1.0 -> v1.1: Namespace platform is rendered by two components, a and b")
	assert.Empty(t, rec.Live(), "nothing applied")
}
