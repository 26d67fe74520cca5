package bundle_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// helmCatalog is testdata/catalog changed the ways a bundle must keep: its
// upgrade path in UPGRADEPATH.YAML (Load reads any case), a .github/
// directory Load skips, and two helm components naming local charts: a
// chart directory (its templates, a .tpl helper and a .helmignore are not
// catalog documents, and Load skips it) and a chart archive. It returns the
// directory and the files a bundle of it must hold beyond the originals.
func helmCatalog(t *testing.T) (dir string, added []string) {
	t.Helper()
	dir = copyDir(t, catalogDir)
	require.NoError(t, os.Rename(filepath.Join(dir, "upgradepath.yaml"), filepath.Join(dir, "UPGRADEPATH.YAML")))
	write := func(name, data string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	// Not catalog documents and not named by one: left out.
	write(".github/ci.yml", "on: push\njobs: {test: {runs-on: ubuntu-latest}}\n")
	write(".hidden.yaml", "kind: NotACatalogDocument\n")
	write("notes.txt", "release notes\n")

	chart := map[string]string{
		"charts/app/Chart.yaml":             "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"charts/app/values.yaml":            "greeting: hi\n",
		"charts/app/.helmignore":            "*.bak\n",
		"charts/app/README.md":              "# app\n",
		"charts/app/templates/_helpers.tpl": "{{- define \"app.name\" -}}app{{- end -}}\n",
		"charts/app/templates/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ include \"app.name\" . }}}\ndata: {g: {{ .Values.greeting | quote }}}\n",
		"charts/app/templates/NOTES.txt":    "installed {{ .Release.Name }}\n",
		"charts/app/charts/sub/Chart.yaml":  "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/app/charts/sub/values.yaml": "x: 1\n",
		"charts/db-0.2.0.tgz":               "not really gzip, but a file the chart path names\n",
		"components/app.yaml":               helmComponent("app", "charts/app") + "---\n" + helmComponent("db", "./charts/db-0.2.0.tgz"),
		"components/remote.yml":             "apiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata: {name: remote}\nspec:\n  name: remote\n  version: v1.0\n  type: helm\n  helm: {chart: oci://registry.example/charts/remote, version: 1.0.0}\n",
		"charts/unnamed/Chart.yaml":         "apiVersion: v2\nname: unnamed\nversion: 0.1.0\n",
		"charts/unnamed/templates/_x.tpl":   "{{/* a chart no component names is still a chart Load skipped */}}\n",
	}
	for name, data := range chart {
		write(name, data)
		added = append(added, name)
	}
	return dir, added
}

func helmComponent(name, chart string) string {
	return "apiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata: {name: " + name + "}\nspec:\n  name: " + name +
		"\n  version: v1.0\n  type: helm\n  helm: {chart: " + chart + ", version: 0.1.0}\n"
}

// withoutSources is c's documents with their Source (file and line)
// cleared: what a pulled catalog must equal.
func withoutSources(c *release.Catalog) ([]release.Release, []release.ComponentVersion, []release.UpgradePath) {
	rs, cs, ps := slices.Clone(c.Releases), slices.Clone(c.Components), slices.Clone(c.Paths)
	for i := range rs {
		rs[i].Source = release.Source{}
	}
	for i := range cs {
		cs[i].Source = release.Source{}
	}
	for i := range ps {
		ps[i].Source = release.Source{}
		ps[i].Rules = slices.Clone(ps[i].Rules)
		for j := range ps[i].Rules {
			ps[i].Rules[j].Source = release.Source{}
		}
	}
	return rs, cs, ps
}

// A bundle holds the files Load validated, not others: documents of any
// extension case, not hidden files or directories, and every file of the
// local Helm charts (a chart directory whole, hidden files included, since
// Helm reads .helmignore; a chart archive a component names), so that the
// pulled directory is the same catalog with working charts.
func TestPushPacksWhatLoadReads(t *testing.T) {
	ctx := context.Background()
	dir, added := helmCatalog(t)
	var want []string
	require.NoError(t, fs.WalkDir(os.DirFS(catalogDir), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if p == "upgradepath.yaml" {
				p = "UPGRADEPATH.YAML"
			}
			want = append(want, p)
		}
		return err
	}))
	want = append(want, added...)
	slices.Sort(want)

	src, err := release.LoadDir(dir)
	require.NoError(t, err, "the changed catalog is valid")
	ref := "oci-layout://" + filepath.Join(t.TempDir(), "layout") + ":v1"
	pushed, err := client(t).Push(ctx, dir, ref)
	require.NoError(t, err, "Push")
	assert.Equal(t, want, pushed.Files, "Pushed.Files")

	b, err := client(t).Pull(ctx, ref)
	require.NoError(t, err, "Pull")
	var got []string
	require.NoError(t, fs.WalkDir(b.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			got = append(got, p)
		}
		return err
	}))
	assert.Equal(t, want, got, "the pulled files")
	for _, f := range got {
		data, err := fs.ReadFile(b.Files, f)
		require.NoError(t, err)
		orig, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		require.NoError(t, err)
		assert.Equal(t, string(orig), string(data), "%s is byte-identical after pull", f)
	}

	wr, wc, wp := withoutSources(src)
	gr, gc, gp := withoutSources(b.Catalog)
	assert.Equal(t, wr, gr, "releases pulled vs loaded from the directory")
	assert.Equal(t, wc, gc, "component versions pulled vs loaded from the directory")
	assert.Equal(t, wp, gp, "upgrade paths pulled vs loaded from the directory")
	assert.Equal(t, planOf(t, src).String(), planOf(t, b.Catalog).String(), "a plan from the bundle (UPGRADEPATH.YAML packed)")

	// The pulled directory is the same catalog again.
	out := t.TempDir()
	require.NoError(t, os.CopyFS(out, b.Files))
	again, err := release.LoadDir(out)
	require.NoError(t, err, "LoadDir of the pulled directory")
	ar, ac, ap := withoutSources(again)
	assert.Equal(t, wr, ar)
	assert.Equal(t, wc, ac)
	assert.Equal(t, wp, ap)
}

