package catalog_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/catalog"
	"github.com/hopdag/hopdag/release"
)

const catalogDir = "../../testdata/catalog"

// TestObjectsLoadTheSameCatalog reads testdata/catalog as objects and
// checks that the catalog they load is the one the file loader gives,
// but for where each part came from.
func TestObjectsLoadTheSameCatalog(t *testing.T) {
	want, err := release.LoadDir(catalogDir)
	require.NoError(t, err)
	objs, err := catalog.ReadDir(catalogDir)
	require.NoError(t, err)
	require.NotEmpty(t, objs.Releases)

	_, err = objs.Catalog()
	require.ErrorIs(t, err, release.ErrInvalidCatalog, "manifest files are not in the cluster: loading without WithManifests fails")
	assert.Contains(t, err.Error(), "ComponentVersion/calico-v3.28.2: spec.manifests[0].file: manifest file manifests/calico.yaml does not exist")

	got, err := objs.Catalog(catalog.WithManifests(os.DirFS(catalogDir)))
	require.NoError(t, err)
	strip := func(c *release.Catalog) {
		for i := range c.Releases {
			c.Releases[i].Source = release.Source{}
		}
		for i := range c.Components {
			c.Components[i].Source = release.Source{}
		}
		for i := range c.Paths {
			c.Paths[i].Source = release.Source{}
			for j := range c.Paths[i].Rules {
				c.Paths[i].Rules[j].Source = release.Source{}
			}
		}
	}
	cv, ok := got.Component("etcd", release.MustParseVersion("v3.5.21"))
	require.True(t, ok)
	assert.Equal(t, release.Source{File: "ComponentVersion/etcd-v3.5.21"}, cv.Source, "a component's source names its object")
	assert.Equal(t, "UpgradePath/openfuyao-upgrade-paths", got.Paths[0].Rules[0].Source.File, "a rule's source names its object")
	strip(want)
	strip(got)
	assert.Equal(t, want.Releases, got.Releases)
	assert.Equal(t, want.Components, got.Components)
	assert.Equal(t, want.Paths, got.Paths)
}

// TestInvalidCatalogsSameProblems loads every case of testdata/invalid that
// a cluster can hold through both loaders: the problems are the same, but
// each names its object (Kind/name) instead of file:line.
func TestInvalidCatalogsSameProblems(t *testing.T) {
	dirs, err := filepath.Glob("../../testdata/invalid/*")
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	loaded := 0
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs, err := catalog.ReadDir(dir)
			if errors.Is(err, catalog.ErrNotObjects) {
				t.Skipf("no cluster can hold this catalog (the API server refuses it): %v", err)
			}
			require.NoError(t, err)
			if dupNames(objs) {
				t.Skip("two objects of one kind with one name: a cluster holds one")
			}
			loaded++
			_, ferr := release.LoadDir(dir)
			require.Error(t, ferr)
			_, oerr := objs.Catalog(catalog.WithManifests(os.DirFS(dir)))
			require.ErrorIs(t, oerr, release.ErrInvalidCatalog)
			var fle, ole *release.LoadError
			require.ErrorAs(t, ferr, &fle)
			require.ErrorAs(t, oerr, &ole)
			type key struct{ field, msg, fix string }
			keys := func(ps []release.Problem) map[key]int {
				out := map[key]int{}
				for _, p := range ps {
					out[key{p.Field, where.ReplaceAllString(p.Message, "AT"), where.ReplaceAllString(p.Fix, "AT")}]++
				}
				return out
			}
			assert.Equal(t, keys(fle.Problems), keys(ole.Problems), "the same problems, whatever the loader\nfile loader:\n%v\nobject loader:\n%v", ferr, oerr)
			for _, p := range ole.Problems {
				assert.Regexp(t, `^(Release|ComponentVersion|UpgradePath)/[a-z0-9.-]+$`, p.File, "problem %q names its object", p)
				assert.Zero(t, p.Line, "problem %q has no line: objects have none", p)
				assert.NotRegexp(t, `\.yaml:[0-9]|(Release|ComponentVersion|UpgradePath)/\S*\.yaml`, p.Error(), "problem %q names no file and no line", p)
			}
		})
	}
	assert.Positive(t, loaded, "no invalid case could be loaded as objects")
}

// where matches the location inside "(first at ...)" style messages, which
// differs by loader by design.
var where = regexp.MustCompile(`([^\s(]+\.yaml:\d+|(Release|ComponentVersion|UpgradePath)/[a-z0-9.-]+)`)

func dupNames(o *catalog.Objects) bool {
	seen := map[string]bool{}
	check := func(kind, name string) bool {
		k := kind + "/" + name
		dup := seen[k]
		seen[k] = true
		return dup
	}
	dup := false
	for _, r := range o.Releases {
		dup = check("Release", r.Name) || dup
	}
	for _, c := range o.Components {
		dup = check("ComponentVersion", c.Name) || dup
	}
	for _, p := range o.UpgradePaths {
		dup = check("UpgradePath", p.Name) || dup
	}
	return dup
}

