package rollout_test

import (
	"context"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/runner"
)

// updatedCount reads "N of 5 updated" in a waiting message.
var updatedCount = regexp.MustCompile(`: (\d+) of (\d+) updated$`)

// TestDaemonSetWaiting upgrades the DaemonSet on the 5 fake nodes through
// an Executor: while the readiness wait polls, the component reports what
// it waits for, a ComponentWaiting event per change, each naming the
// DaemonSet and kstatus's count, and the updated count goes up as kwok
// makes the new pods Ready one node at a time.
func TestDaemonSetWaiting(t *testing.T) {
	t.Parallel()
	_, ns := setup(t)
	m := manifest(t, ns)
	v1 := component("agent", "v1.0", ns, "DaemonSet", daemonSet("v1"), time.Minute)
	v2 := component("agent", "v2.0", ns, "DaemonSet", daemonSet("v2"), time.Minute)
	_, err := run(t, m, nil, v1)
	require.NoError(t, err)

	g, err := dag.New([]dag.Node{{Name: "agent", From: v1, To: v2}})
	require.NoError(t, err)
	h := path.Hop{From: v1.Version, To: v2.Version}
	p := &runner.Plan{Route: &path.Route{From: h.From, To: h.To, Hops: []path.Hop{h}}, Hops: []*runner.HopPlan{{Hop: h, Graph: g}}}
	var mu sync.Mutex
	var got []string
	obs := runner.ObserverFunc(func(ev runner.Event) {
		if ev.Type == runner.ComponentWaiting {
			mu.Lock()
			got = append(got, ev.Reason)
			mu.Unlock()
		}
	})
	_, err = runner.New(m, runner.WithBlockingObserver(obs)).Execute(context.Background(), p, nil)
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	t.Logf("waiting messages: %q", got)
	require.NotEmpty(t, got, "no ComponentWaiting event while the DaemonSet rolled out")
	var counts []int
	for i, msg := range got {
		assert.Regexp(t, `^waiting for DaemonSet `+regexp.QuoteMeta(ns)+`/agent: `, msg, "message %d", i)
		if i > 0 {
			assert.NotEqual(t, got[i-1], msg, "message %d repeats the one before: one event per change", i)
		}
		if m := updatedCount.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			assert.Equal(t, strconv.Itoa(nodes), m[2], "desired in %q", msg)
			counts = append(counts, n)
		}
	}
	require.GreaterOrEqual(t, len(counts), 2, "the updated count was reported fewer than twice: %q", got)
	for i := 1; i < len(counts); i++ {
		assert.Greater(t, counts[i], counts[i-1], "the updated count goes up: %v", counts)
	}
}
