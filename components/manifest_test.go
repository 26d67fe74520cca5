package components_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// plainApplier is an Applier that is not a ReadyChecker; it fails as told.
type plainApplier struct {
	applyErr, deleteErr error
	rec                 components.Recorder
}

func (p *plainApplier) Apply(ctx context.Context, objs []components.Object, o components.ApplyOptions) error {
	if p.applyErr != nil {
		return p.applyErr
	}
	return p.rec.Apply(ctx, objs, o)
}

func (p *plainApplier) Delete(ctx context.Context, objs []components.Object) error {
	if p.deleteErr != nil {
		return p.deleteErr
	}
	return p.rec.Delete(ctx, objs)
}

// inventoryApplier is a plainApplier that keeps inventories, so that it
// prunes.
type inventoryApplier struct{ *plainApplier }

func (p inventoryApplier) Inventories(ctx context.Context, instance string) ([]components.Inventory, error) {
	return p.rec.Inventories(ctx, instance)
}

func (p inventoryApplier) SaveInventory(ctx context.Context, inv components.Inventory) error {
	return p.rec.SaveInventory(ctx, inv)
}

// checkingApplier is a Recorder whose Ready is replaced.
type checkingApplier struct {
	*components.Recorder
	ready func(ctx context.Context, hc release.HealthCheck) (bool, error)
}

func (c checkingApplier) Ready(ctx context.Context, hc release.HealthCheck, _ []components.Object) (bool, error) {
	return c.ready(ctx, hc)
}

func TestManifestPruneCatalog(t *testing.T) {
	c := loadCatalog(t)
	from, to := cvOf(t, c, "metrics-server", "v0.7.2"), cvOf(t, c, "metrics-server", "v0.8.0")
	rec := components.NewRecorder()
	m := components.NewManifest(rec, components.WithValues(testValues))

	// The cluster before the hop runs v0.7.2.
	require.NoError(t, m.Run(context.Background(), task(nil, from, hop("v26.03", "v26.06"))))
	assert.Contains(t, names(rec.Live()), "ConfigMap kube-system/metrics-server-config")

	require.NoError(t, m.Run(context.Background(), task(from, to, hop("v26.06", "v26.09"))))
	assert.Equal(t, []string{
		"metrics-server v0.7.2: apply ServiceAccount kube-system/metrics-server",
		"metrics-server v0.7.2: apply ConfigMap kube-system/metrics-server-config",
		"metrics-server v0.7.2: apply Deployment kube-system/metrics-server",
		"metrics-server v0.8.0: apply ServiceAccount kube-system/metrics-server",
		"metrics-server v0.8.0: apply Deployment kube-system/metrics-server",
		"metrics-server v0.7.2: delete ConfigMap kube-system/metrics-server-config",
	}, actions(rec))
	assert.Equal(t, []string{"ServiceAccount kube-system/metrics-server", "Deployment kube-system/metrics-server"}, names(rec.Live()), "sorted by group (core first), kind, namespace, name")
	assert.Equal(t, 2, rec.Polls("deployment-ready"), "one poll per run: the Recorder is ready at once")
}

