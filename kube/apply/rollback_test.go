package apply_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/apply"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// The rollback tests run a hop v1.0 -> v2.0 through runner.Executor with
// the Rollback failure policy and a components.Router whose manifest
// runner applies through kube/apply to the real API server. The hop's
// last component, the inline "smoke", fails terminally, so the hop rolls
// back; the tests then read the cluster, the inventories and the status.
//
// The components (objects in the namespace <ns>-b unless said):
//
//	b      v1.0.0 in both releases (not in the hop): Namespace <ns>-b, ConfigMap b-config
//	app    v1.0.0: ConfigMap app-config {mode: v1}, ConfigMap app-old; depends on b
//	       v2.0.0: ConfigMap app-config {mode: v2, added: "yes"}, ConfigMap app-new,
//	               ConfigMap app-adopted, Service app (app-old dropped)
//	web    v1.0.0, v2.0.0: ConfigMap web-config {app: vN}; depends on app
//	extra  v1.0.0, new in v2.0 (TestRollbackInstalled): ConfigMap extra-config, Service extra
//	smoke  inline, new in v2.0, depends on the last of them: fails
//
// Without a garbage collector (envtest runs none) a pruned object keeps
// its deletionTimestamp and its foregroundDeletion finalizer; collect
// plays the collector where a test needs pruned objects to go.

const (
	rbV1 = "v1.0"
	rbV2 = "v2.0"
)

// rbNS is the namespace b owns and the other components apply into.
func rbNS(ns string) string { return ns + "-b" }

func configMap(name string, data ...string) string {
	s := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n"
	if len(data) > 0 {
		s += "data:\n"
		for i := 0; i+1 < len(data); i += 2 {
			s += fmt.Sprintf("  %s: %q\n", data[i], data[i+1])
		}
	}
	return s
}

func service(name string) string {
	return "apiVersion: v1\nkind: Service\nmetadata: {name: " + name + "}\nspec:\n  selector: {app: " + name + "}\n  ports: [{port: 80, targetPort: 8080}]\n"
}

func docs(ds ...string) string {
	out := ""
	for i, d := range ds {
		if i > 0 {
			out += "---\n"
		}
		out += d
	}
	return out
}

// rbComponent is a manifest component version applying into <ns>-b.
func rbComponent(name, version, ns, tpl string, deps ...string) *release.ComponentVersion {
	c := cv(name, version, rbNS(ns), tpl)
	c.Dependencies = deps
	return c
}

func bV1(ns string) *release.ComponentVersion {
	return rbComponent("b", "v1.0.0", ns, docs(
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: "+rbNS(ns)+"}\n",
		configMap("b-config", "owner", "b")))
}

func appV1(ns string) *release.ComponentVersion {
	return rbComponent("app", "v1.0.0", ns, docs(configMap("app-config", "mode", "v1"), configMap("app-old", "k", "old")), "b")
}

func appV2(ns string) *release.ComponentVersion {
	return rbComponent("app", "v2.0.0", ns, docs(configMap("app-config", "mode", "v2", "added", "yes"),
		configMap("app-new", "k", "new"), configMap("app-adopted", "k", "new"), service("app")), "b")
}

func webV(version, ns string) *release.ComponentVersion {
	return rbComponent("web", version, ns, configMap("web-config", "app", version), "app")
}

func smoke(deps ...string) *release.ComponentVersion {
	return &release.ComponentVersion{Name: "smoke", Version: release.MustParseVersion("v1.0.0"), Type: release.TypeInline,
		Handler: "smoke", Dependencies: deps}
}

// rbCatalog is the catalog of releases v1.0 and v2.0 shipping those
// components, with the upgrade path v1.0 -> v2.0.
func rbCatalog(t *testing.T, v1, v2 []*release.ComponentVersion) *release.Catalog {
	t.Helper()
	refs := func(cvs []*release.ComponentVersion) []release.ComponentRef {
		var out []release.ComponentRef
		for _, c := range cvs {
			out = append(out, release.ComponentRef{Name: c.Name, Version: c.Version})
		}
		return out
	}
	var all []release.ComponentVersion
	seen := map[string]bool{}
	for _, c := range slices.Concat(v1, v2) {
		if k := c.Name + "@" + c.Version.Original(); !seen[k] {
			seen[k] = true
			all = append(all, *c)
		}
	}
	c, err := release.NewCatalog(
		[]release.Release{
			{Version: release.MustParseVersion(rbV1), Components: refs(v1)},
			{Version: release.MustParseVersion(rbV2), Components: refs(v2)},
		}, all,
		[]release.UpgradePath{{Rules: []release.Rule{{From: release.MustParseConstraint(rbV1), To: release.MustParseVersion(rbV2)}}}})
	require.NoError(t, err)
	return c
}

