package dag

import (
	"github.com/hopdag/hopdag/internal/cputime"

	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

func TestBuildCatalogTransitions(t *testing.T) {
	c := loadCatalog(t)
	tests := []struct {
		from, to string
		batches  [][]string
		critical []string
		length   time.Duration
	}{
		{
			// etcd, containerd, coredns and metrics-server do not change;
			// kubernetes-master still waits for bkeagent through etcd and
			// containerd.
			from: "v26.06-rc.2", to: "v26.06-rc.3",
			batches: [][]string{
				{"pre-upgrade-resources"},
				{"bkeagent", "provider"},
				{"kubernetes-master"},
				{"calico", "kube-proxy", "kubernetes-worker"},
			},
			critical: []string{"pre-upgrade-resources", "bkeagent", "kubernetes-master", "kubernetes-worker"},
			length:   20*time.Second + 60*time.Second + 300*time.Second + 240*time.Second,
		},
		{
			from: "v26.03", to: "v26.06",
			batches: [][]string{
				{"pre-upgrade-resources"},
				{"bkeagent", "provider"},
				{"containerd", "etcd"},
				{"kubernetes-master"},
				{"calico", "coredns", "kube-proxy", "kubernetes-worker"},
				{"metrics-server"},
			},
			critical: []string{"pre-upgrade-resources", "bkeagent", "etcd", "kubernetes-master", "kubernetes-worker"},
			length:   (20 + 60 + 180 + 300 + 240) * time.Second,
		},
		{
			from: "v26.06", to: "v26.09",
			batches: [][]string{
				{"pre-upgrade-resources"},
				{"bkeagent", "provider"},
				{"containerd", "etcd"},
				{"kubernetes-master"},
				{"calico", "coredns", "kube-proxy", "kubernetes-worker"},
				{"metrics-server"},
			},
			critical: []string{"pre-upgrade-resources", "bkeagent", "etcd", "kubernetes-master", "kubernetes-worker"},
			length:   (20 + 60 + 180 + 300 + 240) * time.Second,
		},
		{
			// Only provider changes between rc.3 and GA.
			from: "v26.06-rc.3", to: "v26.06",
			batches:  [][]string{{"provider"}},
			critical: []string{"provider"},
			length:   90 * time.Second,
		},
		{
			// Only provider changes between rc.1 and rc.2.
			from: "v26.06-rc.1", to: "v26.06-rc.2",
			batches:  [][]string{{"provider"}},
			critical: []string{"provider"},
			length:   90 * time.Second,
		},
		{
			from: "v26.06", to: "v26.06",
			batches: [][]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.from+"->"+tt.to, func(t *testing.T) {
			g, err := Build(c, rel(t, c, tt.from), rel(t, c, tt.to))
			require.NoError(t, err)
			assert.Equal(t, tt.batches, batches(g))
			path, length := g.criticalNames()
			if tt.critical == nil {
				tt.critical = []string{}
			}
			assert.Equal(t, tt.critical, path)
			assert.Equal(t, tt.length, length)
			assert.Empty(t, g.Removed())
			from, to := g.Releases()
			assert.Equal(t, tt.from, from.Version.Original())
			assert.Equal(t, tt.to, to.Version.Original())
		})
	}
}

func TestBuildRC2ToRC3Nodes(t *testing.T) {
	c := loadCatalog(t)
	g, err := Build(c, rel(t, c, "v26.06-rc.2"), rel(t, c, "v26.06-rc.3"))
	require.NoError(t, err)
	require.Equal(t, []string{"bkeagent", "calico", "kube-proxy", "kubernetes-master", "kubernetes-worker", "pre-upgrade-resources", "provider"}, g.Names())
	deps := map[string][]string{}
	for i := 0; i < g.Len(); i++ {
		nd := g.Node(i)
		deps[nd.Name] = nd.Deps
		assert.Equal(t, names(g, g.Deps(i)), nd.Deps, "Deps(%d) and Node.Deps agree", i)
		j, ok := g.Index(nd.Name)
		assert.True(t, ok)
		assert.Equal(t, i, j)
		require.NotNil(t, nd.From, nd.Name)
		require.NotNil(t, nd.To, nd.Name)
		assert.False(t, nd.From.Version.Equal(nd.To.Version), nd.Name)
		assert.Equal(t, nd.To.ExpectedDuration.Duration, nd.Duration)
	}
	assert.Equal(t, map[string][]string{
		"pre-upgrade-resources": {},
		"bkeagent":              {"pre-upgrade-resources"},
		"provider":              {"pre-upgrade-resources"},
		// through etcd and containerd (unchanged) to bkeagent
		"kubernetes-master": {"bkeagent", "pre-upgrade-resources"},
		"kubernetes-worker": {"kubernetes-master", "pre-upgrade-resources"},
		"kube-proxy":        {"kubernetes-master", "pre-upgrade-resources"},
		"calico":            {"kubernetes-master", "pre-upgrade-resources"},
	}, deps)
	km, _ := g.Index("kubernetes-master")
	assert.Equal(t, "v1.33.2", g.Node(km).From.Version.Original())
	assert.Equal(t, "v1.33.3", g.Node(km).To.Version.Original())
	assert.Equal(t, []string{"calico", "kube-proxy", "kubernetes-worker"}, names(g, g.Dependents(km)))
	assert.Equal(t, []string{"bkeagent", "pre-upgrade-resources"}, names(g, g.Ancestors(km)))
	pre, _ := g.Index("pre-upgrade-resources")
	assert.Equal(t, []string{"bkeagent", "calico", "kube-proxy", "kubernetes-master", "kubernetes-worker", "provider"}, names(g, g.Descendants(pre)))
	assert.Equal(t, 2, g.Level(km))
	_, ok := g.Index("etcd")
	assert.False(t, ok, "unchanged etcd is not a node")

	// The reduction drops pre-upgrade-resources where bkeagent implies it.
	r := g.TransitiveReduction()
	assert.Equal(t, []string{"bkeagent"}, r.Node(km).Deps)
	assert.Equal(t, batches(g), batches(r))
	assert.Equal(t, 6, r.NumEdges())
	assert.Equal(t, 10, g.NumEdges())
}

func TestBuildFromNothingAndIncludeUnchanged(t *testing.T) {
	c := loadCatalog(t)
	to := rel(t, c, "v26.06-rc.3")

	g, err := Build(c, nil, to)
	require.NoError(t, err)
	assert.Equal(t, 11, g.Len())
	for i := 0; i < g.Len(); i++ {
		assert.Nil(t, g.Node(i).From, "everything is new")
	}
	from, _ := g.Releases()
	assert.Nil(t, from)

	all, err := Build(c, rel(t, c, "v26.06-rc.2"), to, IncludeUnchanged())
	require.NoError(t, err)
	assert.Equal(t, batches(g), batches(all))
	etcd, ok := all.Index("etcd")
	require.True(t, ok)
	assert.Equal(t, all.Node(etcd).From, all.Node(etcd).To, "a forced re-run keeps the version")
	km, _ := all.Index("kubernetes-master")
	assert.Equal(t, []string{"containerd", "etcd", "pre-upgrade-resources"}, all.Node(km).Deps)
}

// Small catalogs built in code.

func comp(name, version string, deps ...string) release.ComponentVersion {
	return release.ComponentVersion{
		Name: name, Version: release.MustParseVersion(version), Type: release.TypeInline, Handler: "noop",
		Dependencies: deps, ExpectedDuration: release.D(10 * time.Second),
	}
}

func first(cv release.ComponentVersion) release.ComponentVersion {
	cv.Before = release.BeforeAll
	return cv
}

func ship(version string, cvs ...release.ComponentVersion) release.Release {
	r := release.Release{Name: "r-" + version, Version: release.MustParseVersion(version)}
	for _, cv := range cvs {
		r.Components = append(r.Components, release.ComponentRef{Name: cv.Name, Version: cv.Version})
	}
	return r
}

// catalogOf makes a catalog of two releases v1.0 and v2.0 and every
// component version they ship.
func catalogOf(t testing.TB, from, to []release.ComponentVersion) (*release.Catalog, *release.Release, *release.Release) {
	t.Helper()
	seen := map[string]bool{}
	var cvs []release.ComponentVersion
	for _, cv := range append(append([]release.ComponentVersion{}, from...), to...) {
		if k := cv.Key(); !seen[k] {
			seen[k] = true
			cvs = append(cvs, cv)
		}
	}
	c, err := release.NewCatalog([]release.Release{ship("v1.0", from...), ship("v2.0", to...)}, cvs, nil)
	require.NoError(t, err)
	return c, rel(t, c, "v1.0"), rel(t, c, "v2.0")
}

func TestBuildThroughUnchangedChains(t *testing.T) {
	// a -> b -> c -> d; b and c unchanged: a depends on d.
	c, from, to := catalogOf(t,
		[]release.ComponentVersion{comp("a", "v1.0.0", "b"), comp("b", "v1.0.0", "c"), comp("c", "v1.0.0", "d"), comp("d", "v1.0.0")},
		[]release.ComponentVersion{comp("a", "v1.1.0", "b"), comp("b", "v1.0.0", "c"), comp("c", "v1.0.0", "d"), comp("d", "v1.1.0")})
	g, err := Build(c, from, to)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"d"}, {"a"}}, batches(g))
	a, _ := g.Index("a")
	assert.Equal(t, []string{"d"}, g.Node(a).Deps)
}

