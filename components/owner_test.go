package components_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// store is an Applier of this package that keeps inventories: a Dir or a
// Recorder.
type store interface {
	components.Applier
	components.InventoryStore
}

// ownerApplier is an Applier under test, with a way to read back what it
// holds.
type ownerApplier struct {
	store
	// labels returns the labels of the live ConfigMap default/name, and
	// whether it is live.
	labels func(name string) (map[string]string, bool)
	// reported is what WithReporter was told, one Action a line.
	reported *[]string
	// dir is the Dir's directory ("" for a Recorder).
	dir string
}

// appliers makes each Applier of the package, with opts and a reporter.
var appliers = []struct {
	name string
	make func(t *testing.T, opts ...components.ApplierOption) ownerApplier
}{
	{"Dir", func(t *testing.T, opts ...components.ApplierOption) ownerApplier {
		dir := t.TempDir()
		var reported []string
		d := components.NewDir(dir, append(opts, components.WithReporter(func(a components.Action) { reported = append(reported, a.String()) }))...)
		return ownerApplier{store: d, reported: &reported, dir: dir, labels: func(name string) (map[string]string, bool) {
			data, err := os.ReadFile(filepath.Join(dir, "default", "configmap_"+name+".yaml"))
			if errors.Is(err, os.ErrNotExist) {
				return nil, false
			}
			require.NoError(t, err)
			var o struct {
				Metadata struct{ Labels map[string]string }
			}
			require.NoError(t, yaml.Unmarshal(data, &o), "file of %s", name)
			return o.Metadata.Labels, true
		}}
	}},
	{"Recorder", func(t *testing.T, opts ...components.ApplierOption) ownerApplier {
		var reported []string
		r := components.NewRecorder(append(opts, components.WithReporter(func(a components.Action) { reported = append(reported, a.String()) }))...)
		return ownerApplier{store: r, reported: &reported, labels: func(name string) (map[string]string, bool) {
			for _, o := range r.Live() {
				if o.Kind == "ConfigMap" && o.Namespace == "default" && o.Name == name {
					md, _ := o.Content["metadata"].(map[string]any)
					ls, _ := md["labels"].(map[string]any)
					if ls == nil {
						return nil, true
					}
					out := map[string]string{}
					for k, v := range ls {
						out[k] = v.(string)
					}
					return out, true
				}
			}
			return nil, false
		}}
	}},
}