// A local chart a helm component names must be in the catalog directory
// (a bundle without it would hold a catalog whose chart is gone), and a
// chart is regular files (a link to a directory cannot be packed).
func TestPushRefusesChartsItCannotHold(t *testing.T) {
	linkToDir := func(t *testing.T, dir string) {
		chart := filepath.Join(dir, "charts", "app")
		require.NoError(t, os.MkdirAll(filepath.Join(chart, "templates"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: app\nversion: 0.1.0\n"), 0o644))
		require.NoError(t, os.Symlink(filepath.Join(dir, "manifests"), filepath.Join(chart, "templates", "more")))
	}
	for _, tc := range []struct {
		name, chart string
		setup       func(t *testing.T, dir string)
		want        string
	}{
		// The loader refuses a chart that is not there (Push loads first).
		{"missing directory", "charts/nope", nil, "spec.helm.chart: helm chart charts/nope does not exist"},
		{"missing archive", "charts/nope-1.0.0.tgz", nil, "spec.helm.chart: helm chart charts/nope-1.0.0.tgz does not exist"},
		{"outside the catalog", "../charts/app", nil, "app@v1.0: helm chart ../charts/app is outside the catalog directory"},
		{"link to a directory", "charts/app", linkToDir, "charts/app/templates/more is a symbolic link to a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, catalogDir)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "components", "app.yaml"), []byte(helmComponent("app", tc.chart)), 0o644))
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			if _, err := release.LoadDir(dir); strings.HasPrefix(tc.want, "spec.") {
				require.ErrorContains(t, err, tc.want, "Load")
			} else {
				require.NoError(t, err, "Load finds the chart; only a bundle cannot hold it")
			}
			layout := filepath.Join(t.TempDir(), "layout")
			_, err := client(t).Push(context.Background(), dir, "oci-layout://"+layout+":v1")
			assert.ErrorContains(t, err, tc.want, "Push")
			_, statErr := os.Stat(layout)
			assert.ErrorIs(t, statErr, os.ErrNotExist, "nothing was written")
		})
	}
}

// A link to a file in a chart is packed as the file it points to.
func TestPushFollowsLinkToFileInChart(t *testing.T) {
	ctx := context.Background()
	dir := copyDir(t, catalogDir)
	chart := filepath.Join(dir, "charts", "app")
	require.NoError(t, os.MkdirAll(filepath.Join(chart, "templates"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: app\nversion: 0.1.0\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(dir, "manifests", "coredns.yaml"), filepath.Join(chart, "templates", "coredns.yaml")))
	ref := "oci-layout://" + filepath.Join(t.TempDir(), "layout") + ":v1"
	_, err := client(t).Push(ctx, dir, ref)
	require.NoError(t, err, "Push")
	b, err := client(t).Pull(ctx, ref)
	require.NoError(t, err, "Pull")
	got, err := fs.ReadFile(b.Files, "charts/app/templates/coredns.yaml")
	require.NoError(t, err, "the link is in the bundle")
	want, err := os.ReadFile(filepath.Join(dir, "manifests", "coredns.yaml"))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "the link's target")
}