func TestBuildUnchangedLatticeIsLinear(t *testing.T) {
	// 2 x 200 unchanged nodes, each depending on both nodes of the layer
	// below: 2^200 paths from top to bottom, which a path-by-path search
	// would never finish.
	const layers = 200
	var old, cur []release.ComponentVersion
	name := func(l, k int) string { return fmt.Sprintf("u%03d-%d", l, k) }
	for l := 0; l < layers; l++ {
		for k := 0; k < 2; k++ {
			var deps []string
			if l > 0 {
				deps = []string{name(l-1, 0), name(l-1, 1)}
			} else {
				deps = []string{"bottom"}
			}
			old = append(old, comp(name(l, k), "v1.0.0", deps...))
		}
	}
	cur = append(cur, old...)
	old = append(old, comp("top", "v1.0.0", name(layers-1, 0), name(layers-1, 1)), comp("bottom", "v1.0.0"))
	cur = append(cur, comp("top", "v2.0.0", name(layers-1, 0), name(layers-1, 1)), comp("bottom", "v2.0.0"))
	c, from, to := catalogOf(t, old, cur)
	start := cputime.Self()
	g, err := Build(c, from, to)
	require.NoError(t, err)
	assert.Less(t, cputime.Self()-start, 2*time.Second, "CPU time")
	assert.Equal(t, [][]string{{"bottom"}, {"top"}}, batches(g))
}