// events records the component events of a run, in order, as
// "Type component".
type events struct {
	mu   sync.Mutex
	all  []string
	wake map[string]chan struct{}
}

func (e *events) Observe(ev runner.Event) {
	if ev.Component == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := string(ev.Type) + " " + ev.Component
	e.all = append(e.all, s)
	if ch, ok := e.wake[s]; ok {
		close(ch)
		delete(e.wake, s)
	}
}

// on returns a channel closed when the event s ("Type component") is
// observed. Call it before the run.
func (e *events) on(s string) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.wake == nil {
		e.wake = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	e.wake[s] = ch
	return ch
}

func (e *events) index(s string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Index(e.all, s)
}

// rbRun is a run of the rollback hop.
type rbRun struct {
	st     *record.Status
	err    error
	events *events
}

// failSmoke is the smoke handler: it runs before (when not nil), then
// fails terminally; its rollback does nothing.
func failSmoke(before func(ctx context.Context) error) components.Phases {
	return components.Phases{
		Upgrade: func(ctx context.Context, _ runner.Task) error {
			if before != nil {
				if err := before(ctx); err != nil {
					return err
				}
			}
			return runner.Permanent(errors.New("smoke: the new release does not serve"))
		},
		Rollback: func(context.Context, runner.Task) error { return nil },
	}
}

// runHop installs v1's manifest components (through Manifest.Run, as a
// previous run would have), then executes the hop v1.0 -> v2.0 with the
// Rollback policy, its events recorded in ev (nil: a new events).
func runHop(t *testing.T, ns string, a *apply.Applier, v1, v2 []*release.ComponentVersion, smokeH components.Phases, ev *events) rbRun {
	t.Helper()
	ctx := context.Background()
	m := components.NewManifest(a, components.WithInstance(ns))
	for _, c := range v1 {
		if c.Type == release.TypeManifest {
			require.NoError(t, m.Run(ctx, task(nil, c)), "install %s", c.Name)
		}
	}
	router := components.NewRouter().
		Register(release.TypeManifest, m).
		Register(release.TypeInline, components.NewInline().Register("smoke", smokeH))
	if ev == nil {
		ev = &events{}
	}
	exec := runner.New(router, runner.WithFailurePolicy(runner.Rollback), runner.WithObserver(ev))
	p, err := runner.NewPlan(rbCatalog(t, v1, v2), path.State{"": release.MustParseVersion(rbV1)}, path.State{"": release.MustParseVersion(rbV2)}, runner.ForExecutor(exec))
	require.NoError(t, err)
	st, err := exec.Execute(ctx, p, nil)
	require.NotNil(t, st)
	return rbRun{st: st, err: err, events: ev}
}

// phases returns the component phases of the run's only hop.
func (r rbRun) phases() map[string]record.Phase {
	out := map[string]record.Phase{}
	for _, c := range r.st.Hops[0].Components {
		out[c.Name] = c.Phase
	}
	return out
}

// collect plays the garbage collector for the objects of instance: once
// gate is closed (nil: at once), every interval it finishes the
// foreground deletions it finds (none of the tests' objects has
// dependents). It stops with the test.
func collect(t testing.TB, gate <-chan struct{}, instance string, rs ...schema.GroupVersionResource) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		if gate != nil {
			select {
			case <-ctx.Done():
				return
			case <-gate:
			}
		}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for _, r := range rs {
				list, err := dyn.Resource(r).List(ctx, metav1.ListOptions{LabelSelector: components.LabelInstance + "=" + instance})
				if err != nil {
					continue
				}
				for _, u := range list.Items {
					if u.GetDeletionTimestamp() == nil || !slices.Contains(u.GetFinalizers(), metav1.FinalizerDeleteDependents) {
						continue
					}
					_, _ = dyn.Resource(r).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.MergePatchType,
						[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				}
			}
		}
	}()
}

// waitGone waits until the object does not exist.
func waitGone(ctx context.Context, r schema.GroupVersionResource, ns, name string) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := dyn.Resource(r).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/%s still there: %w", ns, name, ctx.Err())
		case <-tick.C:
		}
	}
}

var services = gvr("", "v1", "services")

