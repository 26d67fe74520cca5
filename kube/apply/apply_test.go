package apply_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
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
	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/kube/apply"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// cv is a manifest component version whose objects default to namespace
// ns.
func cv(name, version, ns, tpl string, checks ...release.HealthCheck) *release.ComponentVersion {
	return &release.ComponentVersion{Name: name, Version: release.MustParseVersion(version), Type: release.TypeManifest,
		Params: map[string]string{"namespace": ns}, HealthChecks: checks,
		Manifests: []release.Manifest{{Name: name + ".yaml", Template: tpl}}}
}

func task(from, to *release.ComponentVersion) runner.Task {
	return runner.Task{Component: to.Name, From: from, To: to, Attempt: 1}
}

// recorder keeps the ChangeSets an Applier reports.
type recorder struct {
	mu  sync.Mutex
	all []apply.ChangeSet
}

func (r *recorder) report(cs apply.ChangeSet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, cs)
}

// take returns the changes reported since the last take, as strings.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, cs := range r.all {
		for _, c := range cs {
			out = append(out, c.String())
		}
	}
	r.all = nil
	return out
}

// newApplier returns an Applier whose inventories live in the test's own
// namespace, and what it reports.
func newApplier(t testing.TB, ns string, opts ...apply.Option) (*apply.Applier, *recorder) {
	t.Helper()
	rec := &recorder{}
	a, err := apply.New(cfg, append([]apply.Option{apply.WithInventoryNamespace(ns), apply.WithReporter(rec.report)}, opts...)...)
	require.NoError(t, err)
	return a, rec
}

const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[1]ss.%[2]s}
spec:
  group: %[2]s
  scope: Namespaced
  names: {plural: %[1]ss, singular: %[1]s, kind: Widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`

func deployment(image string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: web
      containers: [{name: web, image: "` + image + `"}]
`
}

// appV is the component of TestApplyComponent: a ConfigMap (v1 only), a
// ServiceAccount, a Deployment, a CRD and a custom resource of it.
func appV(version, ns, group, image string, withConfig bool) *release.ComponentVersion {
	tpl := fmt.Sprintf(crd, "widget", group) + "---\n" +
		"apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: web}\n---\n" +
		deployment(image) + "---\n" +
		"apiVersion: " + group + "/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n"
	if withConfig {
		tpl += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {mode: fast}\n"
	}
	return cv("app", version, ns, tpl, release.HealthCheck{Name: "web-ready", Timeout: release.D(time.Minute),
		Interval: release.D(100 * time.Millisecond), Params: map[string]string{"kind": "Deployment", "name": "web"}})
}

