package release_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/internal/cputime"
	"github.com/hopdag/hopdag/release"
)

const catalogDir = "../testdata/catalog"

var v = release.MustParseVersion

func loadCatalog(t testing.TB) *release.Catalog {
	t.Helper()
	c, err := release.LoadDir(catalogDir)
	require.NoError(t, err, "LoadDir(%s)", catalogDir)
	return c
}

func originals(vs []release.Version) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Original()
	}
	return out
}

func TestLoadCatalog(t *testing.T) {
	c := loadCatalog(t)

	wantVersions := []string{"v26.03", "v26.06-rc.1", "v26.06-rc.2", "v26.06-rc.3", "v26.06", "v26.06.1", "v26.09-rc.1", "v26.09"}
	assert.Len(t, c.Releases, 8)
	assert.Equal(t, wantVersions, originals(c.Versions()), "Versions()")
	assert.Equal(t, wantVersions, originals(c.TrackVersions("")), `TrackVersions("")`)
	assert.Empty(t, c.TrackVersions("kubernetes"))
	assert.Equal(t, []string{""}, c.Tracks())
	assert.Len(t, c.Components, 50)
	assert.Len(t, c.Paths, 1)

	// Components are sorted by name then version.
	assert.True(t, slices.IsSortedFunc(c.Components, func(a, b release.ComponentVersion) int {
		if a.Name != b.Name {
			return strings.Compare(a.Name, b.Name)
		}
		return a.Version.Compare(b.Version)
	}), "Components sorted by name then version")

	names := map[string]bool{}
	for _, cv := range c.Components {
		names[cv.Name] = true
	}
	assert.Len(t, names, 11, "component names: %v", names)
}

func TestCatalogRelease(t *testing.T) {
	c := loadCatalog(t)
	for _, spelling := range []string{"v26.06", "26.6.0", "26.06.00", "V26.6"} {
		r, ok := c.Release(v(spelling))
		require.True(t, ok, "Release(%s)", spelling)
		assert.Equal(t, "v26.06", r.Version.Original(), "Release(%s) keeps the catalog's spelling", spelling)
	}
	r, ok := c.Release(v("v26.06-rc.2"))
	require.True(t, ok)
	assert.Equal(t, "openfuyao-v26.06-rc.2", r.Name)
	assert.Equal(t, "", r.Track)
	assert.Equal(t, release.Source{File: "releases.yaml", Line: 54}, r.Source)
	assert.Equal(t, "releases.yaml:54", r.Source.String())
	require.Len(t, r.Components, 11)
	assert.Equal(t, release.ComponentRef{Name: "pre-upgrade-resources", Version: v("v1.1.0")}, r.Components[0])
	ev, ok := r.Ships("etcd")
	assert.True(t, ok)
	assert.Equal(t, "v3.5.21", ev.Original())
	_, ok = r.Ships("nginx")
	assert.False(t, ok)
	require.Len(t, r.Compatibility, 2)
	assert.Equal(t, "kubernetes-worker", r.Compatibility[0].Component)
	assert.Equal(t, "kubernetes-master", r.Compatibility[0].Requires)
	assert.Equal(t, "= v1.33.2", r.Compatibility[0].Versions.String())

	for _, missing := range []string{"v26.07", "v26.06-rc.4", "v26.06.1-rc.1"} {
		_, ok := c.Release(v(missing))
		assert.False(t, ok, "Release(%s)", missing)
	}
	_, ok = c.ReleaseOn("kubernetes", v("v26.06"))
	assert.False(t, ok, "ReleaseOn(kubernetes, v26.06)")
}

