package release_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// values is a small valid catalog built in code.
type values struct {
	releases   []release.Release
	components []release.ComponentVersion
	paths      []release.UpgradePath
}

func newValues() values {
	return values{
		releases: []release.Release{
			{
				Name: "v26.06", Version: v("v26.06"),
				Components: []release.ComponentRef{
					{Name: "etcd", Version: v("v3.5.21")},
					{Name: "kubernetes-master", Version: v("v1.33.3")},
				},
				Compatibility: []release.Compatibility{
					{Component: "kubernetes-master", Requires: "etcd", Versions: release.MustParseConstraint(">= v3.5, < v3.6")},
				},
			},
			{
				Name: "v26.03", Version: v("v26.03"),
				Components: []release.ComponentRef{
					{Name: "etcd", Version: v("v3.5.16")},
					{Name: "kubernetes-master", Version: v("v1.33.3")},
				},
			},
		},
		components: []release.ComponentVersion{
			{Name: "kubernetes-master", Version: v("v1.33.3"), Handler: "kubernetes-master", Dependencies: []string{"etcd"}},
			{Name: "etcd", Version: v("v3.5.21"), Type: release.TypeInline, Handler: "etcd", Timeout: release.D(20 * time.Minute)},
			{Name: "etcd", Version: v("v3.5.16"), Command: &release.Command{Args: []string{"/bin/etcd-upgrade"}}},
		},
		paths: []release.UpgradePath{
			{Name: "p", Rules: []release.Rule{{From: release.MustParseConstraint("v26.03"), To: v("v26.06")}}},
		},
	}
}

func (vs values) catalog() (*release.Catalog, error) {
	return release.NewCatalog(vs.releases, vs.components, vs.paths)
}

func TestNewCatalog(t *testing.T) {
	in := newValues()
	c, err := in.catalog()
	require.NoError(t, err)

	assert.Equal(t, []string{"v26.03", "v26.06"}, originals(c.Versions()), "releases sorted")
	assert.Equal(t, "etcd@v3.5.16", c.Components[0].Key(), "components sorted by name then version")
	r, ok := c.Release(v("26.6.0"))
	require.True(t, ok)
	assert.Equal(t, "v26.06", r.Name)
	assert.Equal(t, release.Source{}, r.Source, "no source for values built in code")
	assert.Equal(t, "", r.Source.String())

	km, ok := c.Component("kubernetes-master", v("v1.33.3"))
	require.True(t, ok)
	assert.Equal(t, release.TypeInline, km.Type, "type inferred from handler")
	exec, ok := c.Component("etcd", v("v3.5.16"))
	require.True(t, ok)
	assert.Equal(t, release.TypeExec, exec.Type, "type inferred from command")
	assert.Equal(t, "", in.components[0].Type, "NewCatalog does not write to its input")

	// NewCatalog copies its input: changing the input later changes nothing.
	in.releases[0].Components[0].Version = v("v9.9")
	in.releases[0].Name = "changed"
	in.components[0].Dependencies[0] = "changed"
	in.components[2].Command.Args[0] = "changed"
	in.paths[0].Rules[0].To = v("v9.9")
	r, _ = c.Release(v("v26.06"))
	assert.Equal(t, "v26.06", r.Name)
	assert.Equal(t, "v3.5.21", r.Components[0].Version.Original())
	km, _ = c.Component("kubernetes-master", v("v1.33.3"))
	assert.Equal(t, []string{"etcd"}, km.Dependencies)
	exec, _ = c.Component("etcd", v("v3.5.16"))
	assert.Equal(t, []string{"/bin/etcd-upgrade"}, exec.Command.Args)
	assert.Equal(t, "v26.06", c.Rules("")[0].To.Original())
}

// A ComponentVersion built in code with Retries but no Attempts (the zero
// value) leaves the attempts to the executor, as a catalog's retries
// block without attempts does; only attempts: 0 written in YAML is
// refused (testdata/invalid/attempts-zero).
func TestNewCatalogRetriesWithoutAttempts(t *testing.T) {
	vs := newValues()
	vs.components[1].Retries = &release.Retries{Backoff: release.D(10 * time.Second)}
	c, err := vs.catalog()
	require.NoError(t, err, "NewCatalog with Retries{Backoff: 10s}")
	cv, ok := c.Component(vs.components[1].Name, vs.components[1].Version)
	require.True(t, ok)
	assert.Equal(t, &release.Retries{Backoff: release.D(10 * time.Second)}, cv.Retries)
}

func TestNewCatalogEmpty(t *testing.T) {
	c, err := release.NewCatalog(nil, nil, nil)
	require.NoError(t, err)
	assert.Empty(t, c.Versions())
	assert.Empty(t, c.Tracks())
	_, ok := c.Release(v("v1.0"))
	assert.False(t, ok)
}

