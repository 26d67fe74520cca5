package apply_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/apply"
	"github.com/hopdag/hopdag/runner"
)

// ownedConfigMap is a ConfigMap to apply, labelled as component of
// instance as Manifest labels it (no labels when component is "").
func ownedConfigMap(ns, name, component, instance string) components.Object {
	md := map[string]any{"name": name, "namespace": ns}
	if component != "" {
		ls := map[string]any{}
		for k, v := range components.OwnerLabels(instance, component) {
			ls[k] = v
		}
		md["labels"] = ls
	}
	return components.Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name,
		Content: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": map[string]any{"k": "applied"}}}
}

// createConfigMap creates a ConfigMap as another client would (kubectl
// create), with labels.
func createConfigMap(t *testing.T, ns, name string, labels map[string]string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"k": "before"}}}
	u.SetLabels(labels)
	_, err := dyn.Resource(configmaps).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{FieldManager: "kubectl-create"})
	require.NoError(t, err)
}

// TestOwnerApply: an apply over an object that exists labelled as another
// instance's or another component's is refused with an *OwnerError naming
// the object, its owner and the fixes, and writes nothing; WithTakeOver
// takes it over, visibly; an object nobody's labels claim (created by
// kubectl) is adopted, visibly, in a dry run too; an object to apply
// without ownership labels is not checked. Every apply is forced
// (kubectl-create owns .data.k): Force settles fields, not owners.
func TestOwnerApply(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	theirs := components.OwnerLabels("ia", "x")
	tests := []struct {
		name string
		live map[string]string // nil: the object does not exist
		// apply is the component and instance that apply ("" component:
		// an object without ownership labels).
		component, instance string
		opts                []apply.Option
		want                string // the Change, after "ConfigMap ns/name "
		wantErr             string // after "apply: ConfigMap ns/name "
		wantLabels          map[string]string
	}{
		{name: "new", component: "x", instance: "ia", want: "created", wantLabels: theirs},
		{name: "same owner", live: theirs, component: "x", instance: "ia", want: "configured", wantLabels: theirs},
		{name: "other instance", live: theirs, component: "x", instance: "ib",
			wantErr: `refused: it belongs to component "x" of instance "ia" (its hopdag.io/component and hopdag.io/instance labels), not to "x" of "ib", ` +
				`and the prune of either would delete it from under the other; ` +
				`give both installations the same instance (components.WithInstance; hopdag run --instance), or remove the object from one of the two components, ` +
				`or take it over with apply.WithTakeOver (the old owner's prune then leaves it)`,
			wantLabels: theirs},
		{name: "other component", live: theirs, component: "y", instance: "ia",
			wantErr: `refused: it belongs to component "x" of instance "ia" (its hopdag.io/component and hopdag.io/instance labels), not to "y" of "ia", ` +
				`and the prune of either would delete it from under the other; ` +
				`remove the object from one of the two components (or render it in one both depend on), ` +
				`or take it over with apply.WithTakeOver (the old owner's prune then leaves it)`,
			wantLabels: theirs},
		{name: "instance label only", live: map[string]string{components.LabelInstance: "ia"}, component: "x", instance: "ib",
			wantErr: `refused: it belongs to component "" of instance "ia"`, wantLabels: map[string]string{components.LabelInstance: "ia"}},
		{name: "other instance, dry run", live: theirs, component: "x", instance: "ib", opts: []apply.Option{apply.WithDryRun()},
			wantErr: `refused: it belongs to component "x" of instance "ia"`, wantLabels: theirs},
		{name: "other instance, taken over", live: theirs, component: "x", instance: "ib", opts: []apply.Option{apply.WithTakeOver(true)},
			want: `configured (taken over from component "x" of instance "ia")`, wantLabels: components.OwnerLabels("ib", "x")},
		{name: "other instance, dry run taken over", live: theirs, component: "x", instance: "ib", opts: []apply.Option{apply.WithDryRun(), apply.WithTakeOver(true)},
			want: `configured (taken over from component "x" of instance "ia") (dry run)`, wantLabels: theirs},
		{name: "unlabelled", live: map[string]string{"team": "ops"}, component: "x", instance: "ib",
			want:       "configured (adopted: it had no hopdag ownership labels)",
			wantLabels: map[string]string{"team": "ops", components.LabelComponent: "x", components.LabelInstance: "ib", components.LabelManagedBy: "hopdag"}},
		{name: "unlabelled, dry run", live: map[string]string{}, component: "x", instance: "ib", opts: []apply.Option{apply.WithDryRun()},
			want: "configured (adopted: it had no hopdag ownership labels) (dry run)", wantLabels: nil},
		{name: "no ownership labels to apply", live: theirs, want: "configured", wantLabels: theirs},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "cm-" + string(rune('a'+i))
			if tt.live != nil {
				createConfigMap(t, ns, name, tt.live)
			}
			a, err := apply.New(cfg, tt.opts...)
			require.NoError(t, err)
			cs, err := a.ApplyAll(ctx, []components.Object{ownedConfigMap(ns, name, tt.component, tt.instance)}, components.ApplyOptions{Force: true})
			obj := "ConfigMap " + ns + "/" + name
			if tt.wantErr != "" {
				require.ErrorIs(t, err, apply.ErrOwned)
				assert.ErrorContains(t, err, "apply "+obj+": "+tt.wantErr)
				assert.True(t, runner.IsPermanent(err), "IsPermanent(%v) = false, want true: applying again changes nothing", err)
				oe, ok := errors.AsType[*apply.OwnerError](err)
				require.True(t, ok)
				assert.Equal(t, apply.OwnerError{Object: oe.Object, Component: tt.component, Instance: tt.instance,
					OwnerComponent: tt.live[components.LabelComponent], OwnerInstance: tt.live[components.LabelInstance]}, *oe)
				assert.Empty(t, cs)
				assert.Equal(t, "before", get(t, configmaps, ns, name).Object["data"].(map[string]any)["k"], "nothing written")
			} else {
				require.NoError(t, err)
				assert.Equal(t, []string{obj + " " + tt.want}, changeStrings(cs))
			}
			u := get(t, configmaps, ns, name)
			require.NotNil(t, u)
			labels := u.GetLabels()
			if len(labels) == 0 {
				labels = nil
			}
			assert.Equal(t, tt.wantLabels, labels)
		})
	}
}

