package runner_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(file, got, 0o644))
	}
	want, err := os.ReadFile(file)
	require.NoError(t, err, "golden file missing: run go test -run %s -update", t.Name())
	assert.Equal(t, string(want), string(got), "%s (-want +got); rewrite with -update if the change is intended", file)
}

var allChecks = []string{"cluster-healthy", "nodes-ready", "etcd-backup", "registry-mirror-reachable", "conformance-smoke"}

// catalogPlan is the plan of the sample catalog from v26.06-rc.2 to v26.09.
func catalogPlan(t *testing.T, opts ...runner.PlanOption) (*runner.Plan, error) {
	t.Helper()
	cat, err := release.LoadDir("../testdata/catalog")
	require.NoError(t, err)
	return runner.NewPlan(cat, path.MustParseState("v26.06-rc.2"), path.MustParseState("v26.09"), opts...)
}

func TestPlanGolden(t *testing.T) {
	p, err := catalogPlan(t)
	require.NoError(t, err)
	t.Run("text", func(t *testing.T) { golden(t, "plan.golden.txt", []byte(p.String())) })
	t.Run("json", func(t *testing.T) {
		b, err := json.MarshalIndent(p, "", "  ")
		require.NoError(t, err)
		golden(t, "plan.golden.json", append(b, '\n'))
	})
	t.Run("yaml", func(t *testing.T) {
		b, err := yaml.Marshal(p)
		require.NoError(t, err)
		golden(t, "plan.golden.yaml", b)
	})
	t.Run("deterministic", func(t *testing.T) {
		for range 5 {
			again, err := catalogPlan(t)
			require.NoError(t, err)
			require.Equal(t, p.String(), again.String(), "String of the same plan built again")
		}
	})
}

// Risks and deprecations of a hop show in the dry run.
func TestPlanGoldenEdges(t *testing.T) {
	cat, err := release.LoadDir("../testdata/catalog")
	require.NoError(t, err)
	tests := []struct {
		name     string
		from, to string
		opts     []path.Option
	}{
		{"risk", "v26.06", "v26.09-rc.1", []path.Option{path.AcceptRisks("containerd-v2-config")}},
		{"deprecated-avoided", "v26.03", "v26.06.1", nil}, // a clean route through v26.06 beats the deprecated edge
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := runner.NewPlan(cat, path.State{"": release.MustParseVersion(tt.from)}, path.State{"": release.MustParseVersion(tt.to)}, runner.PathOptions(tt.opts...))
			require.NoError(t, err)
			golden(t, "plan-"+tt.name+".golden.txt", []byte(p.String()))
		})
	}
	t.Run("risk not accepted", func(t *testing.T) {
		_, err := runner.NewPlan(cat, path.MustParseState("v26.06"), path.MustParseState("v26.09-rc.1"))
		require.ErrorIs(t, err, path.ErrNoRoute)
	})
}

func TestPlanFacts(t *testing.T) {
	p, err := catalogPlan(t)
	require.NoError(t, err)
	require.Len(t, p.Hops, 3)
	assert.Equal(t, 19, p.Total(), "Total")
	h := p.Hops[0]
	assert.Equal(t, "v26.06-rc.2 -> v26.06-rc.3", h.Name(), "Name")
	assert.Equal(t, [][]string{{"pre-upgrade-resources"}, {"bkeagent", "provider"}, {"kubernetes-master"}, {"calico", "kube-proxy", "kubernetes-worker"}}, h.Batches(), "Batches")
	cp, d := h.CriticalPath()
	assert.Equal(t, []string{"pre-upgrade-resources", "bkeagent", "kubernetes-master", "kubernetes-worker"}, cp, "CriticalPath")
	assert.Equal(t, 10*time.Minute+20*time.Second, d, "CriticalPath length")
	assert.Equal(t, 15*time.Minute+5*time.Second, h.Work(), "Work")
	assert.Equal(t, []release.Check{{Name: "cluster-healthy", Required: true}}, h.PreChecks, "PreChecks")

	// DAGOptions reach dag.Build: IncludeUnchanged forces every component in.
	all, err := catalogPlan(t, runner.DAGOptions(dag.IncludeUnchanged()))
	require.NoError(t, err)
	assert.Equal(t, 1, p.Hops[1].Graph.Len(), "hop 2 components that change")
	assert.Greater(t, all.Hops[1].Graph.Len(), 1, "hop 2 components with IncludeUnchanged")
}