func TestCatalogComponent(t *testing.T) {
	c := loadCatalog(t)
	etcd, ok := c.Component("etcd", v("3.5.21"))
	require.True(t, ok, "Component(etcd, 3.5.21)")
	assert.Equal(t, "etcd@v3.5.21", etcd.Key())
	assert.Equal(t, release.TypeInline, etcd.Type)
	assert.Equal(t, "etcd", etcd.Handler)
	assert.Equal(t, []string{"bkeagent"}, etcd.Dependencies)
	assert.Equal(t, release.D(20*time.Minute), etcd.Timeout)
	assert.Equal(t, release.D(3*time.Minute), etcd.ExpectedDuration)
	assert.Equal(t, &release.Retries{Attempts: 2, Backoff: release.D(30 * time.Second), MaxBackoff: release.D(2 * time.Minute)}, etcd.Retries)
	assert.Equal(t, []release.HealthCheck{{Name: "etcd-healthy", Timeout: release.D(5 * time.Minute), Interval: release.D(10 * time.Second)}}, etcd.HealthChecks)
	assert.Equal(t, map[string]string{"dataDir": "/var/lib/etcd", "snapshotBeforeUpgrade": "true"}, etcd.Params)
	assert.Equal(t, release.Source{File: "components/etcd.yaml", Line: 25}, etcd.Source)
	assert.False(t, etcd.RunsFirst())

	pre, ok := c.Component("pre-upgrade-resources", v("v1.1.1"))
	require.True(t, ok)
	assert.True(t, pre.RunsFirst(), "pre-upgrade-resources has before: all")
	assert.Equal(t, release.TypeManifest, pre.Type)

	worker, ok := c.Component("kubernetes-worker", v("v1.33.3"))
	require.True(t, ok)
	assert.Equal(t, "workers", worker.Group)

	_, ok = c.Component("etcd", v("v3.5.99"))
	assert.False(t, ok)
	_, ok = c.Component("nginx", v("v1.0"))
	assert.False(t, ok)
}

func TestCatalogManifests(t *testing.T) {
	c := loadCatalog(t)
	ms, ok := c.Component("metrics-server", v("v0.8.0"))
	require.True(t, ok)
	require.Len(t, ms.Manifests, 1)
	m := ms.Manifests[0]
	assert.Equal(t, "manifests/metrics-server-v0.8.yaml", m.File)
	assert.Equal(t, m.File, m.Name, "Name defaults to File")
	want, err := os.ReadFile(catalogDir + "/manifests/metrics-server-v0.8.yaml")
	require.NoError(t, err)
	assert.Equal(t, string(want), m.Template, "Load reads the file into Template")

	// Every manifest component has its templates; manifest files are not
	// catalog documents.
	for _, cv := range c.Components {
		if cv.Type != release.TypeManifest {
			continue
		}
		require.NotEmpty(t, cv.Manifests, cv.Key())
		for _, m := range cv.Manifests {
			assert.NotEmpty(t, m.Template, "%s manifest %s", cv.Key(), m.Name)
			assert.Contains(t, m.Template, "kind: ", "%s manifest %s", cv.Key(), m.Name)
		}
	}
	var kinds []string
	for _, cv := range c.Components {
		for _, m := range cv.Manifests {
			for _, k := range []string{"Deployment", "DaemonSet", "ConfigMap", "ServiceAccount"} {
				if strings.Contains(m.Template, "kind: "+k+"\n") && !slices.Contains(kinds, k) {
					kinds = append(kinds, k)
				}
			}
		}
	}
	slices.Sort(kinds)
	assert.Equal(t, []string{"ConfigMap", "DaemonSet", "Deployment", "ServiceAccount"}, kinds, "kinds of objects the manifests hold")
}

func TestCatalogComponentsOf(t *testing.T) {
	c := loadCatalog(t)
	for _, ver := range c.Versions() {
		r, ok := c.Release(ver)
		require.True(t, ok)
		cvs := c.ComponentsOf(r)
		require.Len(t, cvs, len(r.Components), "ComponentsOf(%s)", ver)
		for i, cv := range cvs {
			assert.Equal(t, r.Components[i].Name, cv.Name, "ComponentsOf(%s)[%d] keeps the declared order", ver, i)
			assert.True(t, r.Components[i].Version.Equal(cv.Version), "ComponentsOf(%s)[%d]", ver, i)
		}
	}
	// A Release built outside the catalog: unresolved references are left out.
	r := &release.Release{Version: v("v1.0"), Components: []release.ComponentRef{
		{Name: "etcd", Version: v("v3.5.21")}, {Name: "nginx", Version: v("v1.0")}, {Name: "etcd", Version: v("v9.9")},
	}}
	got := c.ComponentsOf(r)
	require.Len(t, got, 1)
	assert.Equal(t, "etcd@v3.5.21", got[0].Key())
}