// TestInstancesShareNothing is the tester's case end to end, through
// Manifests: component x v1 renders ConfigMap shared-cm, v2 does not.
// Instance ia installs v1; instance ib's install of v1 is refused, naming
// ia as the owner, and leaves shared-cm as ia's; ib's upgrade to v2 then
// does not prune it (it is ia's), and ia's inventory still lists it. A
// plan's dry run of ib shows the refusal before anything runs. Taken over
// explicitly (WithTakeOver), the object is ib's, and ia's upgrade to v2
// leaves it in place.
func TestInstancesShareNothing(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	ia, ib := ns+"-ia", ns+"-ib"
	const shared = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared-cm}\ndata: {v: '1'}\n"
	v1 := cv("x", "v1.0", ns, shared)
	v2 := cv("x", "v2.0", ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x-{{ .Values.instance }}}\n")
	a, rec := newApplier(t, ns)
	manifest := func(a *apply.Applier, instance string) *components.Manifest {
		return components.NewManifest(a, components.WithInstance(instance), components.WithValues(map[string]any{"instance": instance}))
	}

	require.NoError(t, manifest(a, ia).Run(ctx, task(nil, v1)))
	assert.Equal(t, []string{"ConfigMap " + ns + "/shared-cm created"}, rec.take())

	dry, drec := newApplier(t, ns, apply.WithDryRun())
	err := manifest(dry, ib).Run(ctx, task(nil, v1))
	require.ErrorIs(t, err, apply.ErrOwned, "the dry run shows the refusal")
	assert.Empty(t, drec.take())

	err = manifest(a, ib).Run(ctx, task(nil, v1))
	require.ErrorIs(t, err, apply.ErrOwned)
	assert.True(t, runner.IsPermanent(err), "IsPermanent(%v) = false, want true", err)
	assert.ErrorContains(t, err, `components: x v1.0: apply ConfigMap `+ns+`/shared-cm: refused: it belongs to component "x" of instance "`+ia+`"`)
	assert.Empty(t, rec.take())
	assert.Equal(t, components.OwnerLabels(ia, "x"), get(t, configmaps, ns, "shared-cm").GetLabels(), "still ia's")

	require.NoError(t, manifest(a, ib).Run(ctx, task(v1, v2)))
	assert.Equal(t, []string{
		"ConfigMap " + ns + "/x-" + ib + " created",
		"ConfigMap " + ns + `/shared-cm skipped (labelled as component "x" of instance "` + ia + `", not "x" of "` + ib + `")`,
	}, rec.take())
	assert.True(t, live(t, configmaps, ns, "shared-cm"), "ib's prune left ia's object")
	inv, ok := inventory(t, a, ia, "x")
	require.True(t, ok)
	assert.Equal(t, []string{"ConfigMap " + ns + "/shared-cm"}, refStrings(inv.Objects))

	// ib takes it over explicitly (as a fresh install of v1): ia's upgrade
	// to v2 then leaves it to ib.
	taker, trec := newApplier(t, ns, apply.WithTakeOver(true))
	require.NoError(t, manifest(taker, ib).Run(ctx, task(nil, v1)))
	assert.Equal(t, []string{
		"ConfigMap " + ns + `/shared-cm configured (taken over from component "x" of instance "` + ia + `")`,
		"ConfigMap " + ns + "/x-" + ib + " pruned",
	}, trec.take())
	require.NoError(t, manifest(a, ia).Run(ctx, task(v1, v2)))
	assert.Equal(t, []string{
		"ConfigMap " + ns + "/x-" + ia + " created",
		"ConfigMap " + ns + `/shared-cm skipped (labelled as component "x" of instance "` + ib + `", not "x" of "` + ia + `")`,
	}, rec.take())
	assert.Equal(t, components.OwnerLabels(ib, "x"), get(t, configmaps, ns, "shared-cm").GetLabels())
}