func TestBuildBeforeAll(t *testing.T) {
	c, from, to := catalogOf(t,
		[]release.ComponentVersion{first(comp("setup", "v1.0.0")), first(comp("crds", "v1.0.0", "setup")), comp("app", "v1.0.0"), comp("db", "v1.0.0")},
		[]release.ComponentVersion{first(comp("setup", "v1.1.0")), first(comp("crds", "v1.1.0", "setup")), comp("app", "v1.1.0", "db"), comp("db", "v1.1.0")})
	g, err := Build(c, from, to)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"setup"}, {"crds"}, {"db"}, {"app"}}, batches(g))
	app, _ := g.Index("app")
	assert.Equal(t, []string{"crds", "db", "setup"}, g.Node(app).Deps)

	// An unchanged `before: all` component orders nothing.
	c, from, to = catalogOf(t,
		[]release.ComponentVersion{first(comp("setup", "v1.0.0")), comp("app", "v1.0.0"), comp("db", "v1.0.0")},
		[]release.ComponentVersion{first(comp("setup", "v1.0.0")), comp("app", "v1.1.0"), comp("db", "v1.1.0")})
	g, err = Build(c, from, to)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"app", "db"}}, batches(g))
}

func TestBuildRemovedAndNew(t *testing.T) {
	c, from, to := catalogOf(t,
		[]release.ComponentVersion{comp("a", "v1.0.0"), comp("gone", "v1.0.0"), comp("old", "v0.9")},
		[]release.ComponentVersion{comp("a", "v1.1.0", "fresh"), comp("fresh", "v1.0.0")})
	g, err := Build(c, from, to)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"fresh"}, {"a"}}, batches(g))
	fresh, _ := g.Index("fresh")
	assert.Nil(t, g.Node(fresh).From)
	assert.Equal(t, []release.ComponentRef{
		{Name: "gone", Version: release.MustParseVersion("v1.0.0")},
		{Name: "old", Version: release.MustParseVersion("v0.9")},
	}, g.Removed())
}