// TestApplyComponent applies a component with a ConfigMap, a
// ServiceAccount, a Deployment, a CRD and a custom resource of it in one
// go; applies it again (a no-op: no resourceVersion moves); then applies
// the next version, which changes the Deployment's image and drops the
// ConfigMap, waits for the Deployment to be ready, and prunes exactly the
// ConfigMap. Readiness: the test's controller goroutine writes the
// Deployment's status subresource (no kubelet runs).
func TestApplyComponent(t *testing.T) {
	ns := namespace(t)
	group := ns + ".example.com"
	a, rec := newApplier(t, ns)
	m := components.NewManifest(a, components.WithInstance(ns))
	controller(t, components.LabelInstance+"="+ns)
	ctx := context.Background()

	v1, v2 := appV("v1.0.0", ns, group, "web:1", true), appV("v1.1.0", ns, group, "web:2", false)
	require.NoError(t, m.Run(ctx, task(nil, v1)))
	assert.Equal(t, []string{
		"CustomResourceDefinition.apiextensions.k8s.io widgets." + group + " created",
		"ServiceAccount " + ns + "/web created",
		"Deployment.apps " + ns + "/web created",
		"Widget." + group + " " + ns + "/w1 created",
		"ConfigMap " + ns + "/web-config created",
	}, rec.take(), "the CRD first, then the rest in declared order")
	dep := get(t, deployments, ns, "web")
	require.NotNil(t, dep)
	assert.Equal(t, map[string]string{components.LabelComponent: "app", components.LabelInstance: ns, components.LabelManagedBy: "hopdag"}, dep.GetLabels())
	widget := get(t, gvr(group, "v1", "widgets"), ns, "w1")
	require.NotNil(t, widget, "the custom resource is applied once its CRD is established")

	rvs := resourceVersions(t, ns, group)
	require.NoError(t, m.Run(ctx, task(v1, v1)))
	for _, c := range rec.take() {
		assert.True(t, strings.HasSuffix(c, " unchanged"), "re-apply: %s, want unchanged", c)
	}
	assert.Equal(t, rvs, resourceVersions(t, ns, group), "a re-apply writes nothing")

	// A finalizer of the test's own keeps the ConfigMap v2 prunes
	// Terminating, whatever the propagation and whether or not a garbage
	// collector runs, so that the finalizers its delete adds can be read.
	hold(t, configmaps, ns, "web-config")
	require.NoError(t, m.Run(ctx, task(v1, v2)))
	assert.Equal(t, []string{
		"CustomResourceDefinition.apiextensions.k8s.io widgets." + group + " unchanged",
		"ServiceAccount " + ns + "/web unchanged",
		"Deployment.apps " + ns + "/web configured",
		"Widget." + group + " " + ns + "/w1 unchanged",
		"ConfigMap " + ns + "/web-config pruned",
	}, rec.take())
	dep = get(t, deployments, ns, "web")
	image, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	assert.Equal(t, "web:2", image[0].(map[string]any)["image"])
	og, _, _ := unstructured.NestedInt64(dep.Object, "status", "observedGeneration")
	assert.Equal(t, dep.GetGeneration(), og, "the prune came after the new Deployment was ready")
	assert.False(t, live(t, configmaps, ns, "web-config"), "the dropped ConfigMap is pruned")
	pruned := get(t, configmaps, ns, "web-config")
	require.NotNil(t, pruned, "the test's finalizer holds the pruned ConfigMap")
	assert.NotNil(t, pruned.GetDeletionTimestamp(), "the pruned ConfigMap is being deleted")
	// The API server adds foregroundDeletion for a delete with
	// propagationPolicy Foreground only (orphan for Orphan, none for
	// Background).
	assert.Contains(t, pruned.GetFinalizers(), metav1.FinalizerDeleteDependents, "the prune's delete propagates in the foreground: finalizers %v", pruned.GetFinalizers())
	assert.NotContains(t, pruned.GetFinalizers(), metav1.FinalizerOrphanDependents)
	assert.True(t, live(t, serviceAccs, ns, "web"))
	assert.True(t, live(t, gvr(group, "v1", "widgets"), ns, "w1"))

	invs, err := a.Inventories(ctx, ns)
	require.NoError(t, err)
	require.Len(t, invs, 1)
	assert.Equal(t, "v1.1.0", invs[0].Version)
	assert.Len(t, invs[0].Objects, 4)
}

// testFinalizer is the finalizer hold puts on an object.
const testFinalizer = "test.hopdag.io/hold"

// hold adds testFinalizer to an object, so that a delete leaves it
// Terminating with the finalizers the delete added, and takes it off again
// when the test ends.
func hold(t *testing.T, r schema.GroupVersionResource, ns, name string) {
	t.Helper()
	ctx := context.Background()
	ri := dyn.Resource(r).Namespace(ns)
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	u.SetFinalizers(append(u.GetFinalizers(), testFinalizer))
	_, err = ri.Update(ctx, u, metav1.UpdateOptions{})
	require.NoError(t, err, "add finalizer %s to %s %s/%s", testFinalizer, r.Resource, ns, name)
	t.Cleanup(func() {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		require.NoError(t, err)
		u.SetFinalizers(slices.DeleteFunc(u.GetFinalizers(), func(f string) bool { return f == testFinalizer }))
		_, err = ri.Update(ctx, u, metav1.UpdateOptions{})
		assert.NoError(t, err, "remove finalizer %s from %s %s/%s", testFinalizer, r.Resource, ns, name)
	})
}

// resourceVersions returns the resourceVersion of every object of appV.
func resourceVersions(t *testing.T, ns, group string) []string {
	var out []string
	for _, o := range []*unstructured.Unstructured{
		get(t, gvr("apiextensions.k8s.io", "v1", "customresourcedefinitions"), "", "widgets."+group),
		get(t, serviceAccs, ns, "web"), get(t, deployments, ns, "web"),
		get(t, gvr(group, "v1", "widgets"), ns, "w1"), get(t, configmaps, ns, "web-config"),
	} {
		require.NotNil(t, o)
		out = append(out, o.GetKind()+"="+o.GetResourceVersion())
	}
	return out
}

