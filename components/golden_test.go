package components_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// goldenRoutes are the routes of testdata/catalog the golden files cover:
// two rc hops, and the v26.09 hop where metrics-server v0.8.0 drops a
// ConfigMap that v0.7.2 rendered.
var goldenRoutes = [][2]string{
	{"v26.03", "v26.06"},
	{"v26.06-rc.2", "v26.06"},
	{"v26.06", "v26.09"},
}

func planOf(t *testing.T, c *release.Catalog, from, to string, opts ...runner.PlanOption) *runner.Plan {
	t.Helper()
	p, err := runner.NewPlan(c, path.State{"": release.MustParseVersion(from)}, path.State{"": release.MustParseVersion(to)}, opts...)
	require.NoError(t, err)
	return p
}

// TestGoldenRender renders every manifest component of every hop of the
// golden routes, and what Run would prune, against testdata/render/.
func TestGoldenRender(t *testing.T) {
	c := loadCatalog(t)
	m := components.NewManifest(components.NewRecorder(), components.WithValues(testValues))
	for _, route := range goldenRoutes {
		p := planOf(t, c, route[0], route[1])
		for _, h := range p.Hops {
			name := h.From.Original() + "_" + h.To.Original()
			t.Run(name, func(t *testing.T) {
				var b strings.Builder
				fmt.Fprintf(&b, "# hop %s, values %v\n", h.Name(), testValues)
				for i := range h.Graph.Len() {
					n := h.Graph.Node(i)
					if n.To.Type != release.TypeManifest {
						continue
					}
					objs, err := m.Render(runner.Task{Hop: h, Component: n.Name, From: n.From, To: n.To})
					require.NoError(t, err, n.Name)
					from := "(new)"
					if n.From != nil {
						from = n.From.Version.Original()
					}
					fmt.Fprintf(&b, "\n# ===== %s %s -> %s: %d objects\n", n.Name, from, n.To.Version, len(objs))
					b.WriteString(stream(objs))

					again, err := m.Render(runner.Task{Hop: h, Component: n.Name, From: n.From, To: n.To})
					require.NoError(t, err)
					assert.Equal(t, objs, again, "a second render differs")
				}
				golden(t, filepath.Join("render", name+".yaml"), []byte(b.String()))
			})
		}
	}
}

// TestGoldenRun executes the golden routes with a Recorder and compares its
// log (grouped by component, in each component's order) and the live
// objects with testdata/run/.
func TestGoldenRun(t *testing.T) {
	c := loadCatalog(t)
	for _, route := range goldenRoutes {
		name := route[0] + "_" + route[1]
		t.Run(name, func(t *testing.T) {
			rec := components.NewRecorder()
			inline := components.NewInline()
			for _, h := range []string{"bkeagent", "containerd", "etcd", "kubernetes-master", "kubernetes-worker"} {
				inline.Register(h, noop)
			}
			router := components.NewRouter().
				Register(release.TypeInline, inline).
				Register(release.TypeManifest, components.NewManifest(rec, components.WithValues(testValues)))
			exec := runner.New(router, runner.WithCheck("cluster-healthy", okCheck), runner.WithCheck("etcd-backup", okCheck),
				runner.WithCheck("nodes-ready", okCheck), runner.WithCheck("registry-mirror-reachable", okCheck),
				runner.WithCheck("conformance-smoke", okCheck))
			p := planOf(t, c, route[0], route[1], runner.ForExecutor(exec))
			status, err := exec.Execute(context.Background(), p, nil)
			require.NoError(t, err)
			assert.Equal(t, record.Succeeded, status.Phase)

			var b strings.Builder
			fmt.Fprintf(&b, "# %s -> %s, hops: %d, values %v\n# actions, grouped by component\n", route[0], route[1], len(p.Hops), testValues)
			log := actions(rec)
			slices.SortStableFunc(log, func(a, b string) int {
				return strings.Compare(strings.SplitN(a, " ", 2)[0], strings.SplitN(b, " ", 2)[0])
			})
			for _, a := range log {
				b.WriteString(a + "\n")
			}
			b.WriteString("# live objects\n")
			for _, o := range rec.Live() {
				fmt.Fprintf(&b, "%s (%s %s)\n", o, o.Component, o.Version)
			}
			golden(t, filepath.Join("run", name+".txt"), []byte(b.String()))
		})
	}
}

func okCheck(context.Context, runner.CheckTask) error { return nil }

// TestGoldenDir executes the v26.06 -> v26.09 hop through a Dir, after
// v26.06's objects were written, and compares the directory (names and
// contents) with testdata/dir/.
func TestGoldenDir(t *testing.T) {
	c := loadCatalog(t)
	root := t.TempDir()
	d := components.NewDir(root)
	m := components.NewManifest(d, components.WithValues(testValues))
	p := planOf(t, c, "v26.06", "v26.09")
	require.Len(t, p.Hops, 1)
	h := p.Hops[0]
	for i := range h.Graph.Len() {
		n := h.Graph.Node(i)
		if n.To.Type != release.TypeManifest || n.From == nil {
			continue
		}
		// The state before the hop: the previous version, applied through
		// the Manifest so that the Dir holds its inventory.
		require.NoError(t, m.Run(context.Background(), runner.Task{Hop: h, Component: n.Name, To: n.From}))
	}
	before := listDir(t, root)
	assert.Contains(t, before, "kube-system/configmap_metrics-server-config.yaml")
	for i := range h.Graph.Len() {
		n := h.Graph.Node(i)
		if n.To.Type != release.TypeManifest {
			continue
		}
		require.NoError(t, m.Run(context.Background(), runner.Task{Hop: h, Component: n.Name, From: n.From, To: n.To}))
	}
	after := listDir(t, root)
	assert.NotContains(t, after, "kube-system/configmap_metrics-server-config.yaml", "the ConfigMap v0.8.0 dropped is pruned")

	var b strings.Builder
	for _, f := range after {
		data, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		fmt.Fprintf(&b, "==> %s <==\n%s", f, data)
	}
	golden(t, filepath.Join("dir", "v26.06_v26.09.txt"), []byte(b.String()))
}

// listDir lists the files under root, slash-separated and sorted.
func listDir(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	require.NoError(t, filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		files = append(files, filepath.ToSlash(rel))
		return err
	}))
	return files
}