func TestBuildErrors(t *testing.T) {
	t.Run("cycle through unchanged components", func(t *testing.T) {
		// a -> u -> a with u unchanged: still a cycle, and it must not hang.
		c, from, to := catalogOf(t,
			[]release.ComponentVersion{comp("a", "v1.0.0", "u"), comp("u", "v1.0.0", "a")},
			[]release.ComponentVersion{comp("a", "v1.1.0", "u"), comp("u", "v1.0.0", "a")})
		_, err := Build(c, from, to)
		require.ErrorIs(t, err, ErrCycle)
		var ce *CycleError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, [][]string{{"a", "u", "a"}}, ce.Cycles)
		assert.EqualError(t, err, "dag: 1 cycle: a -> u -> a")
	})
	t.Run("cycle among unchanged components only", func(t *testing.T) {
		c, from, to := catalogOf(t,
			[]release.ComponentVersion{comp("a", "v1.0.0"), comp("x", "v1.0.0", "y"), comp("y", "v1.0.0", "z"), comp("z", "v1.0.0", "x")},
			[]release.ComponentVersion{comp("a", "v1.1.0"), comp("x", "v1.0.0", "y"), comp("y", "v1.0.0", "z"), comp("z", "v1.0.0", "x")})
		_, err := Build(c, from, to)
		assert.EqualError(t, err, "dag: 1 cycle: x -> y -> z -> x")
	})
	t.Run("before all that depends on a later component", func(t *testing.T) {
		c, from, to := catalogOf(t,
			[]release.ComponentVersion{first(comp("setup", "v1.0.0")), comp("app", "v1.0.0")},
			[]release.ComponentVersion{first(comp("setup", "v1.1.0", "app")), comp("app", "v1.1.0")})
		_, err := Build(c, from, to)
		assert.EqualError(t, err, "dag: 1 cycle: app -> setup -> app")
	})
	t.Run("several cycles", func(t *testing.T) {
		cvs := []release.ComponentVersion{
			comp("c", "v1.0.0", "a"), comp("a", "v1.0.0", "b"), comp("b", "v1.0.0", "c"),
			comp("y", "v1.0.0", "x"), comp("x", "v1.0.0", "y"), comp("ok", "v1.0.0", "x"),
		}
		c, err := release.NewCatalog([]release.Release{ship("v1.0", cvs...)}, cvs, nil)
		require.NoError(t, err)
		_, err = Build(c, nil, rel(t, c, "v1.0"))
		assert.EqualError(t, err, "dag: 2 cycles: a -> b -> c -> a; x -> y -> x")
	})
	t.Run("missing dependency names both", func(t *testing.T) {
		// A release assembled in code, outside the catalog's checks.
		c := loadCatalog(t)
		to := &release.Release{Version: release.MustParseVersion("v99.0"), Components: []release.ComponentRef{
			{Name: "kubernetes-master", Version: release.MustParseVersion("v1.33.3")},
			{Name: "calico", Version: release.MustParseVersion("v3.29.4")},
		}}
		_, err := Build(c, nil, to)
		require.ErrorIs(t, err, ErrMissingDependency)
		assert.EqualError(t, err, "dag: kubernetes-master depends on containerd, which release v99.0 does not ship\n"+
			"dag: kubernetes-master depends on etcd, which release v99.0 does not ship")
		var de *DependencyError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, DependencyError{Component: "kubernetes-master", Dependency: "containerd", Release: "v99.0", Err: ErrMissingDependency}, *de)
	})
	t.Run("unknown component version", func(t *testing.T) {
		c := loadCatalog(t)
		to := &release.Release{Version: release.MustParseVersion("v99.0"), Components: []release.ComponentRef{
			{Name: "etcd", Version: release.MustParseVersion("v9.9.9")},
		}}
		_, err := Build(c, nil, to)
		require.ErrorIs(t, err, ErrUnknownComponent)
		assert.EqualError(t, err, "dag: release v99.0 ships etcd v9.9.9, which the catalog does not have")
	})
	t.Run("component shipped twice", func(t *testing.T) {
		c := loadCatalog(t)
		v := release.MustParseVersion("v1.12.0")
		to := &release.Release{Version: release.MustParseVersion("v99.0"), Components: []release.ComponentRef{{Name: "coredns", Version: v}, {Name: "coredns", Version: v}}}
		_, err := Build(c, nil, to)
		require.ErrorIs(t, err, ErrDuplicateNode)
	})
	t.Run("no release", func(t *testing.T) {
		_, err := Build(loadCatalog(t), nil, nil)
		require.Error(t, err)
		_, err = Build(nil, nil, &release.Release{})
		require.Error(t, err)
	})
}

func TestBuildMissingAndCycleTogether(t *testing.T) {
	c := loadCatalog(t)
	cvs := []release.ComponentVersion{comp("a", "v1.0.0", "b"), comp("b", "v1.0.0", "a")}
	c2, err := release.NewCatalog(append(append([]release.Release{}, c.Releases...), ship("v99.0", cvs...)), append(append([]release.ComponentVersion{}, c.Components...), cvs...), nil)
	require.NoError(t, err)
	to := &release.Release{Version: release.MustParseVersion("v99.1"), Components: []release.ComponentRef{
		{Name: "a", Version: release.MustParseVersion("v1.0.0")},
		{Name: "b", Version: release.MustParseVersion("v1.0.0")},
		{Name: "calico", Version: release.MustParseVersion("v3.29.4")},
	}}
	_, err = Build(c2, nil, to)
	require.ErrorIs(t, err, ErrCycle)
	require.ErrorIs(t, err, ErrMissingDependency)
	assert.EqualError(t, err, "dag: calico depends on kubernetes-master, which release v99.1 does not ship\ndag: 1 cycle: a -> b -> a")
	assert.False(t, errors.Is(err, ErrSelfDependency))
}