// TestPruneDefaultedNamespace is the regression test of a namespace that
// v1 leaves to the default and v2 writes out: the same object, so v2
// prunes nothing (before the fix it deleted the object v2 had just
// applied).
func TestPruneDefaultedNamespace(t *testing.T) {
	ns := namespace(t)
	a, rec := newApplier(t, ns)
	m := components.NewManifest(a, components.WithInstance(ns), components.WithNamespace(ns))
	ctx := context.Background()
	v1 := cv("app", "v1.0", "", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {v: '1'}\n")
	v2 := cv("app", "v2.0", "", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: "+ns+"}\ndata: {v: '2'}\n")
	v1.Params, v2.Params = nil, nil
	require.NoError(t, m.Run(ctx, task(nil, v1)))
	require.NoError(t, m.Run(ctx, task(v1, v2)))
	assert.Equal(t, []string{"ConfigMap " + ns + "/app created", "ConfigMap " + ns + "/app configured"}, rec.take(), "nothing pruned")
	assert.True(t, live(t, configmaps, ns, "app"))
}

// TestPruneSharedObject is the regression test of an object two
// components render: refused at plan time naming both, refused at run
// time while another component's inventory holds it, and never pruned once
// its labels name another component.
func TestPruneSharedObject(t *testing.T) {
	ns := namespace(t)
	a, rec := newApplier(t, ns)
	m := components.NewManifest(a, components.WithInstance(ns))
	ctx := context.Background()
	shared := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: platform}\n"
	own := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a-only}\n"
	a1, b1 := cv("a", "v1.0", ns, shared+"---\n"+own), cv("b", "v1.0", ns, shared)

	require.NoError(t, m.Run(ctx, task(nil, a1)))
	err := m.Run(ctx, task(nil, b1))
	require.ErrorIs(t, err, components.ErrSharedObject)
	assert.ErrorContains(t, err, "ConfigMap "+ns+"/platform is rendered by two components, a and b")
	rec.take()

	// b takes the ConfigMap over (its labels now name b): a's next version,
	// which drops it, leaves it in place.
	_, err = dyn.Resource(configmaps).Namespace(ns).Patch(ctx, "platform", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"hopdag.io/component":"b"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, m.Run(ctx, task(a1, cv("a", "v2.0", ns, own))))
	assert.Equal(t, []string{
		"ConfigMap " + ns + "/a-only unchanged",
		"ConfigMap " + ns + `/platform skipped (labelled as component "b" of instance "` + ns + `", not "a" of "` + ns + `")`,
	}, rec.take())
	assert.True(t, live(t, configmaps, ns, "platform"))
}

