package runner_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// A route across tracks runs like a one-track route: each hop upgrades the
// components of the track it moves, and the status records the track.
func TestExecuteRouteAcrossTracks(t *testing.T) {
	c, err := release.LoadDir("../testdata/two-track")
	require.NoError(t, err)
	from, err := path.ParseState("platform=13.01.0,kubernetes=v1.33.0")
	require.NoError(t, err)
	to, err := path.ParseState("platform=27.03.0,kubernetes=v1.35.0")
	require.NoError(t, err)
	route, err := path.ResolveState(c, from, to)
	require.NoError(t, err)
	p, err := runner.PlanRoute(c, route)
	require.NoError(t, err)

	var mu sync.Mutex
	var ran []string
	e := runner.New(runner.RunnerFunc(func(_ context.Context, task runner.Task) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, fmt.Sprintf("%d %s %s", task.HopIndex+1, task.Component, task.To.Version))
		return nil
	}), runner.WithCheck("iso-uploaded", func(context.Context, runner.CheckTask) error { return nil }))
	st, err := e.Execute(context.Background(), p, nil)
	require.NoError(t, err)
	assert.Equal(t, runner.Succeeded, st.Phase)
	assert.Equal(t, "kubernetes=v1.33.0,platform=13.01.0", st.From)
	assert.Equal(t, "kubernetes=v1.35.0,platform=27.03.0", st.To)
	var tracks []string
	for _, h := range st.Hops {
		tracks = append(tracks, h.Track+" "+h.To)
	}
	assert.Equal(t, []string{"platform 13.01.2", "kubernetes v1.34.1", "platform 27.03.0", "kubernetes v1.35.0"}, tracks)
	assert.Equal(t, []string{
		"1 sw-deploy 13.01.2", "1 sysinv 13.01.2",
		"2 kube-control-plane v1.34.1", "2 kubelet v1.34.1",
		"3 sw-deploy 27.03.0", "3 sysinv 27.03.0",
		"4 kube-control-plane v1.35.0", "4 kubelet v1.35.0",
	}, ran, "each hop runs its track's components, in dependency order")
}