// liveNames returns the names of the live (not being deleted) objects of
// r in ns labelled as component's of instance, sorted.
func liveNames(t *testing.T, r schema.GroupVersionResource, ns, instance, component string) []string {
	t.Helper()
	list, err := dyn.Resource(r).Namespace(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: components.LabelInstance + "=" + instance + "," + components.LabelComponent + "=" + component})
	require.NoError(t, err)
	var out []string
	for _, u := range list.Items {
		if u.GetDeletionTimestamp() == nil {
			out = append(out, u.GetKind()+"/"+u.GetName())
		}
	}
	slices.Sort(out)
	return out
}

// inventory returns the stored inventory of component, ok false when
// there is none.
func inventory(t *testing.T, a *apply.Applier, instance, component string) (components.Inventory, bool) {
	t.Helper()
	invs, err := a.Inventories(context.Background(), instance)
	require.NoError(t, err)
	for _, inv := range invs {
		if inv.Component == component {
			return inv, true
		}
	}
	return components.Inventory{}, false
}

func refStrings(refs []components.Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.String()
	}
	return out
}

func dataOf(t *testing.T, ns, name string) map[string]any {
	t.Helper()
	u := get(t, configmaps, ns, name)
	require.NotNil(t, u, "ConfigMap %s/%s", ns, name)
	d, _ := u.Object["data"].(map[string]any)
	return d
}

func resourceVersion(t *testing.T, r schema.GroupVersionResource, ns, name string) uint64 {
	t.Helper()
	u := get(t, r, ns, name)
	require.NotNil(t, u, "%s %s/%s", r.Resource, ns, name)
	rv, err := strconv.ParseUint(u.GetResourceVersion(), 10, 64)
	require.NoError(t, err, "resourceVersion of %s/%s", ns, name)
	return rv
}