// validating refuses components of one type, as a router without a
// runner registered for it would.
type validating struct {
	runner.Runner
	refuse string
}

func (v validating) Validate(cv *release.ComponentVersion) error {
	if cv.Type == v.refuse {
		return fmt.Errorf("no runner for type %q", cv.Type)
	}
	return nil
}

func TestNewPlanErrors(t *testing.T) {
	ok := func(context.Context, runner.CheckTask) error { return nil }
	withChecks := func(names ...string) []runner.Option {
		var opts []runner.Option
		for _, n := range names {
			opts = append(opts, runner.WithCheck(n, ok))
		}
		return opts
	}
	cat, err := release.LoadDir("../testdata/catalog")
	require.NoError(t, err)
	tests := []struct {
		name     string
		from, to string
		exec     *runner.Executor
		wantIs   error
		wantMsgs []string
	}{
		{name: "no route", from: "v26.09", to: "v26.03", wantIs: path.ErrNoRoute},
		{name: "unknown version", from: "v26.06-rc.2", to: "v99.0", wantIs: path.ErrUnknownVersion},
		{
			name: "checks with nothing registered", from: "v26.06-rc.2", to: "v26.09",
			exec:   runner.New(runnertest.New(), withChecks("cluster-healthy", "nodes-ready")...),
			wantIs: runner.ErrInvalidPlan,
			wantMsgs: []string{
				"hop 3 v26.06 -> v26.09: check conformance-smoke has no function registered (registered: cluster-healthy, nodes-ready)",
				"hop 3 v26.06 -> v26.09: check etcd-backup has no function registered",
				"hop 3 v26.06 -> v26.09: check registry-mirror-reachable has no function registered",
			},
		},
		{
			name: "component type nothing runs", from: "v26.06-rc.2", to: "v26.09",
			exec:     runner.New(validating{runnertest.New(), release.TypeManifest}, withChecks(allChecks...)...),
			wantIs:   runner.ErrInvalidPlan,
			wantMsgs: []string{`hop 1 v26.06-rc.2 -> v26.06-rc.3: component calico: no runner for type "manifest"`},
		},
		{
			name: "all runnable", from: "v26.06-rc.2", to: "v26.09",
			exec: runner.New(validating{runnertest.New(), "nothing"}, withChecks(allChecks...)...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []runner.PlanOption
			if tt.exec != nil {
				opts = append(opts, runner.ForExecutor(tt.exec))
			}
			p, err := runner.NewPlan(cat, path.State{"": release.MustParseVersion(tt.from)}, path.State{"": release.MustParseVersion(tt.to)}, opts...)
			if tt.wantIs == nil {
				require.NoError(t, err)
				require.NotNil(t, p)
				return
			}
			require.ErrorIs(t, err, tt.wantIs)
			assert.Nil(t, p, "plan with an error")
			for _, m := range tt.wantMsgs {
				assert.Contains(t, err.Error(), m)
			}
		})
	}
	t.Run("problems sorted and listed once", func(t *testing.T) {
		p, err := catalogPlan(t)
		require.NoError(t, err)
		err = runner.New(runnertest.New()).Validate(p)
		require.ErrorIs(t, err, runner.ErrInvalidPlan)
		msgs := strings.Split(strings.TrimPrefix(err.Error(), "runner: invalid plan: "), "\n")
		assert.IsNonDecreasing(t, msgs, "problems in sorted order")
		assert.Len(t, msgs, 8, "one problem per hop and check: %v", msgs)
		assert.Contains(t, msgs, "hop 1 v26.06-rc.2 -> v26.06-rc.3: check cluster-healthy has no function registered (registered: none)")
	})
	t.Run("Execute validates", func(t *testing.T) {
		p, err := catalogPlan(t)
		require.NoError(t, err)
		fake := runnertest.New()
		st, err := runner.New(fake).Execute(context.Background(), p, nil)
		require.ErrorIs(t, err, runner.ErrInvalidPlan)
		assert.Nil(t, st, "status of an invalid plan")
		assert.Empty(t, fake.Records(), "nothing ran")
	})
	t.Run("cycle", func(t *testing.T) {
		v := release.MustParseVersion
		cv := func(name, version string, deps ...string) release.ComponentVersion {
			return release.ComponentVersion{Name: name, Version: v(version), Type: release.TypeInline, Handler: name, Dependencies: deps}
		}
		rel := func(version, comps string) release.Release {
			return release.Release{Version: v(version), Components: []release.ComponentRef{{Name: "a", Version: v(comps)}, {Name: "b", Version: v(comps)}}}
		}
		cat, err := release.NewCatalog(
			[]release.Release{rel("v1.0", "v1.0.0"), rel("v1.1", "v1.1.0")},
			[]release.ComponentVersion{cv("a", "v1.0.0"), cv("b", "v1.0.0"), cv("a", "v1.1.0", "b"), cv("b", "v1.1.0", "a")},
			[]release.UpgradePath{{Rules: []release.Rule{{From: release.MustParseConstraint("v1.0"), To: v("v1.1")}}}},
		)
		require.NoError(t, err)
		_, err = runner.NewPlan(cat, path.State{"": v("v1.0")}, path.State{"": v("v1.1")})
		require.ErrorIs(t, err, dag.ErrCycle)
		assert.Contains(t, err.Error(), "a -> b -> a")
	})
}