func TestManifestPrune(t *testing.T) {
	obj := func(kind, ns, name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\n---\n", kind, name, ns)
	}
	tests := []struct {
		name string
		from *release.ComponentVersion
		to   *release.ComponentVersion
		want []string
	}{
		{
			name: "deleted in reverse order of group, kind, namespace and name, Namespaces last",
			from: manifestCV("app", "v1.0", obj("Namespace", "", "old")+obj("ConfigMap", "a", "x")+obj("Secret", "a", "x")+obj("ConfigMap", "b", "x")+obj("Service", "a", "s")),
			to:   manifestCV("app", "v2.0", obj("ConfigMap", "a", "x")+obj("Service", "a", "s")),
			want: []string{"apply ConfigMap a/x", "apply Service a/s", "delete Secret a/x", "delete ConfigMap b/x", "delete Namespace old"},
		},
		{
			name: "a new version of the same group is the same object",
			from: manifestCV("app", "v1.0", "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: i, namespace: a}\n"),
			to:   manifestCV("app", "v2.0", "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: i, namespace: a}\n"),
			want: []string{"apply HorizontalPodAutoscaler a/i"},
		},
		{
			name: "the same kind and name in another group is another object",
			from: manifestCV("app", "v1.0", "apiVersion: example.com/v1\nkind: Backup\nmetadata: {name: b, namespace: a}\n"),
			to:   manifestCV("app", "v2.0", "apiVersion: other.io/v1\nkind: Backup\nmetadata: {name: b, namespace: a}\n"),
			want: []string{"apply Backup a/b", "delete Backup a/b"},
		},
		{
			name: "a new component prunes nothing",
			to:   manifestCV("app", "v2.0", obj("ConfigMap", "a", "x")),
			want: []string{"apply ConfigMap a/x"},
		},
		{
			name: "a previous version without manifests prunes nothing",
			from: execCV("app", "v1.0", "/bin/true"),
			to:   manifestCV("app", "v2.0", obj("ConfigMap", "a", "x")),
			want: []string{"apply ConfigMap a/x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := components.NewRecorder()
			m := components.NewManifest(rec)
			if tt.from != nil && tt.from.Type == release.TypeManifest {
				require.NoError(t, m.Run(context.Background(), task(nil, tt.from, nil)))
			}
			before := len(rec.Actions())
			require.NoError(t, m.Run(context.Background(), task(tt.from, tt.to, nil)))
			var got []string
			for _, a := range rec.Actions()[before:] {
				got = append(got, a.Verb+" "+a.Object.String())
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestManifestPruneNeedsNoOldValues is the regression test of a value only
// the old templates used: prune works off the inventory, so the previous
// version is never rendered again and the value is not needed any more.
func TestManifestPruneNeedsNoOldValues(t *testing.T) {
	from := manifestCV("app", "v1.0.0", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mirror, namespace: ns}\ndata: {url: '{{ .Values.legacyMirror }}'}\n")
	to := manifestCV("app", "v1.1.0", configMap)
	rec := components.NewRecorder()
	require.NoError(t, components.NewManifest(rec, components.WithValues(map[string]any{"legacyMirror": "old.local"})).Run(context.Background(), task(nil, from, nil)))
	require.NoError(t, components.NewManifest(rec).Run(context.Background(), task(from, to, nil)), "the values of v1.1.0 lack legacyMirror")
	assert.Equal(t, []string{"app v1.0.0: apply ConfigMap ns/mirror", "app v1.1.0: apply ConfigMap ns/a", "app v1.0.0: delete ConfigMap ns/mirror"}, actions(rec))
}

// TestManifestPruneDefaultedNamespace is the regression test of a
// namespace that v1 leaves to the default and v2 writes out: both are the
// same object, so v2 prunes nothing.
func TestManifestPruneDefaultedNamespace(t *testing.T) {
	from := manifestCV("app", "v1.0", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\n")
	to := manifestCV("app", "v2.0", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app, namespace: default}\n")
	rec := components.NewRecorder()
	m := components.NewManifest(rec)
	require.NoError(t, m.Run(context.Background(), task(nil, from, nil)))
	require.NoError(t, m.Run(context.Background(), task(from, to, nil)))
	assert.Equal(t, []string{"app v1.0: apply Deployment default/app", "app v2.0: apply Deployment default/app"}, actions(rec), "nothing pruned")
	assert.Equal(t, []string{"Deployment default/app"}, names(rec.Live()))

	// The component's namespace param is the default of its objects.
	to.Params = map[string]string{"namespace": "apps"}
	objs, err := m.Render(task(nil, from, nil))
	require.NoError(t, err)
	assert.Equal(t, "default", objs[0].Namespace)
	from.Params = map[string]string{"namespace": "apps"}
	objs, err = m.Render(task(nil, from, nil))
	require.NoError(t, err)
	assert.Equal(t, "apps", objs[0].Namespace)
	_, err = components.NewManifest(rec, components.WithNamespace("x")).Render(task(nil,
		manifestCV("app", "v1.0", "apiVersion: v1\nkind: Namespace\nmetadata: {name: n, namespace: x}\n"), nil))
	assert.ErrorContains(t, err, "Namespace n is cluster-scoped but sets metadata.namespace x; remove it")
}

// TestManifestSharedObject is the regression test of an object two
// components render: refused at plan time naming both, and at run time
// when one component applies what another's inventory holds; prune never
// deletes an object another component took over.
func TestManifestSharedObject(t *testing.T) {
	ns := "apiVersion: v1\nkind: Namespace\nmetadata: {name: platform}\n"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: platform}\n"
	a1, b1 := manifestCV("a", "v1.0", ns+"---\n"+cm), manifestCV("b", "v1.0", ns)
	// The Recorder takes over, so that b can take a's Namespace over
	// below, and the refusal of b's run is the Manifest's (its inventory
	// check), not the Applier's (CheckOwner).
	rec := components.NewRecorder(components.WithTakeOver(true))
	m := components.NewManifest(rec)

	g, err := dag.New([]dag.Node{{Name: "a", To: a1}, {Name: "b", To: b1}})
	require.NoError(t, err)
	err = m.ValidateHop(&runner.HopPlan{Graph: g})
	require.ErrorIs(t, err, components.ErrSharedObject)
	assert.EqualError(t, err, "Namespace platform is rendered by two components, a and b: an object has one owner, or a prune of one deletes it under the other; render it in one of them (or in a component both depend on)")

	require.NoError(t, m.Run(context.Background(), task(nil, a1, nil)))
	err = m.Run(context.Background(), task(nil, b1, nil))
	require.ErrorIs(t, err, components.ErrSharedObject)
	assert.True(t, runner.IsPermanent(err))
	se, ok := errors.AsType[*components.SharedObjectError](err)
	require.True(t, ok)
	assert.Equal(t, [2]string{"a", "b"}, se.Components)

	// An object labelled as another component's (taken over outside
	// hopdag's inventory) is not pruned.
	other := components.Object{APIVersion: "v1", Kind: "Namespace", Name: "platform",
		Content: map[string]any{"metadata": map[string]any{"labels": map[string]any{components.LabelComponent: "b", components.LabelInstance: components.DefaultInstance}}}}
	require.NoError(t, rec.Apply(context.Background(), []components.Object{other}, components.ApplyOptions{}))
	require.NoError(t, m.Run(context.Background(), task(a1, manifestCV("a", "v2.0", cm), nil)))
	assert.Equal(t, []string{"ConfigMap platform/cfg", "Namespace platform"}, names(rec.Live()), "b's Namespace stays")
}

// withChecks returns a manifest component that has ConfigMap ns/a (and
// ns/old in v1.0.0) and the given health checks.
func withChecks(version string, checks ...release.HealthCheck) *release.ComponentVersion {
	tpl := configMap
	if version == "v1.0.0" {
		tpl += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: old, namespace: ns}\n"
	}
	cv := manifestCV("app", version, tpl)
	cv.HealthChecks = checks
	return cv
}

func check(name string, timeout, interval time.Duration) release.HealthCheck {
	return release.HealthCheck{Name: name, Timeout: release.D(timeout), Interval: release.D(interval)}
}

func TestManifestReadiness(t *testing.T) {
	t.Run("polled until ready, then pruned", func(t *testing.T) {
		rec := components.NewRecorder().ReadyAfter("pods", 3)
		from := withChecks("v1.0.0")
		to := withChecks("v1.1.0", check("pods", 30*time.Second, 2*time.Millisecond), check("svc", 0, 0))
		m := components.NewManifest(rec)
		require.NoError(t, m.Run(context.Background(), task(nil, from, nil)))
		require.NoError(t, m.Run(context.Background(), task(from, to, nil)))
		assert.Equal(t, 4, rec.Polls("pods"), "three polls not ready, the fourth ready")
		assert.Equal(t, 1, rec.Polls("svc"), "a check with no timeout or interval is polled at once")
		assert.Equal(t, []string{"app v1.0.0: apply ConfigMap ns/a", "app v1.0.0: apply ConfigMap ns/old",
			"app v1.1.0: apply ConfigMap ns/a", "app v1.0.0: delete ConfigMap ns/old"}, actions(rec))
	})

	t.Run("not ready before the check's timeout", func(t *testing.T) {
		rec := components.NewRecorder().ReadyAfter("pods", -1)
		from := withChecks("v1.0.0")
		to := withChecks("v1.1.0", check("pods", 30*time.Millisecond, 2*time.Millisecond))
		m := components.NewManifest(rec)
		require.NoError(t, m.Run(context.Background(), task(nil, from, nil)))
		start := time.Now()
		err := m.Run(context.Background(), task(from, to, nil))
		assert.Less(t, time.Since(start), 20*time.Second, "the check's timeout (30ms) ended it, not a default")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, components.ErrNotReady)
		assert.NotErrorIs(t, err, context.Canceled)
		assert.False(t, runner.IsPermanent(err), "a component that did not get ready may be retried")
		nr, ok := errors.AsType[*components.NotReadyError](err)
		require.True(t, ok)
		assert.Equal(t, "pods", nr.Check)
		assert.Equal(t, 30*time.Millisecond, nr.Timeout)
		assert.Greater(t, nr.Polls, 1)
		assert.Regexp(t, `^components: app v1\.1\.0: ready: health check pods not ready after 30ms \(\d+ polls\)$`, err.Error())
		assert.Contains(t, names(rec.Live()), "ConfigMap ns/old", "nothing is pruned before the new version is ready")
	})

	t.Run("the component's timeout ends the wait", func(t *testing.T) {
		rec := components.NewRecorder().ReadyAfter("pods", -1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		err := components.NewManifest(rec).Run(ctx, task(nil, withChecks("v1.1.0", check("pods", time.Minute, 2*time.Millisecond)), nil))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, components.ErrNotReady)
		assert.EqualError(t, err, "components: app v1.1.0: ready: health check pods: context deadline exceeded")
	})

	t.Run("cancellation ends the wait", func(t *testing.T) {
		rec := components.NewRecorder().ReadyAfter("pods", -1)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		err := components.NewManifest(rec).Run(ctx, task(nil, withChecks("v1.1.0", check("pods", time.Minute, 2*time.Millisecond)), nil))
		require.ErrorIs(t, err, context.Canceled)
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("checks run in order; a Ready error stops", func(t *testing.T) {
		var mu sync.Mutex
		var asked []string
		errAPI := errors.New("forbidden")
		a := checkingApplier{components.NewRecorder(), func(_ context.Context, hc release.HealthCheck) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, hc.Name)
			if hc.Name == "second" {
				return false, errAPI
			}
			return true, nil
		}}
		err := components.NewManifest(a).Run(context.Background(),
			task(nil, withChecks("v1.1.0", check("first", time.Second, time.Millisecond), check("second", time.Second, time.Millisecond), check("third", 0, 0)), nil))
		require.ErrorIs(t, err, errAPI)
		assert.EqualError(t, err, "components: app v1.1.0: ready: health check second: forbidden")
		assert.Equal(t, []string{"first", "second"}, asked)
	})

	t.Run("an applier that cannot check", func(t *testing.T) {
		a := &plainApplier{}
		cv := withChecks("v1.1.0", check("pods", 0, 0))
		m := components.NewManifest(a)
		err := m.Run(context.Background(), task(nil, cv, nil))
		require.ErrorIs(t, err, components.ErrNoReadyChecker)
		assert.True(t, runner.IsPermanent(err))
		assert.Empty(t, a.rec.Actions(), "nothing is applied")
		assert.EqualError(t, m.Validate(cv), "components: app v1.1.0: validate: applier cannot check readiness (*components_test.plainApplier); the component has health checks")
		assert.NoError(t, m.Validate(withChecks("v1.1.0")), "without health checks any Applier will do")
		assert.NoError(t, m.Run(context.Background(), task(nil, withChecks("v1.1.0"), nil)))
	})
}

func TestManifestApplierErrors(t *testing.T) {
	errDown := errors.New("api server down")
	from, to := withChecks("v1.0.0"), withChecks("v1.1.0")

	err := components.NewManifest(&plainApplier{applyErr: errDown}).Run(context.Background(), task(from, to, nil))
	require.ErrorIs(t, err, errDown)
	assert.False(t, runner.IsPermanent(err), "an apply failure is retried")
	assert.EqualError(t, err, "components: app v1.1.0: apply: api server down")

	failing := &plainApplier{}
	require.NoError(t, components.NewManifest(inventoryApplier{failing}).Run(context.Background(), task(nil, from, nil)))
	failing.deleteErr = errDown
	err = components.NewManifest(inventoryApplier{failing}).Run(context.Background(), task(from, to, nil))
	require.ErrorIs(t, err, errDown)
	assert.EqualError(t, err, "components: app v1.1.0: prune: api server down")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := components.NewRecorder()
	err = components.NewManifest(rec).Run(ctx, task(from, to, nil))
	require.ErrorIs(t, err, context.Canceled)
	assert.EqualError(t, err, "components: app v1.1.0: apply: context canceled")
	assert.Empty(t, rec.Actions())

	assert.True(t, runner.IsPermanent(components.NewManifest(rec).Run(context.Background(), runner.Task{Component: "x"})))
	assert.Panics(t, func() { components.NewManifest(nil) })
}

func TestManifestApplyOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []components.ManifestOption
		want components.ApplyOptions
	}{
		{"default field manager", nil, components.ApplyOptions{FieldManager: "hopdag"}},
		{"set", []components.ManifestOption{components.WithApplyOptions(components.ApplyOptions{FieldManager: "ops", Force: true})}, components.ApplyOptions{FieldManager: "ops", Force: true}},
		{"force alone", []components.ManifestOption{components.WithApplyOptions(components.ApplyOptions{Force: true})}, components.ApplyOptions{FieldManager: "hopdag", Force: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := components.NewRecorder()
			require.NoError(t, components.NewManifest(rec, tt.opts...).Run(context.Background(), task(nil, withChecks("v1.1.0"), nil)))
			require.Len(t, rec.Actions(), 1)
			assert.Equal(t, tt.want, rec.Actions()[0].Options)
		})
	}
}

func TestManifestValidateCatalog(t *testing.T) {
	c := loadCatalog(t)
	with := components.NewManifest(components.NewRecorder(), components.WithValues(testValues))
	without := components.NewManifest(components.NewRecorder())
	n := 0
	for _, cv := range c.Components {
		if cv.Type != release.TypeManifest {
			continue
		}
		n++
		assert.NoError(t, with.Validate(&cv), cv.Key())
		err := without.Validate(&cv)
		if cv.Name == "provider" || cv.Name == "calico" {
			require.ErrorIs(t, err, components.ErrTemplate, cv.Key())
			assert.Contains(t, err.Error(), `map has no entry for key "registry"`, "a missing value is a plan-time error")
		}
	}
	assert.Greater(t, n, 20)
	assert.EqualError(t, with.Validate(nil), "components: validate: nil component version")
}

// Many components through one Manifest and one Recorder at once: run with
// -race. Each component's actions keep their order.
func TestManifestConcurrent(t *testing.T) {
	rec := components.NewRecorder().ReadyAfter("ready", 5)
	m := components.NewManifest(rec)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			name := fmt.Sprintf("app%02d", i)
			tpl := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: %s}\n", name, name)
			cv := manifestCV(name, "v1.0.0", tpl)
			cv.HealthChecks = []release.HealthCheck{check("ready", time.Second, time.Millisecond)}
			errs <- m.Run(context.Background(), task(nil, cv, nil))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Len(t, rec.Live(), 40)
	first := map[string]string{}
	for _, a := range rec.Actions() {
		if _, seen := first[a.Object.Component]; !seen {
			first[a.Object.Component] = a.Object.Kind
		}
	}
	for comp, kind := range first {
		assert.Equal(t, "Namespace", kind, "%s applied its Namespace first", comp)
	}
}