func TestCatalogRules(t *testing.T) {
	c := loadCatalog(t)
	rules := c.Rules("")
	require.Len(t, rules, 9)
	assert.Empty(t, c.Rules("kubernetes"))

	first := rules[0]
	assert.Equal(t, "v26.03", first.From.String())
	assert.Equal(t, "v26.06", first.To.Original())
	assert.Equal(t, []release.Check{{Name: "cluster-healthy", Required: true}, {Name: "etcd-backup", Required: true}}, first.PreChecks)
	assert.Equal(t, []release.Check{{Name: "nodes-ready", Required: true}}, first.PostChecks)
	assert.Equal(t, release.Source{File: "upgradepath.yaml", Line: 9}, first.Source)

	var blocked, deprecated, risky int
	for _, r := range rules {
		if r.Blocked != "" {
			blocked++
		}
		if r.Deprecated != "" {
			deprecated++
		}
		if len(r.Risks) > 0 {
			risky++
			assert.Equal(t, "containerd-v2-config", r.Risks[0].Name)
			assert.NotEmpty(t, r.Risks[0].Message)
			assert.True(t, strings.HasPrefix(r.Risks[0].URL, "https://"), r.Risks[0].URL)
		}
		assert.Equal(t, "upgradepath.yaml", r.Source.File)
		assert.Positive(t, r.Source.Line)
	}
	assert.Equal(t, [3]int{1, 1, 1}, [3]int{blocked, deprecated, risky}, "blocked, deprecated and risky edges")

	rc := rules[2]
	assert.Equal(t, ">= v26.06-rc.1, < v26.06-rc.3", rc.From.String())
	assert.True(t, rc.From.Check(v("v26.06-rc.2")))
	assert.False(t, rc.From.Check(v("v26.06-rc.3")))
	assert.Equal(t, 19, rc.Source.Line)
	assert.Equal(t, "openfuyao-upgrade-paths", c.Paths[0].Name)
	assert.Equal(t, release.Source{File: "upgradepath.yaml", Line: 3}, c.Paths[0].Source)
}

func TestCatalogVersionInfo(t *testing.T) {
	c := loadCatalog(t)
	rc1, ok := c.VersionInfo("", v("v26.06-rc.1"))
	require.True(t, ok)
	assert.False(t, rc1.IsInstallable(), "v26.06-rc.1 is installable: false")
	assert.Equal(t, "withdrawn; use v26.06-rc.3", rc1.Deprecated)

	preview, ok := c.VersionInfo("", v("26.9.0-rc.1"))
	require.True(t, ok)
	assert.True(t, preview.IsInstallable(), "installable defaults to true")
	assert.Equal(t, "preview build", preview.Deprecated)

	_, ok = c.VersionInfo("", v("v26.06"))
	assert.False(t, ok, "v26.06 is not listed")
	_, ok = c.VersionInfo("kubernetes", v("v26.06-rc.1"))
	assert.False(t, ok, "other track")
}

// TestLoadMatchesLoadDir: Load(os.DirFS(dir)) and LoadDir(dir) agree.
func TestLoadMatchesLoadDir(t *testing.T) {
	a := loadCatalog(t)
	b, err := release.Load(os.DirFS(catalogDir))
	require.NoError(t, err)
	assert.Equal(t, a, b)
}

func TestLoadDirMissing(t *testing.T) {
	c, err := release.LoadDir("testdata/no-such-catalog")
	assert.Nil(t, c)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.EqualError(t, err, "release: catalog directory: stat testdata/no-such-catalog: no such file or directory")
}

const header = "apiVersion: hopdag.io/v1alpha1\n"