// TestRollbackUpgrade: app v1.0.0 -> v2.0.0 and web v1.0.0 -> v2.0.0
// succeed, smoke (depending on web) fails, and the hop rolls back, smoke
// first, then web, then app. Before failing, smoke waits for the object
// v2 pruned to be gone (collect finishes its deletion), and hands
// app-adopted over to b (its labels then name b, as a takeover by
// another component would).
//
// It checks: the cluster holds exactly app v1's objects, with v1's data
// (the key v2 added is gone, server-side apply's field ownership) and
// app's labels; v2's other objects are deleted, app-adopted, now b's, is
// not; the object v2 dropped is back; app's inventory says v1.0.0 with
// v1's objects; b's Namespace and ConfigMap are untouched; the status
// says RolledBack for every component, the hop and the run; and the
// order is dependents first, in the run's events and in the order the
// rollback's writes reached the server (their resourceVersions, the
// etcd revisions of the writes).
func TestRollbackUpgrade(t *testing.T) {
	ns := namespace(t)
	bns := rbNS(ns)
	a, _ := newApplier(t, ns)
	collect(t, nil, ns, configmaps, services)
	b := bV1(ns)
	v1 := []*release.ComponentVersion{b, appV1(ns), webV("v1.0.0", ns)}
	v2 := []*release.ComponentVersion{b, appV2(ns), webV("v2.0.0", ns), smoke("web")}

	// smoke runs on the executor's goroutines: it returns errors, it does
	// not call t's methods.
	var beforeRollback struct{ bNS, bCM string }
	handler := failSmoke(func(ctx context.Context) error {
		cm, err := dyn.Resource(configmaps).Namespace(bns).Get(ctx, "app-config", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got, _, _ := unstructured.NestedString(cm.Object, "data", "mode"); got != "v2" {
			return fmt.Errorf("smoke: app-config mode = %q before the failure, want v2 (the upgrade ran)", got)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := waitGone(wctx, configmaps, bns, "app-old"); err != nil {
			return err
		}
		if _, err := dyn.Resource(configmaps).Namespace(bns).Patch(ctx, "app-adopted", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"hopdag.io/component":"b"}}}`), metav1.PatchOptions{}); err != nil {
			return err
		}
		n, err := dyn.Resource(namespaces).Get(ctx, bns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		bc, err := dyn.Resource(configmaps).Namespace(bns).Get(ctx, "b-config", metav1.GetOptions{})
		if err != nil {
			return err
		}
		beforeRollback.bNS, beforeRollback.bCM = n.GetResourceVersion(), bc.GetResourceVersion()
		return nil
	})
	run := runHop(t, ns, a, v1, v2, handler, nil)

	t.Run("status", func(t *testing.T) {
		require.ErrorIs(t, run.err, runner.ErrRunFailed)
		assert.NotErrorIs(t, run.err, runner.ErrRollbackFailed, "every component rolled back")
		assert.Equal(t, record.RolledBack, run.st.Phase, "run phase")
		assert.Equal(t, record.RolledBack, run.st.Hops[0].Phase, "hop phase (%s)", run.st.Hops[0].Message)
		assert.Equal(t, map[string]record.Phase{"app": record.RolledBack, "web": record.RolledBack, "smoke": record.RolledBack}, run.phases())
		for _, c := range run.st.Hops[0].Components {
			if c.Name == "smoke" {
				assert.Contains(t, c.Error, "smoke: the new release does not serve", "smoke failed for the scripted reason")
			}
		}
	})
	t.Run("app at v1", func(t *testing.T) {
		assert.Equal(t, []string{"ConfigMap/app-config", "ConfigMap/app-old"}, liveNames(t, configmaps, bns, ns, "app"), "app's live ConfigMaps")
		assert.Empty(t, liveNames(t, services, bns, ns, "app"), "app's live Services")
		assert.Equal(t, map[string]any{"mode": "v1"}, dataOf(t, bns, "app-config"), "v1's data; the key v2 added is gone")
		assert.Equal(t, map[string]any{"k": "old"}, dataOf(t, bns, "app-old"), "the object v2 dropped is back")
		for _, name := range []string{"app-config", "app-old"} {
			u := get(t, configmaps, bns, name)
			require.NotNil(t, u)
			assert.Nil(t, u.GetDeletionTimestamp(), "%s is not being deleted", name)
			assert.Equal(t, map[string]string{components.LabelComponent: "app", components.LabelInstance: ns, components.LabelManagedBy: "hopdag"},
				u.GetLabels(), "%s's labels", name)
		}
		assert.False(t, live(t, configmaps, bns, "app-new"), "app-new (v2 only) is deleted")
		assert.False(t, live(t, services, bns, "app"), "Service app (v2 only) is deleted")
		adopted := get(t, configmaps, bns, "app-adopted")
		if assert.NotNil(t, adopted, "app-adopted, labelled b's, is not deleted") {
			assert.Nil(t, adopted.GetDeletionTimestamp(), "app-adopted, labelled b's, is not being deleted")
			assert.Equal(t, "b", adopted.GetLabels()[components.LabelComponent])
		}
		inv, ok := inventory(t, a, ns, "app")
		require.True(t, ok, "app's inventory is stored")
		assert.Equal(t, "v1.0.0", inv.Version)
		assert.Equal(t, []string{"ConfigMap " + bns + "/app-config", "ConfigMap " + bns + "/app-old"}, refStrings(inv.Objects))
	})
	t.Run("web at v1", func(t *testing.T) {
		assert.Equal(t, map[string]any{"app": "v1.0.0"}, dataOf(t, bns, "web-config"))
		inv, ok := inventory(t, a, ns, "web")
		require.True(t, ok, "web's inventory is stored")
		assert.Equal(t, "v1.0.0", inv.Version)
		assert.Equal(t, []string{"ConfigMap " + bns + "/web-config"}, refStrings(inv.Objects))
	})
	t.Run("b untouched", func(t *testing.T) {
		require.NotEmpty(t, beforeRollback.bNS, "smoke ran its checks")
		nsObj := get(t, namespaces, "", bns)
		require.NotNil(t, nsObj, "b's Namespace exists")
		assert.Nil(t, nsObj.GetDeletionTimestamp(), "b's Namespace is not being deleted")
		assert.Equal(t, "b", nsObj.GetLabels()[components.LabelComponent])
		assert.Equal(t, beforeRollback.bNS, nsObj.GetResourceVersion(), "the rollback did not write b's Namespace")
		cm := get(t, configmaps, bns, "b-config")
		require.NotNil(t, cm, "b's ConfigMap exists")
		assert.Equal(t, beforeRollback.bCM, cm.GetResourceVersion(), "the rollback did not write b's ConfigMap")
		inv, ok := inventory(t, a, ns, "b")
		require.True(t, ok)
		assert.Equal(t, []string{"ConfigMap " + bns + "/b-config", "Namespace " + bns}, refStrings(inv.Objects))
	})
	t.Run("order", func(t *testing.T) {
		for _, dep := range [][2]string{{"smoke", "web"}, {"web", "app"}} {
			done, start := run.events.index("ComponentRolledBack "+dep[0]), run.events.index("ComponentRollingBack "+dep[1])
			require.NotEqual(t, -1, done, "%s rolled back", dep[0])
			require.NotEqual(t, -1, start, "%s rolling back", dep[1])
			assert.Less(t, done, start, "%s rolled back before %s starts (events %v)", dep[0], dep[1], run.events.all)
		}
		// Both ConfigMaps were written by the rollback (their data went
		// back to v1's), web's before app's.
		assert.Less(t, resourceVersion(t, configmaps, bns, "web-config"), resourceVersion(t, configmaps, bns, "app-config"),
			"web-config's rollback write reached the server before app-config's")
	})
}

func extraV1(ns string) *release.ComponentVersion {
	return rbComponent("extra", "v1.0.0", ns, docs(configMap("extra-config", "k", "extra"), service("extra")), "app")
}

// TestRollbackInstalled: the hop installs extra (no from-version; app
// and b do not change), smoke (depending on extra) fails, and extra is
// rolled back to nothing: everything it created is deleted, its
// inventory is empty or gone, and app's and b's objects, in the same
// namespace, are not touched.
//
// Manifest.Rollback prunes, for a component with no from-version, what
// its inventory holds (components, a851feb; it used to render the
// emptied target and fail Permanent with "component has no manifests").
func TestRollbackInstalled(t *testing.T) {
	ns := namespace(t)
	bns := rbNS(ns)
	a, _ := newApplier(t, ns)
	collect(t, nil, ns, configmaps, services)
	b, app := bV1(ns), appV1(ns)
	v1 := []*release.ComponentVersion{b, app}
	v2 := []*release.ComponentVersion{b, app, extraV1(ns), smoke("extra")}

	var rvs map[string]string // app's and b's objects once extra is installed
	handler := failSmoke(func(ctx context.Context) error {
		rvs = map[string]string{}
		for _, o := range [][2]string{{bns, "b-config"}, {bns, "app-config"}, {bns, "app-old"}, {bns, "extra-config"}} {
			u, err := dyn.Resource(configmaps).Namespace(o[0]).Get(ctx, o[1], metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("smoke: %w (extra installed, app and b untouched, before the failure)", err)
			}
			rvs[o[1]] = u.GetResourceVersion()
		}
		n, err := dyn.Resource(namespaces).Get(ctx, bns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		rvs["namespace"] = n.GetResourceVersion()
		return nil
	})
	run := runHop(t, ns, a, v1, v2, handler, nil)

	t.Run("status", func(t *testing.T) {
		require.ErrorIs(t, run.err, runner.ErrRunFailed)
		assert.NotErrorIs(t, run.err, runner.ErrRollbackFailed, "every component rolled back")
		assert.Equal(t, record.RolledBack, run.st.Phase, "run phase")
		assert.Equal(t, record.RolledBack, run.st.Hops[0].Phase, "hop phase (%s)", run.st.Hops[0].Message)
		assert.Equal(t, map[string]record.Phase{"extra": record.RolledBack, "smoke": record.RolledBack}, run.phases())
		for _, c := range run.st.Hops[0].Components {
			if c.Name == "extra" {
				assert.Equal(t, "rolled back to none", c.Reason, "extra: %s", c.Error)
			}
		}
	})
	t.Run("extra removed", func(t *testing.T) {
		require.NotEmpty(t, rvs, "smoke saw extra installed")
		assert.False(t, live(t, configmaps, bns, "extra-config"), "extra-config is deleted")
		assert.False(t, live(t, services, bns, "extra"), "Service extra is deleted")
		assert.Empty(t, liveNames(t, configmaps, bns, ns, "extra"), "extra's live ConfigMaps")
		assert.Empty(t, liveNames(t, services, bns, ns, "extra"), "extra's live Services")
		if inv, ok := inventory(t, a, ns, "extra"); ok {
			assert.Empty(t, inv.Objects, "extra's inventory, when kept, holds nothing (version %s)", inv.Version)
		}
	})
	t.Run("app and b untouched", func(t *testing.T) {
		require.NotEmpty(t, rvs, "smoke saw extra installed")
		for _, name := range []string{"b-config", "app-config", "app-old"} {
			u := get(t, configmaps, bns, name)
			if assert.NotNil(t, u, "%s exists", name) {
				assert.Nil(t, u.GetDeletionTimestamp(), "%s is not being deleted", name)
				assert.Equal(t, rvs[name], u.GetResourceVersion(), "%s is not written by extra's rollback", name)
			}
		}
		n := get(t, namespaces, "", bns)
		if assert.NotNil(t, n, "b's Namespace exists") {
			assert.Nil(t, n.GetDeletionTimestamp(), "b's Namespace is not being deleted")
			assert.Equal(t, rvs["namespace"], n.GetResourceVersion())
		}
		inv, ok := inventory(t, a, ns, "app")
		require.True(t, ok)
		assert.Equal(t, "v1.0.0", inv.Version)
		assert.Equal(t, []string{"ConfigMap " + bns + "/app-config", "ConfigMap " + bns + "/app-old"}, refStrings(inv.Objects))
	})
}

// TestRollbackPrunedTerminating: as TestRollbackUpgrade, but smoke fails
// while app-old, the ConfigMap app v2 pruned, is still being deleted: the
// prune's foreground deletion keeps it, with a deletionTimestamp, until
// the garbage collector removes its foregroundDeletion finalizer. The
// rollback then applies v1's app-old, which the deletion would take
// away: the apply must wait until it is gone and create it again.
//
// The collector (collect) starts only once app's rollback has read
// app-old twice (the read, then a poll of the object being deleted): so
// the rollback has to wait for it, and finishes only after it. The test
// counts the GETs of app-old on the Applier's wire.
//
// It checks: the run is RolledBack; smoke saw app-old being deleted;
// afterwards app-old is a new object (another UID), not being deleted,
// with v1's data and app's labels; the apply reported it recreated; the
// inventory lists it.
func TestRollbackPrunedTerminating(t *testing.T) {
	ns := namespace(t)
	bns := rbNS(ns)
	reqs := newObjectRequests("configmaps", "app-old")
	rec := &recorder{}
	a, err := apply.New(reqs.config(cfg), apply.WithInventoryNamespace(ns), apply.WithReporter(rec.report))
	require.NoError(t, err)
	b := bV1(ns)
	v1 := []*release.ComponentVersion{b, appV1(ns)}
	v2 := []*release.ComponentVersion{b, appV2(ns), smoke("app")}

	ev := &events{}
	rollingBack := ev.on("ComponentRollingBack app")
	gate := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-rollingBack:
		}
		select {
		case <-ctx.Done():
		case <-reqs.getsAfter(2):
			close(gate)
		}
	}()
	collect(t, gate, ns, configmaps, services)

	var pruned struct {
		uid      types.UID
		deleting bool
	}
	run := runHop(t, ns, a, v1, v2, failSmoke(func(ctx context.Context) error {
		u, err := dyn.Resource(configmaps).Namespace(bns).Get(ctx, "app-old", metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("smoke: app-old, pruned by app v2, is not there being deleted: %w", err)
		}
		pruned.uid, pruned.deleting = u.GetUID(), u.GetDeletionTimestamp() != nil
		return nil
	}), ev)
	require.ErrorIs(t, run.err, runner.ErrRunFailed)
	assert.NotErrorIs(t, run.err, runner.ErrRollbackFailed, "every component rolled back")
	require.Equal(t, record.RolledBack, run.st.Phase, "the run says app is back at v1 (%s)", run.st.Hops[0].Message)
	require.True(t, pruned.deleting, "smoke failed while app-old was being deleted")
	select {
	case <-gate:
	default:
		t.Fatal("the collector never ran: app's rollback did not poll app-old, so it did not wait for its deletion")
	}

	old := get(t, configmaps, bns, "app-old")
	require.NotNil(t, old, "app-old exists after the rollback")
	assert.Nil(t, old.GetDeletionTimestamp(), "app-old, which v1 renders, is not being deleted after the rollback to v1 (finalizers %v)", old.GetFinalizers())
	assert.NotEqual(t, pruned.uid, old.GetUID(), "app-old is a new object, created once the pruned one was gone")
	assert.Equal(t, map[string]any{"k": "old"}, dataOf(t, bns, "app-old"), "v1's data")
	assert.Equal(t, map[string]string{components.LabelComponent: "app", components.LabelInstance: ns, components.LabelManagedBy: "hopdag"},
		old.GetLabels(), "app-old's labels")
	assert.Contains(t, rec.take(), "ConfigMap "+bns+"/app-old created (was being deleted; recreated once gone)", "the rollback's change")
	inv, ok := inventory(t, a, ns, "app")
	require.True(t, ok)
	assert.Equal(t, "v1.0.0", inv.Version)
	assert.Equal(t, []string{"ConfigMap " + bns + "/app-config", "ConfigMap " + bns + "/app-old"}, refStrings(inv.Objects))
	t.Logf("requests for app-old: %v", reqs.counts())
}