// TestNewCatalogProblems: each change to a valid catalog gives one exact
// error. Values built in code have no file:line, so problems name the field.
func TestNewCatalogProblems(t *testing.T) {
	no := false
	tests := []struct {
		name   string
		change func(*values)
		want   []string // the problem lines of the error
	}{
		{
			"release names a missing component version",
			func(vs *values) { vs.releases[0].Components[0].Version = v("v3.5.99") },
			[]string{"spec.components[0].version: release v26.06 ships etcd v3.5.99, but no ComponentVersion etcd v3.5.99 exists; known versions of etcd: v3.5.16, v3.5.21"},
		},
		{
			"release ships a component twice",
			func(vs *values) {
				vs.releases[1].Components = append(vs.releases[1].Components, release.ComponentRef{Name: "etcd", Version: v("v3.5.21")})
			},
			[]string{"spec.components[2].name: release v26.03 ships component etcd twice (also at components[0]); keep one entry per component"},
		},
		{
			"dependency not shipped",
			func(vs *values) { vs.releases[1].Components = vs.releases[1].Components[1:] },
			[]string{"spec.components[0]: component kubernetes-master v1.33.3 depends on etcd, which release v26.03 does not ship; add etcd to the release's components, or remove it from the dependencies of kubernetes-master v1.33.3"},
		},
		{
			"track name with a comma",
			func(vs *values) {
				for i := range vs.releases {
					vs.releases[i].Track = "a,b"
				}
				for i := range vs.paths {
					vs.paths[i].Track = "a,b"
				}
			},
			[]string{
				`spec.track: track "a,b" holds ","; a track name takes only letters, digits, ".", "_" and "-" (it is written in step names, TRACK=VERSION and HOP/COMPONENT/PHASE, and in states, track=version,track=version); rename the track, e.g. a-b, here and wherever it is named`,
			},
		},
		{
			"self-dependency",
			func(vs *values) { vs.components[1].Dependencies = []string{"etcd"} },
			[]string{"spec.dependencies[0]: component etcd depends on itself; remove it from spec.dependencies"},
		},
		{
			"empty and repeated dependencies",
			func(vs *values) { vs.components[0].Dependencies = []string{"etcd", "", "etcd"} },
			[]string{
				"spec.dependencies[1]: empty dependency name; remove the entry",
				"spec.dependencies[2]: dependency etcd is listed twice; remove one of them",
			},
		},
		{
			"compatibility violated",
			func(vs *values) {
				vs.releases[0].Compatibility[0].Versions = release.MustParseConstraint(">= v3.6")
			},
			[]string{"spec.compatibility[0].versions: kubernetes-master requires etcd >= v3.6, but release v26.06 ships etcd v3.5.21; ship a version of etcd that satisfies >= v3.6, or change the rule"},
		},
		{
			"compatibility requires a component not shipped",
			func(vs *values) { vs.releases[0].Compatibility[0].Requires = "containerd" },
			[]string{"spec.compatibility[0].requires: kubernetes-master requires containerd >= v3.5, < v3.6, which release v26.06 does not ship; add containerd to the release's components"},
		},
		{
			"compatibility without versions",
			func(vs *values) { vs.releases[0].Compatibility[0].Versions = release.Constraint{} },
			[]string{`spec.compatibility[0]: compatibility rule has no versions; set versions to a range, e.g. ">= v1.34.0, < v1.35.0"`},
		},
		{
			"compatibility without component",
			func(vs *values) { vs.releases[0].Compatibility[0].Component = "" },
			[]string{"spec.compatibility[0].component: compatibility rule has no component; name the component the rule applies to"},
		},
		{
			"compatibility for a component not shipped (a dangling reference)",
			func(vs *values) { vs.releases[0].Compatibility[0].Component = "coredns" },
			[]string{"spec.compatibility[0].component: compatibility rule on coredns, which release v26.06 does not ship; name a component the release ships: etcd, kubernetes-master"},
		},
		{
			"compatibility for a misspelt component",
			func(vs *values) { vs.releases[0].Compatibility[0].Component = "kubernetes-mastr" },
			[]string{"spec.compatibility[0].component: compatibility rule on kubernetes-mastr, which release v26.06 does not ship; did you mean kubernetes-master?"},
		},
		{
			"supports an unknown track",
			func(vs *values) {
				vs.releases[0].Supports = map[string]release.Constraint{
					"kubernetes": release.MustParseConstraint(">= v1.33"),
					"":           release.MustParseConstraint("*"),
				}
			},
			[]string{
				// "" is the release's own track: it moves by rules.
				`spec.supports.: release v26.06 supports its own track ""; remove it: supports names the versions of the other tracks that may run beside the release; its own track moves by UpgradePath rules`,
				`spec.supports.kubernetes: track "kubernetes" has no releases in the catalog; name an existing track, or add its releases`,
			},
		},
		{
			"duplicate release version",
			func(vs *values) { vs.releases[1].Version = v("26.6.0") },
			[]string{
				`spec.rules[0].from: rule upgrades from v26.03, which has no release; known releases: v26.06, 26.6.0; or make from a range, which may name versions without releases`,
				"spec.version: release 26.6.0 is declared twice (v26.06 and 26.6.0 are the same version); remove one of the two Release documents",
			},
		},
		{
			"duplicate component version",
			func(vs *values) { vs.components[2].Version = v("3.5.21") },
			[]string{
				"spec.components[0].version: release v26.03 ships etcd v3.5.16, but no ComponentVersion etcd v3.5.16 exists; known versions of etcd: v3.5.21, 3.5.21",
				"spec.version: component etcd version 3.5.21 is declared twice (v3.5.21 and 3.5.21 are the same version); remove one of the two ComponentVersion documents",
			},
		},
		{
			"release without version",
			func(vs *values) { vs.releases[1].Version = release.Version{} },
			[]string{
				"spec: release has no version; set spec.version, e.g. v26.06",
				`spec.rules[0].from: rule upgrades from v26.03, which has no release; known releases: , v26.06; or make from a range, which may name versions without releases`,
			},
		},
		{
			"component without name and version",
			func(vs *values) {
				vs.components = append(vs.components, release.ComponentVersion{Handler: "x"})
			},
			[]string{
				"spec: component version has no name; set spec.name, e.g. etcd",
				"spec: component version has no version; set spec.version, e.g. v3.5.21",
			},
		},
		{
			"no type and nothing to infer it from",
			func(vs *values) { vs.components[1].Type, vs.components[1].Handler = "", "" },
			[]string{"spec: component version has no type; set spec.type to inline, manifest, exec or a registered type"},
		},
		{
			"ambiguous type",
			func(vs *values) { vs.components[0].Command = &release.Command{Args: []string{"x"}} },
			[]string{"spec.type: component version has no type, and handler and command are both set: which one runs is not clear; set type: inline to use handler or type: exec to use command (and remove the other)"},
		},
		{
			"inline without handler",
			func(vs *values) { vs.components[1].Handler = "" },
			[]string{"spec.type: an inline component needs a handler; set spec.handler to the name of a registered handler"},
		},
		{
			"exec without command",
			func(vs *values) {
				vs.components[2].Type, vs.components[2].Command = release.TypeExec, &release.Command{}
			},
			[]string{`spec.command: an exec component needs a command; set spec.command.args to an argv list, e.g. [/usr/bin/upgrade, --to, "{{.Component.Version}}"]`},
		},
		{
			"manifest without manifests",
			func(vs *values) { vs.components[1].Type = release.TypeManifest },
			[]string{"spec.type: a manifest component needs manifests; add spec.manifests entries with file or template"},
		},
		{
			"empty manifest",
			func(vs *values) {
				vs.components[1].Type = release.TypeManifest
				vs.components[1].Manifests = []release.Manifest{{Name: "m"}}
			},
			[]string{"spec.manifests[0]: a manifest needs file or template; set file (relative to the catalog root) or template (inline YAML)"},
		},
		{
			"registered type needs nothing",
			func(vs *values) { vs.components[1].Type, vs.components[1].Handler = "helm", "" },
			nil,
		},
		{
			"before other than all",
			func(vs *values) { vs.components[1].Before = "etcd" },
			[]string{`spec.before: before must be "all", got "etcd"; write before: all, or remove the field`},
		},
		{
			"negative attempts",
			func(vs *values) { vs.components[1].Retries = &release.Retries{Attempts: -1} },
			[]string{"spec.retries.attempts: attempts must be at least 1, got -1; set the total number of attempts, e.g. 3"},
		},
		{
			"health check without name",
			func(vs *values) { vs.components[1].HealthChecks = []release.HealthCheck{{Name: "ok"}, {}} },
			[]string{"spec.healthChecks[1]: health check has no name; set name to a check the applier knows, e.g. deployment-ready"},
		},
		{
			"rule to a version without release",
			func(vs *values) { vs.paths[0].Rules[0].To = v("v26.12") },
			[]string{"spec.rules[0].to: rule upgrades to v26.12, which has no release; known releases: v26.03, v26.06"},
		},
		{
			"rule on a track without releases",
			func(vs *values) { vs.paths[0].Track = "kubernetes" },
			[]string{
				"spec.rules[0].from: rule upgrades from v26.03, which has no release on track kubernetes; add a Release document for it; or make from a range, which may name versions without releases",
				"spec.rules[0].to: rule upgrades to v26.06, which has no release on track kubernetes; add a Release document for it",
			},
		},
		{
			"exact from without a release (a dangling reference)",
			func(vs *values) { vs.paths[0].Rules[0].From = release.MustParseConstraint("v26.60") },
			[]string{"spec.rules[0].from: rule upgrades from v26.60, which has no release; known releases: v26.03, v26.06; or make from a range, which may name versions without releases"},
		},
		{
			"a range from needs no release",
			func(vs *values) { vs.paths[0].Rules[0].From = release.MustParseConstraint(">= v26.01, < v26.06") },
			nil,
		},
		{
			"version listed twice with conflicting flags",
			func(vs *values) {
				yes := true
				vs.paths[0].Versions = []release.VersionInfo{{Version: v("v26.06"), Installable: &yes}, {Version: v("26.6"), Installable: &no}}
			},
			[]string{"spec.versions[1].version: version 26.6 is listed twice with different flags (v26.06 and 26.6 are the same version); list each version once, with the flags it should have"},
		},
		{
			"version listed twice with the same flags",
			func(vs *values) {
				vs.paths[0].Versions = []release.VersionInfo{{Version: v("v26.06"), Deprecated: "old"}, {Version: v("26.6"), Deprecated: "old"}}
			},
			nil,
		},
		{
			"rule without from and to",
			func(vs *values) { vs.paths[0].Rules[0] = release.Rule{} },
			[]string{
				`spec.rules[0]: rule has no from; set from to a version or a range, e.g. ">= v26.06-rc.1, < v26.06"`,
				"spec.rules[0]: rule has no to; set to to the version the rule upgrades to",
			},
		},
		{
			"risks without name and twice",
			func(vs *values) {
				vs.paths[0].Rules[0].Risks = []release.Risk{{Name: "a"}, {Message: "m"}, {Name: "a"}}
			},
			[]string{
				"spec.rules[0].risks[1]: risk has no name; name it: callers accept risks by name",
				"spec.rules[0].risks[2].name: risk a is listed twice; remove one of them",
			},
		},
		{
			"checks without name",
			func(vs *values) {
				vs.paths[0].Rules[0].PreChecks = []release.Check{{Required: true}}
				vs.paths[0].Rules[0].PostChecks = []release.Check{{Name: "ok"}, {}}
			},
			[]string{
				"spec.rules[0].postChecks[1]: check has no name; name the registered check to run",
				"spec.rules[0].preChecks[0]: check has no name; name the registered check to run",
			},
		},
		{
			"version flags",
			func(vs *values) {
				vs.paths[0].Versions = []release.VersionInfo{
					{Version: v("v26.03"), Installable: &no},
					{},
					{Version: v("v26.04"), Deprecated: "never released"},
				}
			},
			[]string{
				"spec.versions[1]: entry has no version; set version",
				"spec.versions[2].version: version v26.04 has no release; known releases: v26.03, v26.06",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := newValues()
			tt.change(&vs)
			c, err := vs.catalog()
			if tt.want == nil {
				require.NoError(t, err)
				require.NotNil(t, c)
				return
			}
			require.Error(t, err, "NewCatalog accepted the change")
			assert.Nil(t, c)
			assert.ErrorIs(t, err, release.ErrInvalidCatalog)
			n := "1 problem"
			if len(tt.want) > 1 {
				n = strconv.Itoa(len(tt.want)) + " problems"
			}
			assert.Equal(t, "release: invalid catalog: "+n+"\n  "+strings.Join(tt.want, "\n  "), err.Error())
		})
	}
}