// doc writes one catalog document.
func doc(kind, name, spec string) string {
	return header + "kind: " + kind + "\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

func TestLoadInfersType(t *testing.T) {
	fsys := fstest.MapFS{
		"c.yml": {Data: []byte(strings.Join([]string{
			doc("ComponentVersion", "a", "  name: a\n  version: v1.0\n  handler: a\n"),
			doc("ComponentVersion", "b", "  name: b\n  version: v1.0\n  command: {args: [/bin/upgrade-b, --to, v1.0], env: {A: b}}\n"),
			doc("ComponentVersion", "c", "  name: c\n  version: v1.0\n  manifests:\n    - template: |\n        kind: ConfigMap\n    - {name: second, template: 'kind: Secret'}\n"),
			doc("ComponentVersion", "d", "  name: d\n  version: v1.0\n  type: helm\n  params: {chart: d}\n"),
		}, "---\n"))},
	}
	c, err := release.Load(fsys)
	require.NoError(t, err)
	want := map[string]string{"a": release.TypeInline, "b": release.TypeExec, "c": release.TypeManifest, "d": "helm"}
	for name, typ := range want {
		cv, ok := c.Component(name, v("v1.0"))
		require.True(t, ok, name)
		assert.Equal(t, typ, cv.Type, "type of %s", name)
		assert.Equal(t, "c.yml", cv.Source.File, "source of %s", name)
	}
	var lines []int
	for _, cv := range c.Components {
		lines = append(lines, cv.Source.Line)
	}
	assert.Equal(t, []int{1, 10, 19, 31}, lines, "Source lines of a, b, c, d")
	b, _ := c.Component("b", v("v1.0"))
	assert.Equal(t, &release.Command{Args: []string{"/bin/upgrade-b", "--to", "v1.0"}, Env: map[string]string{"A": "b"}}, b.Command)
	m, _ := c.Component("c", v("v1.0"))
	assert.Equal(t, []release.Manifest{{Name: "inline-0", Template: "kind: ConfigMap\n"}, {Name: "second", Template: "kind: Secret"}}, m.Manifests)
}

func TestLoadFiles(t *testing.T) {
	etcd := doc("ComponentVersion", "etcd", "  name: etcd\n  version: v3.5.21\n  handler: etcd\n")
	fsys := fstest.MapFS{
		// Empty documents, comments and a leading "---" are fine.
		"a/b/deep.yaml": {Data: []byte("# comment only\n---\n---\n" + etcd + "---\n")},
		// .yaml and .yml in any case; hidden files and directories are skipped.
		"release.YAML":             {Data: []byte(doc("Release", "r2", "  version: v2.0\n  components: [{name: etcd, version: 3.5.21}]\n"))},
		".github/workflows/ci.yml": {Data: []byte("on: [push")},
		"a/.hidden/x.yaml":         {Data: []byte("not: [a catalog")},
		".x.yaml":                  {Data: []byte("not: [a catalog")},
		"notes.txt":                {Data: []byte("not: [a catalog")},
		"empty.yaml":               {Data: nil},
		"nulls.yml":                {Data: []byte("~\n---\nnull\n")},
		"r.yml":                    {Data: []byte(doc("Release", "r", "  version: v1.0\n  components: [{name: etcd, version: 3.5.21}]\n"))},
		"x.yaml/inner":             {Data: []byte("a directory named x.yaml is not a file")},
		// A Helm chart in the catalog (a helm component's chart path) is
		// not read: its Chart.yaml, values and templates are not documents.
		"charts/app/Chart.yaml":        {Data: []byte("apiVersion: v2\nname: app\nversion: 0.1.0\n")},
		"charts/app/values.yaml":       {Data: []byte("greeting: hi\n")},
		"charts/app/templates/cm.yaml": {Data: []byte("data: {g: {{ .Values.greeting | quote }}}\n")},
		"charts/notachart/stray.yaml":  {Data: []byte(doc("Release", "r3", "  version: v3.0\n  components: [{name: etcd, version: 3.5.21}]\n"))},
	}
	c, err := release.Load(fsys)
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.0", "v2.0", "v3.0"}, originals(c.Versions()), "a directory without Chart.yaml is read")
	cv, ok := c.Component("etcd", v("v3.5.21"))
	require.True(t, ok)
	assert.Equal(t, release.Source{File: "a/b/deep.yaml", Line: 4}, cv.Source)
}

func TestLoadTracks(t *testing.T) {
	spec := "  name: etcd\n  version: v3.5.21\n  handler: etcd\n"
	rel := func(track, version, supports string) string {
		s := "  version: " + version + "\n  track: " + track + "\n  components: [{name: etcd, version: v3.5.21}]\n"
		if supports != "" {
			s += "  supports: {" + supports + "}\n"
		}
		return doc("Release", track+"-"+version, s)
	}
	fsys := fstest.MapFS{
		"c.yaml": {Data: []byte(doc("ComponentVersion", "etcd", spec))},
		"r.yaml": {Data: []byte(strings.Join([]string{
			rel("platform", "v26.06", `kubernetes: ">= v1.33, < v1.35"`),
			rel("platform", "v26.03", ""),
			rel("kubernetes", "v1.34.1", ""),
			rel("kubernetes", "v1.33.5", `platform: ">= v26.03"`),
			doc("UpgradePath", "k8s", "  track: kubernetes\n  rules: [{from: v1.33.5, to: v1.34.1}]\n  versions: [{version: v1.33.5, deprecated: old}]\n"),
			doc("UpgradePath", "platform", "  track: platform\n  rules: [{from: v26.03, to: v26.06}]\n"),
		}, "---\n"))},
	}
	c, err := release.Load(fsys)
	require.NoError(t, err)
	assert.Equal(t, []string{"kubernetes", "platform"}, c.Tracks())
	assert.Empty(t, c.Versions(), "no release on the default track")
	assert.Equal(t, []string{"v1.33.5", "v1.34.1"}, originals(c.TrackVersions("kubernetes")))
	assert.Equal(t, []string{"v26.03", "v26.06"}, originals(c.TrackVersions("platform")))

	r, ok := c.ReleaseOn("platform", v("26.6"))
	require.True(t, ok)
	assert.True(t, r.Supports["kubernetes"].Check(v("v1.34.1")))
	assert.False(t, r.Supports["kubernetes"].Check(v("v1.35.0")))
	_, ok = c.ReleaseOn("kubernetes", v("v26.06"))
	assert.False(t, ok)
	_, ok = c.Release(v("v26.06"))
	assert.False(t, ok, "Release looks at the default track only")

	require.Len(t, c.Rules("kubernetes"), 1)
	assert.Equal(t, "v1.34.1", c.Rules("kubernetes")[0].To.Original())
	require.Len(t, c.Rules("platform"), 1)
	assert.Empty(t, c.Rules(""))
	vi, ok := c.VersionInfo("kubernetes", v("v1.33.5"))
	require.True(t, ok)
	assert.Equal(t, "old", vi.Deprecated)
	// Paths are sorted by track then name.
	assert.Equal(t, []string{"k8s", "platform"}, []string{c.Paths[0].Name, c.Paths[1].Name})
}

// TestLoadDependencyCycle: cycles are the dag package's to report; the
// loader must load them without hanging.
// TestLoadDependencyCycle: validate (Load) reports every cycle of every
// release's component dependencies, with the file:line of each
// ComponentVersion on it, in the rotation dag.Build uses.
func TestLoadDependencyCycle(t *testing.T) {
	cv := func(name string, deps ...string) string {
		return doc("ComponentVersion", name, "  name: "+name+"\n  version: v1.0\n  handler: "+name+"\n  dependencies: ["+strings.Join(deps, ", ")+"]\n")
	}
	ship := func(version string, names ...string) string {
		var refs []string
		for _, n := range names {
			refs = append(refs, "{name: "+n+", version: v1.0}")
		}
		return doc("Release", "r"+version, "  version: "+version+"\n  components: ["+strings.Join(refs, ", ")+"]\n")
	}
	fsys := fstest.MapFS{
		"c.yaml": {Data: []byte(strings.Join([]string{cv("y", "x"), cv("x", "y"), cv("q", "r"), cv("r", "p"), cv("p", "q"), cv("ok", "x")}, "---\n"))},
		"r.yaml": {Data: []byte(ship("v1.0", "x", "y", "p", "q", "r", "ok") + "---\n" + ship("v2.0", "x", "y", "ok"))},
	}
	_, err := release.Load(fsys)
	require.Error(t, err)
	assert.Equal(t, `release: invalid catalog: 2 problems
  c.yaml:19: spec.dependencies[0]: dependency cycle: x v1.0 (c.yaml:11) -> y v1.0 (c.yaml:1) -> x v1.0 (c.yaml:11) (in release v1.0 and 1 more release); remove one of the dependencies on the cycle (each is in spec.dependencies of the component before it)
  c.yaml:49: spec.dependencies[0]: dependency cycle: p v1.0 (c.yaml:41) -> q v1.0 (c.yaml:21) -> r v1.0 (c.yaml:31) -> p v1.0 (c.yaml:41) (in release v1.0); remove one of the dependencies on the cycle (each is in spec.dependencies of the component before it)`, err.Error())
}

// TestLoadCycleMatchesPlan: the walk Load reports for a cycle is the one
// dag.Build (plan) reports for the same release: both come from
// internal/cycles over the components in name order. NewCatalog leaves
// cycles to dag, so the same values built in code reach dag.Build.
func TestLoadCycleMatchesPlan(t *testing.T) {
	deps := map[string][]string{"m": {"z", "q"}, "q": {"m"}, "z": {"q", "m"}, "a": {"m"}, "k": {"l"}, "l": {"k"}}
	var cvs []release.ComponentVersion
	var refs []release.ComponentRef
	var files []string
	for _, name := range []string{"a", "k", "l", "m", "q", "z"} {
		cvs = append(cvs, release.ComponentVersion{Name: name, Version: v("v1.0"), Handler: name, Dependencies: deps[name]})
		refs = append(refs, release.ComponentRef{Name: name, Version: v("v1.0")})
		files = append(files, doc("ComponentVersion", name, "  name: "+name+"\n  version: v1.0\n  handler: "+name+"\n  dependencies: ["+strings.Join(deps[name], ", ")+"]\n"))
	}
	r := release.Release{Version: v("v1.0"), Components: refs}
	c, err := release.NewCatalog([]release.Release{r}, cvs, nil)
	require.NoError(t, err, "NewCatalog checks no cycles: dag.Build reports them")
	rel, _ := c.Release(v("v1.0"))
	_, err = dag.Build(c, nil, rel)
	var ce *dag.CycleError
	require.ErrorAs(t, err, &ce)

	files = append(files, doc("Release", "r", "  version: v1.0\n  components: [{name: a, version: v1.0}, {name: k, version: v1.0}, {name: l, version: v1.0}, {name: m, version: v1.0}, {name: q, version: v1.0}, {name: z, version: v1.0}]\n"))
	_, err = release.Load(fstest.MapFS{"c.yaml": {Data: []byte(strings.Join(files, "---\n"))}})
	var le *release.LoadError
	require.ErrorAs(t, err, &le)
	var got [][]string
	for _, p := range le.Problems {
		walk, ok := strings.CutPrefix(p.Message, "dependency cycle: ")
		require.True(t, ok, "problem %v is not a cycle", p)
		walk, _, _ = strings.Cut(walk, " (in release")
		var names []string
		for _, step := range strings.Split(walk, " -> ") {
			names = append(names, strings.Fields(step)[0])
		}
		got = append(got, names)
	}
	assert.Equal(t, ce.Cycles, got, "Load's cycles (-dag.Build's +Load's)")
}

// TestLoadAliasesStayCheap: a small file of aliases to lists of aliases must
// not cost the strict checker N^2: before anchored nodes were checked once,
// this 96 KB file took 90 s. The bound is loose for -race on a busy
// machine; TestLoadAliases checks the same fix exactly. The bytes its
// aliases bring in (maxAliasBytes) stop it now, before the values they
// expand to (maxAliasNodes, testdata/invalid/alias-limit).
func TestLoadAliasesStayCheap(t *testing.T) {
	var b strings.Builder
	b.WriteString(header + "kind: UpgradePath\nmetadata: {name: p}\nspec:\n  rules:\n  - &r\n    from: v1.0\n    to: v1.0\n    risks:\n    - &k {name: a, message: b, url: c}\n")
	const n = 6000
	for range n {
		b.WriteString("    - *k\n")
	}
	for range n {
		b.WriteString("  - *r\n")
	}
	var err error
	cpu := cputime.Of(func() { _, err = release.Load(fstest.MapFS{"a.yaml": {Data: []byte(b.String())}}) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "aliases bring in 612318000 bytes of values in this document, 611269424 more than the limit of 1048576 (1 MiB)")
	assert.Less(t, cpu, time.Minute, "CPU time of a Load of a %d-byte file of aliases", b.Len())
}

func TestLoadAliases(t *testing.T) {
	// Aliases within a document are ordinary YAML and load.
	fsys := fstest.MapFS{"c.yaml": {Data: []byte(doc("ComponentVersion", "a",
		"  name: a\n  version: v1.0\n  handler: a\n  healthChecks:\n    - &h {name: ready, params: &p {x: y}}\n    - *h\n  params: *p\n"))}}
	c, err := release.Load(fsys)
	require.NoError(t, err)
	a, _ := c.Component("a", v("v1.0"))
	assert.Len(t, a.HealthChecks, 2)
	assert.Equal(t, map[string]string{"x": "y"}, a.Params)

	// A problem inside an anchored node is reported once, where it is
	// written: the checker walks an anchored node once, not once per alias
	// (which, nested, cost N^2).
	fsys = fstest.MapFS{"c.yaml": {Data: []byte(doc("ComponentVersion", "a",
		"  name: a\n  version: v1.0\n  handler: a\n  healthChecks:\n    - &h {name: ready, timeout: soon}\n    - *h\n    - *h\n"))}}
	_, err = release.Load(fsys)
	assert.EqualError(t, err, "release: invalid catalog: 1 problem\n"+
		`  c.yaml:10: spec.healthChecks[0].timeout: invalid duration "soon": write a number with a unit, e.g. 90s, 5m, 1h30m`)

	var b strings.Builder
	b.WriteString(header + "kind: UpgradePath\nmetadata: {name: p}\nspec:\n  rules:\n  - &r\n    from: v1.0\n    to: v1.0\n    risks:\n    - &k {name: a, url: [x]}\n")
	for range 50 {
		b.WriteString("    - *k\n")
	}
	for range 50 {
		b.WriteString("  - *r\n")
	}
	_, err = release.Load(fstest.MapFS{"a.yaml": {Data: []byte(b.String())}})
	assert.EqualError(t, err, "release: invalid catalog: 1 problem\n"+
		"  a.yaml:10: spec.rules[0].risks[0].url: want a string, got a list")
}

// failFS fails to open the files and directories it names. It hides
// MapFS's ReadFile and ReadDir so that every read goes through Open.
type failFS struct {
	files    fstest.MapFS
	failOpen map[string]bool
}

func (f failFS) Open(name string) (fs.File, error) {
	if f.failOpen[name] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f.files.Open(name)
}

func TestLoadUnreadable(t *testing.T) {
	fsys := failFS{
		files: fstest.MapFS{
			"a.yaml":        {Data: []byte(doc("ComponentVersion", "a", "  name: a\n  version: v1.0\n  manifests: [{file: m/a.yaml}]\n"))},
			"b.yaml":        {Data: []byte("irrelevant")},
			"locked/c.yaml": {Data: []byte("irrelevant")},
			"m/a.yaml":      {Data: []byte("kind: ConfigMap")},
		},
		failOpen: map[string]bool{"b.yaml": true, "locked": true, "m/a.yaml": true},
	}
	_, err := release.Load(fsys)
	require.Error(t, err)
	assert.EqualError(t, err, "release: invalid catalog: 3 problems\n"+
		"  a.yaml:8: spec.manifests[0].file: manifest file m/a.yaml: open m/a.yaml: permission denied; write the path relative to the catalog root, or use template for inline YAML\n"+
		"  b.yaml: open b.yaml: permission denied\n"+
		"  locked: open locked: permission denied")
}

func TestLoadErrorIsAndAs(t *testing.T) {
	_, err := release.Load(fstest.MapFS{"a.yaml": {Data: []byte("kind: Nope\n")}})
	require.Error(t, err)
	assert.ErrorIs(t, err, release.ErrInvalidCatalog)
	var le *release.LoadError
	require.ErrorAs(t, err, &le)
	require.Len(t, le.Problems, 1)
	assert.Equal(t, release.Problem{File: "a.yaml", Line: 1, Field: "apiVersion", Message: "missing apiVersion", Fix: "add apiVersion: hopdag.io/v1alpha1"}, le.Problems[0])
	var p release.Problem
	require.ErrorAs(t, err, &p, "each Problem is reachable through Unwrap")
	assert.Equal(t, le.Problems[0], p)
}

func TestProblemError(t *testing.T) {
	tests := []struct {
		p    release.Problem
		want string
	}{
		{release.Problem{File: "a.yaml", Line: 3, Field: "spec.version", Message: "bad", Fix: "fix it"}, "a.yaml:3: spec.version: bad; fix it"},
		{release.Problem{File: "a.yaml", Message: "unreadable"}, "a.yaml: unreadable"},
		{release.Problem{Field: "spec.components[0].version", Message: "missing"}, "spec.components[0].version: missing"},
		{release.Problem{Message: "just this"}, "just this"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.p.Error())
	}
	one := &release.LoadError{Problems: []release.Problem{{Message: "x"}}}
	assert.Equal(t, "release: invalid catalog: 1 problem\n  x", one.Error())
	two := &release.LoadError{Problems: []release.Problem{{Message: "x"}, {Message: "y"}}}
	assert.Equal(t, "release: invalid catalog: 2 problems\n  x\n  y", two.Error())
	assert.True(t, errors.Is(two, release.ErrInvalidCatalog))
	assert.False(t, errors.Is(two, fs.ErrNotExist))
}

// TestCatalogJSONRoundTrip: YAML -> Catalog -> JSON -> Catalog gives the same
// catalog (Source is not part of the JSON), and the JSON is stable.
func TestCatalogJSONRoundTrip(t *testing.T) {
	c := loadCatalog(t)
	b, err := json.MarshalIndent(c, "", "  ")
	require.NoError(t, err)

	var decoded release.Catalog
	require.NoError(t, json.Unmarshal(b, &decoded))
	back, err := release.NewCatalog(decoded.Releases, decoded.Components, decoded.Paths)
	require.NoError(t, err, "NewCatalog of the decoded JSON")

	assert.Equal(t, withoutSources(c), withoutSources(back))
	b2, err := json.MarshalIndent(back, "", "  ")
	require.NoError(t, err)
	assert.Equal(t, string(b), string(b2), "JSON of the round-tripped catalog")

	// Spot checks on the JSON itself: original spellings, Go durations.
	assert.Contains(t, string(b), `"version": "v26.06-rc.2"`)
	assert.Contains(t, string(b), `"timeout": "20m0s"`)
	assert.Contains(t, string(b), `"from": "\u003e= v26.06-rc.1, \u003c v26.06-rc.3"`)
	assert.NotContains(t, string(b), `"Source"`)
}

// TestCatalogYAMLRoundTrip: each loaded spec written back as YAML documents
// loads into the same catalog.
func TestCatalogYAMLRoundTrip(t *testing.T) {
	c := loadCatalog(t)
	var docs []string
	add := func(kind, name string, spec any) {
		b, err := yaml.Marshal(map[string]any{
			"apiVersion": release.APIVersion, "kind": kind,
			"metadata": map[string]string{"name": name}, "spec": spec,
		})
		require.NoError(t, err)
		docs = append(docs, string(b))
	}
	for _, r := range c.Releases {
		add(release.KindRelease, r.Name, r)
	}
	for _, cv := range c.Components {
		cv := *cv.DeepCopy()
		for i := range cv.Manifests {
			cv.Manifests[i].File = "" // the template is inline now
		}
		add(release.KindComponentVersion, cv.Key(), cv)
	}
	for _, p := range c.Paths {
		add(release.KindUpgradePath, p.Name, p)
	}
	back, err := release.Load(fstest.MapFS{"all.yaml": {Data: []byte(strings.Join(docs, "---\n"))}})
	require.NoError(t, err)

	want := withoutSources(c)
	for i := range want.Components {
		for j := range want.Components[i].Manifests {
			want.Components[i].Manifests[j].File = ""
		}
	}
	assert.Equal(t, want, withoutSources(back))
}

// withoutSources returns the exported data of c without Source fields.
func withoutSources(c *release.Catalog) release.Catalog {
	out := release.Catalog{}
	for _, r := range c.Releases {
		r := *r.DeepCopy()
		r.Source = release.Source{}
		out.Releases = append(out.Releases, r)
	}
	for _, cv := range c.Components {
		cv := *cv.DeepCopy()
		cv.Source = release.Source{}
		out.Components = append(out.Components, cv)
	}
	for _, p := range c.Paths {
		p := *p.DeepCopy()
		p.Source = release.Source{}
		for i := range p.Rules {
			p.Rules[i].Source = release.Source{}
		}
		out.Paths = append(out.Paths, p)
	}
	return out
}