// TestManifestReadyReason: a ReadyChecker that says why it is not ready
// (an error matching ErrPending) is polled on, and the timeout carries
// the last reason.
func TestManifestReadyReason(t *testing.T) {
	pending := fmt.Errorf("%w: Deployment ns/web: 0/1 available", components.ErrPending)
	a := checkingApplier{components.NewRecorder(), func(context.Context, release.HealthCheck) (bool, error) { return false, pending }}
	err := components.NewManifest(a).Run(context.Background(), task(nil, withChecks("v1.1.0", check("pods", 30*time.Millisecond, 2*time.Millisecond)), nil))
	require.ErrorIs(t, err, components.ErrNotReady)
	require.ErrorIs(t, err, pending)
	nr, ok := errors.AsType[*components.NotReadyError](err)
	require.True(t, ok)
	assert.Greater(t, nr.Polls, 1, "polled on")
	assert.Regexp(t, `^components: app v1\.1\.0: ready: health check pods not ready after 30ms \(\d+ polls\): not ready yet: Deployment ns/web: 0/1 available$`, err.Error())
}

// WithInstance("") is the default instance (as the zero value of other
// options is their default), and an instance that cannot be a label
// value and part of an inventory's name (hopdag.INSTANCE.COMPONENT: a '.'
// would make instance a's component b.c and instance a.b's component c
// share one) is refused at plan time (ValidateHop) and by Run, applying
// nothing, where it failed each manifest component at run time, after
// the hop's other components had run.
func TestManifestInstance(t *testing.T) {
	cv := manifestCV("web", "v1.0", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: ns}\n")
	g, err := dag.New([]dag.Node{{Name: "web", To: cv}})
	require.NoError(t, err)
	tests := []struct {
		instance string
		want     string // the instance labelled, or "" when refused
	}{
		{"", components.DefaultInstance},
		{"prod-eu-1", "prod-eu-1"},
		{strings.Repeat("a", 63), strings.Repeat("a", 63)},
		{strings.Repeat("a", 64), ""},
		{"prod.eu", ""},
		{"Prod", ""},
		{"a/b", ""},
		{"-a", ""},
		{"a b", ""},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%.20q", tc.instance), func(t *testing.T) {
			rec := components.NewRecorder()
			m := components.NewManifest(rec, components.WithInstance(tc.instance))
			verr := m.ValidateHop(&runner.HopPlan{Graph: g})
			rerr := m.Run(context.Background(), task(nil, cv, nil))
			if tc.want == "" {
				require.Error(t, verr, "ValidateHop with WithInstance(%q)", tc.instance)
				assert.Contains(t, verr.Error(), fmt.Sprintf("WithInstance(%q)", tc.instance))
				assert.Contains(t, verr.Error(), "1 to 63 lowercase letters, digits and '-'")
				require.Error(t, rerr, "Run with WithInstance(%q)", tc.instance)
				assert.True(t, runner.IsPermanent(rerr), "Run's error is permanent: %v", rerr)
				assert.Empty(t, rec.Actions(), "nothing applied")
				return
			}
			require.NoError(t, verr, "ValidateHop with WithInstance(%q)", tc.instance)
			require.NoError(t, rerr, "Run with WithInstance(%q)", tc.instance)
			live := rec.Live()
			require.Len(t, live, 1)
			inst, comp, ok := components.Owner(live[0])
			assert.True(t, ok)
			assert.Equal(t, [2]string{tc.want, "web"}, [2]string{inst, comp}, "owner labels")
		})
	}
}