// The full sample plan runs end to end.
func TestExecuteCatalogPlan(t *testing.T) {
	ok := func(context.Context, runner.CheckTask) error { return nil }
	var opts []runner.Option
	for _, n := range allChecks {
		opts = append(opts, runner.WithCheck(n, ok))
	}
	fake := runnertest.New()
	e := runner.New(fake, append(opts, runner.WithGroupLimit("nodes", 1), runner.WithClock(fakeClock()))...)
	p, err := catalogPlan(t, runner.ForExecutor(e))
	require.NoError(t, err)
	st, err := e.Execute(context.Background(), p, nil)
	require.NoError(t, err)
	assert.Equal(t, record.Progress{Done: 19, Total: 19}, st.Progress)
	recs := fake.Records()
	for i, h := range p.Hops {
		assert.NoError(t, runnertest.CheckOrder(h.Graph, i, recs), "hop %d order", i+1)
		assert.NoError(t, runnertest.CheckSucceededOnce(i, recs), "hop %d run once", i+1)
	}
	nodes := func(r runnertest.Record) bool {
		cv := p.Hops[r.Hop].Graph.Node(mustIndex(t, p.Hops[r.Hop].Graph, r.Component)).To
		return cv.Group == "nodes"
	}
	assert.NoError(t, runnertest.CheckParallelism(recs, 1, nodes), "group nodes one at a time")
}

func mustIndex(t *testing.T, g *dag.Graph, name string) int {
	i, ok := g.Index(name)
	require.True(t, ok, "%s in graph", name)
	return i
}

// A hop that uses a deprecated edge (or enters a deprecated version)
// because nothing better exists says so in the dry run: text, JSON.
func TestPlanSaysWhyDeprecated(t *testing.T) {
	p := plan1(t, c("app"))
	h := p.Hops[0]
	h.Deprecated = "v1.0 -> v2.0 skips the schema migration"
	h.ToDeprecated = "CVE-2026-1234: do not install"
	h.Why = "every route from v1.0 to v2.0 uses 1 deprecated edge; this is the shortest"
	text := p.String()
	assert.Contains(t, text, "  deprecated: v1.0 -> v2.0 skips the schema migration\n")
	assert.Contains(t, text, "  deprecated version v2.0: CVE-2026-1234: do not install\n")
	assert.Contains(t, text, "  why: every route from v1.0 to v2.0 uses 1 deprecated edge; this is the shortest\n")
	data, err := json.Marshal(p)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"toDeprecated":"CVE-2026-1234: do not install"`)
	assert.Contains(t, string(data), `"why":"every route from v1.0 to v2.0 uses 1 deprecated edge; this is the shortest"`)
}