// LoadDir refuses a path that is a file, or a directory without catalog
// documents: a mistyped path would load as an empty catalog, and
// `hopdag validate` would say ok.
func TestLoadDirRefusesFileAndEmpty(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "releases.yaml")
	require.NoError(t, os.WriteFile(file, []byte("apiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata: {name: r}\nspec: {version: v1.0}\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "empty", ".github"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty", "README.md"), []byte("# not a catalog\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty", ".github", "ci.yaml"), []byte("on: push\n"), 0o644))
	for _, tc := range []struct{ path, want string }{
		{file, "release: catalog directory: " + file + " is a file, not a directory: give the directory that holds the catalog (" + dir + ")"},
		{filepath.Join(dir, "empty"), "release: invalid catalog: " + filepath.Join(dir, "empty") + " holds no catalog document: no .yaml or .yml file in it (hidden directories and Helm charts left out) has a Release, ComponentVersion or UpgradePath; check the path"},
	} {
		_, err := release.LoadDir(tc.path)
		assert.EqualError(t, err, tc.want)
	}
	_, err := release.LoadDir(filepath.Join(dir, "empty"))
	assert.ErrorIs(t, err, release.ErrInvalidCatalog)
	c, err := release.LoadDir(dir)
	require.NoError(t, err, "the directory holding the file")
	assert.Len(t, c.Releases, 1)
}
