package runner_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

func TestSmokeCatalog(t *testing.T) {
	c, err := release.LoadDir("../testdata/catalog")
	require.NoError(t, err)
	plan, err := runner.NewPlan(c, release.MustParseVersion("v26.06-rc.2"), release.MustParseVersion("v26.09"))
	require.NoError(t, err)
	t.Log(plan.String())
	fake := runnertest.New().Script("etcd", runnertest.Script{FailAlways: true, Permanent: true})
	ok := func(context.Context, runner.CheckTask) error { return nil }
	e := runner.New(fake, runner.WithCheck("cluster-healthy", ok), runner.WithCheck("nodes-ready", ok), runner.WithCheck("etcd-backup", ok), runner.WithCheck("registry-mirror-reachable", ok), runner.WithCheck("conformance-smoke", ok))
	st, err := e.Execute(context.Background(), plan, nil)
	require.Error(t, err)
	t.Log(err)
	for _, h := range st.Hops {
		for _, c := range h.Components {
			t.Log(h.From, h.To, c.Name, c.Phase, c.Code, c.Reason)
		}
	}
	assert.Equal(t, runner.Failed, st.Phase)
}