// TestInstancesShareNothing is the defect end to end, through Manifests,
// with each Applier of the package: component x v1 renders ConfigMap
// default/shared-cm, v2 does not. Instance ia installs v1. Instance ib's
// install of v1 is refused, naming ia as the owner and the fixes, and
// leaves shared-cm as ia's; ib's upgrade to v2 then does not prune it, and
// ia's inventory still lists it. (Before the fix ib's install relabelled
// the file and its upgrade deleted it.) With WithTakeOver, ib takes it
// over, reported so, and ia's upgrade to v2 leaves it to ib.
func TestInstancesShareNothing(t *testing.T) {
	ctx := context.Background()
	v1 := manifestCV("x", "v1.0", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared-cm}\n")
	v2 := manifestCV("x", "v2.0", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x-{{ .Values.instance }}}\n")
	run := func(a components.Applier, instance string, from, to *release.ComponentVersion) error {
		m := components.NewManifest(a, components.WithInstance(instance), components.WithValues(map[string]any{"instance": instance}))
		return m.Run(ctx, task(from, to, nil))
	}
	inventory := func(t *testing.T, s store, instance string) []string {
		invs, err := s.Inventories(ctx, instance)
		require.NoError(t, err)
		require.Len(t, invs, 1, "inventories of %s", instance)
		var out []string
		for _, r := range invs[0].Objects {
			out = append(out, r.String())
		}
		return out
	}
	for _, ap := range appliers {
		t.Run(ap.name, func(t *testing.T) {
			a := ap.make(t)
			require.NoError(t, run(a, "ia", nil, v1))

			err := run(a, "ib", nil, v1)
			require.ErrorIs(t, err, components.ErrOwned)
			assert.True(t, runner.IsPermanent(err), "IsPermanent(%v) = false, want true: applying again changes nothing", err)
			assert.EqualError(t, err, `components: x v1.0: apply ConfigMap default/shared-cm: refused: it belongs to component "x" of instance "ia" `+
				`(its hopdag.io/component and hopdag.io/instance labels), not to "x" of "ib", and the prune of either would delete it from under the other; `+
				`give both installations the same instance (components.WithInstance; hopdag run --instance), or remove the object from one of the two components, `+
				`or take it over with components.WithTakeOver (the old owner's prune then leaves it)`)
			oe, ok := errors.AsType[*components.OwnerError](err)
			require.True(t, ok, "errors.AsType[*components.OwnerError](%v)", err)
			assert.Equal(t, components.OwnerError{Object: components.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "shared-cm"},
				Component: "x", Instance: "ib", OwnerComponent: "x", OwnerInstance: "ia"}, *oe)
			ls, live := a.labels("shared-cm")
			require.True(t, live)
			assert.Equal(t, components.OwnerLabels("ia", "x"), ls, "still ia's")

			require.NoError(t, run(a, "ib", v1, v2))
			ls, live = a.labels("shared-cm")
			require.True(t, live, "ib's prune left ia's object")
			assert.Equal(t, components.OwnerLabels("ia", "x"), ls)
			assert.Equal(t, []string{"ConfigMap default/shared-cm"}, inventory(t, a, "ia"))
			assert.Equal(t, []string{"ConfigMap default/x-ib"}, inventory(t, a, "ib"))
			assert.NotContains(t, *a.reported, "x v2.0: delete ConfigMap default/shared-cm")
		})
		t.Run(ap.name+", taken over", func(t *testing.T) {
			a := ap.make(t, components.WithTakeOver(true))
			require.NoError(t, run(a, "ia", nil, v1))
			require.NoError(t, run(a, "ib", nil, v1))
			ls, _ := a.labels("shared-cm")
			assert.Equal(t, components.OwnerLabels("ib", "x"), ls, "ib's now")
			require.NoError(t, run(a, "ia", v1, v2))
			ls, live := a.labels("shared-cm")
			require.True(t, live, "ia's prune left ib's object")
			assert.Equal(t, components.OwnerLabels("ib", "x"), ls)
			assert.Equal(t, []string{
				"x v1.0: apply ConfigMap default/shared-cm",
				`x v1.0: apply ConfigMap default/shared-cm (taken over from component "x" of instance "ia")`,
				"x v2.0: apply ConfigMap default/x-ia",
			}, *a.reported)
		})
	}
}

// labelledCM is ConfigMap default/name with data k: v and labels, its YAML
// rendered from its Content as Manifest renders it.
func labelledCM(t *testing.T, name, v string, labels map[string]string) components.Object {
	md := map[string]any{"name": name, "namespace": "default"}
	if labels != nil {
		ls := map[string]any{}
		for k, v := range labels {
			ls[k] = v
		}
		md["labels"] = ls
	}
	content := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": map[string]any{"k": v}}
	data, err := yaml.Marshal(content)
	require.NoError(t, err)
	return components.Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: name, Content: content, YAML: string(data)}
}