// TestProblemNamesObjectAndField is the case the issue names: a bad
// version in an object is reported at Kind/name and the field path, and
// the object's other fields are still checked (its dependency the release
// does not ship), naming it too.
func TestProblemNamesObjectAndField(t *testing.T) {
	objs := &catalog.Objects{
		Releases: []v1alpha1.Release{{Spec: v1alpha1.ReleaseSpec{Version: "v1.0", Components: []v1alpha1.ComponentRef{{Name: "etcd", Version: "v3.5.0"}}}}},
		Components: []v1alpha1.ComponentVersion{
			{Spec: v1alpha1.ComponentVersionSpec{Name: "etcd", Version: "v3.5.0", Type: "inline", Handler: "etcd", Timeout: "ten minutes", Dependencies: []string{"kube"}}},
		},
	}
	objs.Releases[0].Name = "r-v1.0"
	objs.Components[0].Name = "etcd-v3.5.0"
	_, err := objs.Catalog()
	require.ErrorIs(t, err, release.ErrInvalidCatalog)
	var le *release.LoadError
	require.ErrorAs(t, err, &le)
	require.Len(t, le.Problems, 2, "%v", err)
	got := le.Problems[0].Error()
	assert.True(t, strings.HasPrefix(got, "ComponentVersion/etcd-v3.5.0: spec.timeout: "), "problem = %q, want it to start with the object and field", got)
	assert.Contains(t, got, `invalid duration "ten minutes"`)
	assert.Equal(t, "Release/r-v1.0: spec.components[0]: component etcd v3.5.0 depends on kube, which release v1.0 does not ship; add kube to the release's components, or remove it from the dependencies of etcd v3.5.0 (ComponentVersion/etcd-v3.5.0)",
		le.Problems[1].Error(), "the wrong-typed timeout hides nothing else; the reference names the object")
}

// TestLocalChart: a local Helm chart is found in WithManifests' file
// system, a directory or an archive, as the file loader finds it in the
// catalog directory; one that is not there is the file loader's problem,
// at the object.
func TestLocalChart(t *testing.T) {
	files := fstest.MapFS{
		"charts/app/Chart.yaml": {Data: []byte("apiVersion: v2\nname: app\nversion: 0.1.0\n")},
		"charts/db-0.2.0.tgz":   {Data: []byte("an archive")},
		"manifests/unused.yaml": {Data: []byte("kind: ConfigMap\n")},
	}
	helm := func(chart string) *catalog.Objects {
		o := &catalog.Objects{Components: []v1alpha1.ComponentVersion{{Spec: v1alpha1.ComponentVersionSpec{
			Name: "app", Version: "v1.0", Type: "helm", Helm: &v1alpha1.HelmChart{Chart: chart, Version: "0.1.0"}}}}}
		o.Components[0].Name = "app-v1.0"
		return o
	}
	for _, tt := range []struct {
		chart string
		opts  []catalog.Option
		want  string // "" when it loads
	}{
		{"charts/app", []catalog.Option{catalog.WithManifests(files)}, ""},
		{"./charts/app/", []catalog.Option{catalog.WithManifests(files)}, ""},
		{"charts/db-0.2.0.tgz", []catalog.Option{catalog.WithManifests(files)}, ""},
		{"oci://registry.example/charts/app", nil, ""},
		{"charts/ap", []catalog.Option{catalog.WithManifests(files)}, "ComponentVersion/app-v1.0: spec.helm.chart: helm chart charts/ap does not exist"},
		{"charts/app", nil, "ComponentVersion/app-v1.0: spec.helm.chart: helm chart charts/app does not exist"},
	} {
		t.Run(tt.chart, func(t *testing.T) {
			_, err := helm(tt.chart).Catalog(tt.opts...)
			if tt.want == "" {
				require.NoError(t, err, "Catalog() with chart %s", tt.chart)
				return
			}
			require.ErrorIs(t, err, release.ErrInvalidCatalog)
			assert.Contains(t, err.Error(), tt.want, "Catalog() with chart %s", tt.chart)
		})
	}
}

// phaseFileDir is a catalog whose lifecycle phase names a manifest file
// that is a template, not YAML.
const phaseFileDir = "testdata/phase-file"

// TestPhaseManifestFile: a file named by a lifecycle phase's manifests is
// read as one named by spec.manifests is. ReadDir does not take it for a
// broken catalog document, and the catalog the objects load with
// WithManifests is the file loader's.
func TestPhaseManifestFile(t *testing.T) {
	objs, err := catalog.ReadDir(phaseFileDir)
	require.NoError(t, err, "the phase's template is a manifest, not a broken document")
	require.Len(t, objs.Components, 1)
	require.Len(t, objs.Components[0].Spec.Phases, 2)

	want, err := release.LoadDir(phaseFileDir)
	require.NoError(t, err)
	got, err := objs.Catalog(catalog.WithManifests(os.DirFS(phaseFileDir)))
	require.NoError(t, err)
	stripSources(want)
	stripSources(got)
	assert.Equal(t, want.Components, got.Components, "components (-want +got)")
	file, err := os.ReadFile(filepath.Join(phaseFileDir, "manifests/rollout.yaml"))
	require.NoError(t, err)
	require.Len(t, got.Components[0].Phases[1].Manifests, 1)
	assert.Equal(t, string(file), got.Components[0].Phases[1].Manifests[0].Template, "the phase's manifest template is the file")
}
