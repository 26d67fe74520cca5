package components_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
)

// TestPruneKeepsCascadingOwners: a component that stops rendering its
// Namespace (or CRD) must not delete it while it holds another component's
// objects, since the delete would take them with it; what it does delete
// goes objects first, then CRDs, then Namespaces. The Recorder and the Dir
// applier both keep the rule (kube/apply's test is TestPruneNamespaceOfOthers).
func TestPruneKeepsCascadingOwners(t *testing.T) {
	ctx := context.Background()
	const (
		ns    = "apiVersion: v1\nkind: Namespace\nmetadata: {name: platform}\n"
		cmA   = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: platform}\n"
		cmB   = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: platform}\n"
		crd   = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec: {group: example.com, names: {kind: Widget, plural: widgets}, scope: Namespaced}\n"
		wB    = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: platform}\n"
		other = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: apps}\n"
	)
	appliers := []struct {
		name string
		new  func(t *testing.T, report func(components.Action)) (components.Applier, func() []string)
	}{
		{"Recorder", func(t *testing.T, report func(components.Action)) (components.Applier, func() []string) {
			r := components.NewRecorder(components.WithReporter(report))
			return r, func() []string {
				var out []string
				for _, o := range r.Live() {
					out = append(out, o.String())
				}
				return out
			}
		}},
		{"Dir", func(t *testing.T, report func(components.Action)) (components.Applier, func() []string) {
			root := t.TempDir()
			return components.NewDir(root, components.WithReporter(report)), func() []string { return listDir(t, root) }
		}},
	}
	cases := []struct {
		name          string
		a1, a2, b1    []string
		wantSkipped   string // the object the prune leaves, in the skip action
		wantReason    string
		wantLive      map[string]string // by applier: what must stay live (Recorder: the object; Dir: its file)
		wantDeleteSeq []string          // the deletes, in order
		wantNoSkip    bool
	}{
		{
			name:          "namespace that holds another component's object",
			a1:            []string{ns, cmA},
			b1:            []string{cmB},
			a2:            []string{other},
			wantSkipped:   "Namespace platform",
			wantReason:    "ConfigMap platform/b",
			wantLive:      map[string]string{"Recorder": "ConfigMap platform/b", "Dir": "platform/configmap_b.yaml"},
			wantDeleteSeq: []string{"ConfigMap platform/a"},
		},
		{
			name:          "CRD whose objects another component owns",
			a1:            []string{crd},
			b1:            []string{ns, wB},
			a2:            []string{other},
			wantSkipped:   "CustomResourceDefinition.apiextensions.k8s.io widgets.example.com",
			wantReason:    "Widget.example.com platform/w",
			wantLive:      map[string]string{"Recorder": "Widget platform/w", "Dir": "platform/widget.example.com_w.yaml"},
			wantDeleteSeq: nil,
		},
		{
			name:          "namespace of its own objects only: deleted after them",
			a1:            []string{ns, cmA},
			a2:            []string{other},
			wantNoSkip:    true,
			wantDeleteSeq: []string{"ConfigMap platform/a", "Namespace platform"},
		},
	}
	for _, ap := range appliers {
		for _, tc := range cases {
			t.Run(ap.name+"/"+tc.name, func(t *testing.T) {
				var mu sync.Mutex
				var acts []components.Action
				applier, live := ap.new(t, func(a components.Action) {
					mu.Lock()
					defer mu.Unlock()
					acts = append(acts, a)
				})
				m := components.NewManifest(applier, components.WithClusterScoped("CustomResourceDefinition.apiextensions.k8s.io"))
				a1 := manifestCV("a", "v1.0", tc.a1...)
				require.NoError(t, m.Run(ctx, task(nil, a1, nil)))
				if tc.b1 != nil {
					require.NoError(t, m.Run(ctx, task(nil, manifestCV("b", "v1.0", tc.b1...), nil)))
				}
				mu.Lock()
				acts = nil
				mu.Unlock()
				require.NoError(t, m.Run(ctx, task(a1, manifestCV("a", "v2.0", tc.a2...), nil)))

				var deletes, skips []string
				var reasons []string
				for _, a := range acts {
					switch a.Verb {
					case "delete":
						deletes = append(deletes, a.Object.Ref().String())
					case "skip":
						skips = append(skips, a.Object.Ref().String())
						reasons = append(reasons, a.Reason)
					}
				}
				assert.Equal(t, tc.wantDeleteSeq, deletes, "deletes, in order")
				if tc.wantNoSkip {
					assert.Empty(t, skips, "nothing is left in place")
					return
				}
				require.Equal(t, []string{tc.wantSkipped}, skips, "the prune leaves the cascading owner, saying so")
				assert.Contains(t, reasons[0], tc.wantReason, "the reason names what it holds")
				assert.Contains(t, reasons[0], `component "b"`, "and whose it is")
				assert.Contains(t, live(), tc.wantLive[ap.name], "b's object is live")
				assert.Contains(t, strings.Join(live(), "\n"), "platform", "the cascading owner is live too")
			})
		}
	}
}