// TestApplyOwner: each Applier of the package checks, before it writes an
// object, the labels of the one that exists: another instance's or
// component's is refused with a runner.Permanent *OwnerError and left as
// it was, and Apply stops there (the object after it is not written);
// WithTakeOver takes it over; an unlabelled one is adopted; both are
// reported. An object without ownership labels is not checked.
func TestApplyOwner(t *testing.T) {
	ctx := context.Background()
	ia := components.OwnerLabels("ia", "x")
	tests := []struct {
		name string
		// existing is the labels of the object that exists (nil: none
		// exists; {}: one without labels).
		existing map[string]string
		labels   map[string]string // of the object to apply (nil: none)
		opts     []components.ApplierOption
		// wantReported is the report of the object, wantErr the error
		// after `apply ConfigMap default/cm: refused: `.
		wantReported string
		wantErr      string
		wantLabels   map[string]string
	}{
		{name: "new", labels: ia, wantReported: "apply ConfigMap default/cm", wantLabels: ia},
		{name: "same owner", existing: ia, labels: ia, wantReported: "apply ConfigMap default/cm", wantLabels: ia},
		{name: "other instance", existing: ia, labels: components.OwnerLabels("ib", "x"),
			wantErr: `it belongs to component "x" of instance "ia" (its hopdag.io/component and hopdag.io/instance labels), not to "x" of "ib", ` +
				`and the prune of either would delete it from under the other; ` +
				`give both installations the same instance (components.WithInstance; hopdag run --instance), or remove the object from one of the two components, ` +
				`or take it over with components.WithTakeOver (the old owner's prune then leaves it)`,
			wantLabels: ia},
		{name: "other component", existing: ia, labels: components.OwnerLabels("ia", "y"),
			wantErr: `it belongs to component "x" of instance "ia" (its hopdag.io/component and hopdag.io/instance labels), not to "y" of "ia", ` +
				`and the prune of either would delete it from under the other; ` +
				`remove the object from one of the two components (or render it in one both depend on), ` +
				`or take it over with components.WithTakeOver (the old owner's prune then leaves it)`,
			wantLabels: ia},
		{name: "instance label only", existing: map[string]string{components.LabelInstance: "ia"}, labels: components.OwnerLabels("ib", "x"),
			wantErr:    `it belongs to component "" of instance "ia" (its hopdag.io/component and hopdag.io/instance labels), not to "x" of "ib", and the prune of either would delete it from under the other; give both installations the same instance (components.WithInstance; hopdag run --instance), or remove the object from one of the two components, or take it over with components.WithTakeOver (the old owner's prune then leaves it)`,
			wantLabels: map[string]string{components.LabelInstance: "ia"}},
		{name: "other instance, take over off", existing: ia, labels: components.OwnerLabels("ib", "x"), opts: []components.ApplierOption{components.WithTakeOver(false)},
			wantErr: `it belongs to component "x" of instance "ia"`, wantLabels: ia},
		{name: "other instance, taken over", existing: ia, labels: components.OwnerLabels("ib", "x"), opts: []components.ApplierOption{components.WithTakeOver(true)},
			wantReported: `apply ConfigMap default/cm (taken over from component "x" of instance "ia")`, wantLabels: components.OwnerLabels("ib", "x")},
		{name: "unlabelled", existing: map[string]string{}, labels: ia,
			wantReported: "apply ConfigMap default/cm (adopted: it had no hopdag ownership labels)", wantLabels: ia},
		{name: "other labels only", existing: map[string]string{"team": "ops"}, labels: ia,
			wantReported: "apply ConfigMap default/cm (adopted: it had no hopdag ownership labels)", wantLabels: ia},
		{name: "no ownership labels to apply", existing: ia, wantReported: "apply ConfigMap default/cm"},
	}
	for _, ap := range appliers {
		for _, tt := range tests {
			t.Run(ap.name+"/"+tt.name, func(t *testing.T) {
				a := ap.make(t, tt.opts...)
				if tt.existing != nil {
					require.NoError(t, a.Apply(ctx, []components.Object{labelledCM(t, "cm", "before", tt.existing)}, components.ApplyOptions{}))
					*a.reported = nil
				}
				err := a.Apply(ctx, []components.Object{labelledCM(t, "cm", "applied", tt.labels), labelledCM(t, "after", "applied", tt.labels)}, components.ApplyOptions{})
				ls, live := a.labels("cm")
				require.True(t, live)
				assert.Equal(t, tt.wantLabels, ls)
				if tt.wantErr != "" {
					require.ErrorIs(t, err, components.ErrOwned)
					assert.ErrorContains(t, err, "apply ConfigMap default/cm: refused: "+tt.wantErr)
					assert.True(t, runner.IsPermanent(err), "IsPermanent(%v) = false, want true", err)
					oe, ok := errors.AsType[*components.OwnerError](err)
					require.True(t, ok)
					assert.Equal(t, components.OwnerError{Object: components.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "cm"},
						Component: tt.labels[components.LabelComponent], Instance: tt.labels[components.LabelInstance],
						OwnerComponent: tt.existing[components.LabelComponent], OwnerInstance: tt.existing[components.LabelInstance]}, *oe)
					assert.Empty(t, *a.reported)
					_, after := a.labels("after")
					assert.False(t, after, "Apply stops at the refused object")
					return
				}
				require.NoError(t, err)
				assert.Equal(t, []string{tt.wantReported, "apply ConfigMap default/after"}, *a.reported)
			})
		}
	}
}