// TestPruneDroppedValue is the regression test of a value only the old
// templates used: the upgrade needs it no more, because prune works off
// the inventory in the cluster, not the old templates.
func TestPruneDroppedValue(t *testing.T) {
	ns := namespace(t)
	a, rec := newApplier(t, ns)
	ctx := context.Background()
	v1 := cv("app", "v1.0", ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mirror}\ndata: {url: {{ .Values.legacyMirror | quote }}}\n")
	v2 := cv("app", "v2.0", ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\n")
	old := components.NewManifest(a, components.WithInstance(ns), components.WithValues(map[string]any{"legacyMirror": "http://old: mirror\n"}))
	require.NoError(t, old.Run(ctx, task(nil, v1)))
	assert.Equal(t, "http://old: mirror\n", get(t, configmaps, ns, "mirror").Object["data"].(map[string]any)["url"], "a value with ': ' and a newline, quoted")
	require.NoError(t, components.NewManifest(a, components.WithInstance(ns)).Run(ctx, task(v1, v2)), "no legacyMirror value any more")
	assert.Equal(t, []string{"ConfigMap " + ns + "/mirror created", "ConfigMap " + ns + "/app created", "ConfigMap " + ns + "/mirror pruned"}, rec.take())
}

// TestConflict: a field another manager owns is a clear error naming the
// manager and the field; Force takes it over.
func TestConflict(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	force := false
	_, err := dyn.Resource(configmaps).Namespace(ns).Patch(ctx, "cfg", types.ApplyPatchType,
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"mode":"slow"}}`),
		metav1.PatchOptions{FieldManager: "ops-team", Force: &force})
	require.NoError(t, err)

	c := cv("app", "v1.0", ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {mode: fast}\n")
	a, _ := newApplier(t, ns)
	err = components.NewManifest(a, components.WithInstance(ns)).Run(ctx, task(nil, c))
	require.ErrorIs(t, err, apply.ErrConflict)
	assert.False(t, runner.IsPermanent(err))
	ce, ok := errors.AsType[*apply.ConflictError](err)
	require.True(t, ok)
	assert.Equal(t, []string{"ops-team"}, ce.Managers)
	assert.Equal(t, []string{".data.mode"}, ce.Fields)
	assert.Equal(t, "hopdag", ce.FieldManager)
	assert.ErrorContains(t, err, `apply: ConfigMap `+ns+`/cfg: field manager hopdag conflicts with "ops-team" on .data.mode; leave these fields to "ops-team", or apply with Force to take them over`)
	assert.Equal(t, "slow", get(t, configmaps, ns, "cfg").Object["data"].(map[string]any)["mode"])

	forced, _ := newApplier(t, ns, apply.WithForce(true))
	require.NoError(t, components.NewManifest(forced, components.WithInstance(ns)).Run(ctx, task(nil, c)))
	assert.Equal(t, "fast", get(t, configmaps, ns, "cfg").Object["data"].(map[string]any)["mode"])
}

// TestReadyTimeout: a health check that selects two objects, a Deployment
// whose status says it is not available (the test writes it, as the
// controller would for pods that never start) and a custom resource whose
// controller reports Ready=False, times out with an error naming both,
// each with its kstatus message and its conditions; a custom resource
// checked for Ready=True is ready once the test writes that condition.
func TestReadyTimeout(t *testing.T) {
	ns := namespace(t)
	group := ns + ".example.com"
	a, _ := newApplier(t, ns)
	m := components.NewManifest(a, components.WithInstance(ns))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })

	// The check selects by name: the Deployment and the Widget, both "web",
	// not the CRD. The Widget's group is not the one of the second part's
	// CRD, which another component applies.
	slow := "slow." + group
	c := cv("web", "v1.0", ns, fmt.Sprintf(crd, "widget", slow)+"---\n"+deployment("web:1")+"---\napiVersion: "+slow+"/v1\nkind: Widget\nmetadata: {name: web}\n",
		release.HealthCheck{Name: "web-ready", Timeout: release.D(3 * time.Second), Interval: release.D(100 * time.Millisecond), Params: map[string]string{"name": "web"}})
	wg.Go(func() {
		// The Deployment controller's view: one replica, none available.
		setStatus(ctx, deployments, ns, "web", func(u *unstructured.Unstructured) map[string]any {
			now := time.Now().UTC().Format(time.RFC3339)
			return map[string]any{"observedGeneration": u.GetGeneration(), "replicas": int64(1), "updatedReplicas": int64(1), "unavailableReplicas": int64(1),
				"conditions": []any{map[string]any{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability.", "lastUpdateTime": now, "lastTransitionTime": now}}}
		})
	})
	wg.Go(func() {
		// The Widget controller's view: not ready, and saying why.
		setStatus(ctx, gvr(slow, "v1", "widgets"), ns, "web", func(u *unstructured.Unstructured) map[string]any {
			return map[string]any{"observedGeneration": u.GetGeneration(),
				"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "Provisioning", "message": "waiting for 3 backends"}}}
		})
	})
	err := m.Run(ctx, task(nil, c))
	require.ErrorIs(t, err, components.ErrNotReady)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	ue, ok := errors.AsType[*apply.UnreadyError](err)
	require.True(t, ok, "the timeout carries the last reason: %v", err)
	assert.Equal(t, "web-ready", ue.Check)
	assert.False(t, ue.Failed)
	require.Len(t, ue.Objects, 2, "the Deployment and the Widget, not the CRD: %v", err)
	dep, widget := ue.Objects[0], ue.Objects[1]
	assert.Equal(t, "Deployment.apps "+ns+"/web", dep.Object.String())
	assert.Equal(t, "InProgress", dep.Status)
	assert.Equal(t, "Available: 0/1", dep.Message, "kstatus counts the available replicas")
	assert.Equal(t, []string{"Available=False (MinimumReplicasUnavailable: Deployment does not have minimum availability.)"}, dep.Conditions)
	assert.Equal(t, "Widget."+slow+" "+ns+"/web", widget.Object.String())
	assert.Equal(t, "InProgress", widget.Status)
	assert.Equal(t, "waiting for 3 backends", widget.Message, "kstatus takes the Ready=False condition's message")
	assert.Equal(t, []string{"Ready=False (Provisioning: waiting for 3 backends)"}, widget.Conditions)
	assert.Regexp(t, `^components: web v1\.0: ready: health check web-ready not ready after 3s \(\d+ polls\): apply: 2 objects not ready: `+
		`Deployment\.apps `+ns+`/web: InProgress: Available: 0/1 \[Available=False \(MinimumReplicasUnavailable: Deployment does not have minimum availability\.\)\]; `+
		`Widget\.`+regexp.QuoteMeta(slow)+` `+ns+`/web: InProgress: waiting for 3 backends \[Ready=False \(Provisioning: waiting for 3 backends\)\]$`, err.Error())

	// A custom resource with a named condition.
	w := cv("widget", "v1.0", ns, fmt.Sprintf(crd, "widget", group)+"---\napiVersion: "+group+"/v1\nkind: Widget\nmetadata: {name: w1}\n",
		release.HealthCheck{Name: "widget-ready", Timeout: release.D(30 * time.Second), Interval: release.D(50 * time.Millisecond),
			Params: map[string]string{"kind": "Widget", "condition": "Ready=True"}})
	wg.Go(func() {
		// The widget controller's view: ready after a moment.
		time.Sleep(300 * time.Millisecond)
		setStatus(ctx, gvr(group, "v1", "widgets"), ns, "w1", func(*unstructured.Unstructured) map[string]any {
			return map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Done"}}}
		})
	})
	start := time.Now()
	require.NoError(t, m.Run(ctx, task(nil, w)))
	assert.Greater(t, time.Since(start), 250*time.Millisecond, "waited for the Ready condition")
}

// setStatus writes the status an object's controller would, computed from
// the object read: it tries until the object exists and the write
// succeeds, or ctx ends.
func setStatus(ctx context.Context, r schema.GroupVersionResource, ns, name string, status func(*unstructured.Unstructured) map[string]any) {
	ri := dyn.Resource(r).Namespace(ns)
	for ctx.Err() == nil {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			u.Object["status"] = status(u)
			if _, err = ri.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err == nil {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDryRun: a dry run reports created, configured, unchanged and pruned
// per object and changes nothing in the cluster, its inventories included.
func TestDryRun(t *testing.T) {
	ns := namespace(t)
	a, _ := newApplier(t, ns)
	ctx := context.Background()
	keep := "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: keep}\n"
	v1 := cv("app", "v1.0", ns, keep+"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {v: '1'}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: dropped}\n")
	v2 := cv("app", "v2.0", ns, keep+"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {v: '2'}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: added}\n",
		release.HealthCheck{Name: "never-checked", Params: map[string]string{"kind": "ConfigMap", "condition": "Ready=True"}})
	require.NoError(t, components.NewManifest(a, components.WithInstance(ns)).Run(ctx, task(nil, v1)))
	before := get(t, configmaps, ns, "cfg").GetResourceVersion()
	invBefore, err := a.Inventories(ctx, ns)
	require.NoError(t, err)

	dry, rec := newApplier(t, ns, apply.WithDryRun())
	require.NoError(t, components.NewManifest(dry, components.WithInstance(ns)).Run(ctx, task(v1, v2)))
	assert.Equal(t, []string{
		"ServiceAccount " + ns + "/keep unchanged (dry run)",
		"ConfigMap " + ns + "/cfg configured (dry run)",
		"ConfigMap " + ns + "/added created (dry run)",
		"ConfigMap " + ns + "/dropped pruned (dry run)",
	}, rec.take())
	assert.Equal(t, before, get(t, configmaps, ns, "cfg").GetResourceVersion(), "nothing written")
	assert.Nil(t, get(t, configmaps, ns, "added"))
	assert.True(t, live(t, configmaps, ns, "dropped"))
	invAfter, err := a.Inventories(ctx, ns)
	require.NoError(t, err)
	assert.Equal(t, invBefore, invAfter, "the inventory is not written")

	// The plan's dry run of a hop, component by component.
	g, err := dag.New([]dag.Node{{Name: "app", From: v1, To: v2}})
	require.NoError(t, err)
	ccs, err := apply.DryRunHop(ctx, cfg, &runner.HopPlan{Graph: g}, []components.ManifestOption{components.WithInstance(ns)}, apply.WithInventoryNamespace(ns))
	require.NoError(t, err)
	assert.Equal(t, "app v2.0\n"+
		"  ServiceAccount "+ns+"/keep unchanged (dry run)\n"+
		"  ConfigMap "+ns+"/cfg configured (dry run)\n"+
		"  ConfigMap "+ns+"/added created (dry run)\n"+
		"  ConfigMap "+ns+"/dropped pruned (dry run)\n", apply.FormatChanges(ccs))
	assert.Equal(t, before, get(t, configmaps, ns, "cfg").GetResourceVersion(), "nothing written")
}

// TestDryRunNamespace: under a dry run, an object in a namespace the same
// dry run creates is reported created, not checked by the server (which
// refuses content in a namespace that does not exist, or is being
// deleted); a namespace nothing creates is an error naming it. A later
// component of a hop's dry run sees the namespaces an earlier one
// (a dependency, whatever the names' order) dry-run-created.
func TestDryRunNamespace(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	nsObj := func(name string) string { return "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + name + "}\n" }
	const settings = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {v: '1'}\n"
	const note = " (its namespace is created by this dry run; not checked by the server) (dry run)"

	// A namespace being deleted: no namespace controller runs, so it stays
	// Terminating.
	terminating := ns + "-terminating"
	_, err := dyn.Resource(namespaces).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": terminating}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, dyn.Resource(namespaces).Delete(ctx, terminating, metav1.DeleteOptions{}))

	tests := []struct {
		name string
		// fresh is the namespace of the ConfigMap; withNS puts a Namespace
		// object for it in the component.
		fresh   string
		withNS  bool
		want    []string
		wantErr string
	}{
		{name: "created by the same apply", fresh: ns + "-fresh", withNS: true, want: []string{
			"Namespace " + ns + "-fresh created (dry run)",
			"ConfigMap " + ns + "-fresh/settings created" + note,
		}},
		{name: "being deleted, recreated by the same apply", fresh: terminating, withNS: true, want: []string{
			"Namespace " + terminating + " created (being deleted; recreated once gone) (dry run)",
			"ConfigMap " + terminating + "/settings created" + note,
		}},
		{name: "created by nothing", fresh: ns + "-missing",
			wantErr: `components: app v1.0: apply ConfigMap ` + ns + `-missing/settings: namespaces "` + ns + `-missing" not found; ` +
				`create namespace ` + ns + `-missing, or add a Namespace object for it to this component or to one it depends on`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl := settings
			if tt.withNS {
				tpl = nsObj(tt.fresh) + "---\n" + settings
			}
			dry, rec := newApplier(t, ns, apply.WithDryRun())
			err := components.NewManifest(dry, components.WithInstance(ns)).Run(ctx, task(nil, cv("app", "v1.0", tt.fresh, tpl)))
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.True(t, apierrors.IsNotFound(err), "apierrors.IsNotFound(%v) = false, want true", err)
				assert.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, rec.take())
			assert.Nil(t, get(t, configmaps, tt.fresh, "settings"), "nothing written")
		})
	}
	assert.Nil(t, get(t, namespaces, "", ns+"-fresh"), "nothing written")

	// The plan's dry run of a hop: "app" sorts before "namespaces", which it
	// depends on and which creates its namespace.
	fresh := ns + "-hop"
	g, err := dag.New([]dag.Node{
		{Name: "app", Deps: []string{"namespaces"}, To: cv("app", "v1.0", fresh, settings)},
		{Name: "namespaces", To: cv("namespaces", "v1.0", "", nsObj(fresh))},
	})
	require.NoError(t, err)
	mopts := []components.ManifestOption{components.WithInstance(ns)}
	ccs, err := apply.DryRunHop(ctx, cfg, &runner.HopPlan{Graph: g}, mopts, apply.WithInventoryNamespace(ns))
	require.NoError(t, err)
	assert.Equal(t, "namespaces v1.0\n"+
		"  Namespace "+fresh+" created (dry run)\n"+
		"app v1.0\n"+
		"  ConfigMap "+fresh+"/settings created"+note+"\n", apply.FormatChanges(ccs))
	assert.Nil(t, get(t, namespaces, "", fresh), "nothing written")

	// Without the namespaces component, the hop's dry run fails, naming the
	// component and the namespace.
	g, err = dag.New([]dag.Node{{Name: "app", To: cv("app", "v1.0", fresh, settings)}})
	require.NoError(t, err)
	_, err = apply.DryRunHop(ctx, cfg, &runner.HopPlan{Graph: g}, mopts, apply.WithInventoryNamespace(ns))
	assert.EqualError(t, err, `apply: dry run of app: components: app v1.0: apply ConfigMap `+fresh+`/settings: namespaces "`+fresh+`" not found; `+
		`create namespace `+fresh+`, or add a Namespace object for it to this component or to one it depends on`)
}