// waitingErr is a pending reason with a one-line summary.
type waitingErr struct{ n int }

func (e waitingErr) Error() string        { return fmt.Sprintf("not ready: %d of 3", e.n) }
func (e waitingErr) Is(target error) bool { return target == components.ErrPending }
func (e waitingErr) Waiting() string {
	return fmt.Sprintf("waiting for Deployment ns/web: %d of 3 available", e.n)
}

// TestManifestWaiting: each pending poll is reported through
// Task.Waiting, the executor emitting a ComponentWaiting event per change:
// the reason's Waiting() when it has one, else the check's name and the
// reason's first line, else the check's name.
func TestManifestWaiting(t *testing.T) {
	tests := []struct {
		name    string
		reasons []error // per poll, then ready
		want    []string
	}{
		{name: "summary", reasons: []error{waitingErr{0}, waitingErr{1}, waitingErr{1}, waitingErr{2}},
			want: []string{"waiting for Deployment ns/web: 0 of 3 available", "waiting for Deployment ns/web: 1 of 3 available", "waiting for Deployment ns/web: 2 of 3 available"}},
		{name: "plain error", reasons: []error{fmt.Errorf("%w: Job ns/migrate\nline two", components.ErrPending)},
			want: []string{"waiting for health check pods: components: not ready yet: Job ns/migrate"}},
		{name: "no reason", reasons: []error{nil, nil},
			want: []string{"waiting for health check pods"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var polls atomic.Int32
			a := checkingApplier{components.NewRecorder(), func(context.Context, release.HealthCheck) (bool, error) {
				n := int(polls.Add(1)) - 1
				if n < len(tt.reasons) {
					return false, tt.reasons[n]
				}
				return true, nil
			}}
			cv := withChecks("v1.1.0", check("pods", 30*time.Second, time.Millisecond))
			g, err := dag.New([]dag.Node{{Name: "app", To: cv}})
			require.NoError(t, err)
			h := path.Hop{From: release.MustParseVersion("v1.0.0"), To: cv.Version}
			p := &runner.Plan{Route: &path.Route{From: h.From, To: h.To, Hops: []path.Hop{h}}, Hops: []*runner.HopPlan{{Hop: h, Graph: g}}}
			var mu sync.Mutex
			var got []string
			obs := runner.ObserverFunc(func(ev runner.Event) {
				if ev.Type == runner.ComponentWaiting {
					mu.Lock()
					got = append(got, ev.Reason)
					mu.Unlock()
				}
			})
			_, err = runner.New(components.NewManifest(a), runner.WithBlockingObserver(obs)).Execute(context.Background(), p, nil)
			require.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, tt.want, got)
		})
	}
}