// TestDirApplyOverBadFile: a file that is not YAML is refused when the
// object to write claims an owner (its owner cannot be told), naming the
// file and the fix, and overwritten when the object claims none, as
// before ownership was checked.
func TestDirApplyOverBadFile(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		labels  map[string]string
		wantErr string
	}{
		{"owned object", components.OwnerLabels("ia", "x"), "configmap_cm.yaml: yaml: "},
		{"unowned object", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "default", "configmap_cm.yaml")
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte("a: [\n"), 0o644))
			o := labelledCM(t, "cm", "applied", tt.labels)
			err := components.NewDir(dir).Apply(ctx, []components.Object{o}, components.ApplyOptions{})
			data, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.ErrorContains(t, err, tt.wantErr)
				assert.ErrorContains(t, err, "; fix or delete the file")
				assert.Equal(t, "a: [\n", string(data), "left as it was")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, o.YAML, string(data))
		})
	}
}

// TestCheckOwner is the decision every Applier of the module makes.
func TestCheckOwner(t *testing.T) {
	ia := components.OwnerLabels("ia", "x")
	o := labelledCM(t, "cm", "v", ia)
	tests := []struct {
		name       string
		o          components.Object
		existing   map[string]string
		takeOver   bool
		wantReason string
		wantOwner  [2]string // component and instance of the *OwnerError; zero: no error
	}{
		{name: "same owner", o: o, existing: ia},
		{name: "same owner, other labels differ", o: o, existing: map[string]string{components.LabelComponent: "x", components.LabelInstance: "ia", "team": "ops"}},
		{name: "nil labels", o: o, wantReason: "adopted: it had no hopdag ownership labels"},
		{name: "managed-by only", o: o, existing: map[string]string{components.LabelManagedBy: "hopdag"}, wantReason: "adopted: it had no hopdag ownership labels"},
		{name: "other instance", o: o, existing: components.OwnerLabels("ib", "x"), wantOwner: [2]string{"x", "ib"}},
		{name: "other component", o: o, existing: components.OwnerLabels("ia", "y"), wantOwner: [2]string{"y", "ia"}},
		{name: "component label only", o: o, existing: map[string]string{components.LabelComponent: "x"}, wantOwner: [2]string{"x", ""}},
		{name: "other instance, take over", o: o, existing: components.OwnerLabels("ib", "y"), takeOver: true, wantReason: `taken over from component "y" of instance "ib"`},
		{name: "unlabelled, take over", o: o, existing: map[string]string{}, takeOver: true, wantReason: "adopted: it had no hopdag ownership labels"},
		{name: "object claims no owner", o: labelledCM(t, "cm", "v", nil), existing: components.OwnerLabels("ib", "x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, err := components.CheckOwner(tt.o, tt.existing, tt.takeOver)
			assert.Equal(t, tt.wantReason, reason, "CheckOwner reason")
			if tt.wantOwner == [2]string{} {
				assert.NoError(t, err)
				return
			}
			oe, ok := errors.AsType[*components.OwnerError](err)
			require.True(t, ok, "CheckOwner err = %v, want an *OwnerError", err)
			assert.True(t, runner.IsPermanent(err), "IsPermanent(%v) = false, want true", err)
			assert.Equal(t, components.OwnerError{Object: o.Ref(), Component: "x", Instance: "ia",
				OwnerComponent: tt.wantOwner[0], OwnerInstance: tt.wantOwner[1]}, *oe)
		})
	}
}

// TestOwnerErrorTakeOver: the message names TakeOver as the way to take
// the object over, this package's option by default.
func TestOwnerErrorTakeOver(t *testing.T) {
	for _, tt := range []struct{ takeOver, want string }{
		{"", "or take it over with components.WithTakeOver (the old owner's prune then leaves it)"},
		{"hopdag run --take-over", "or take it over with hopdag run --take-over (the old owner's prune then leaves it)"},
	} {
		err := &components.OwnerError{Object: components.Ref{Version: "v1", Kind: "ConfigMap", Name: "c", Namespace: "n"},
			Component: "x", Instance: "ib", OwnerComponent: "x", OwnerInstance: "ia", TakeOver: tt.takeOver}
		assert.ErrorContains(t, err, tt.want, "OwnerError{TakeOver: %q}", tt.takeOver)
	}
}
