package runner_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// t0 is the start of every fake clock, so that times in statuses are
// deterministic.
var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// comp is a node of a test graph: a name, its dependencies and, optionally,
// changes to its target ComponentVersion (timeout, retries, group).
type comp struct {
	name string
	deps []string
	cv   func(*release.ComponentVersion)
}

func c(name string, deps ...string) comp { return comp{name: name, deps: deps} }

// with returns the node with its ComponentVersion changed by f.
func (n comp) with(f func(*release.ComponentVersion)) comp { n.cv = f; return n }

func group(g string) func(*release.ComponentVersion) {
	return func(cv *release.ComponentVersion) { cv.Group = g }
}

func timeout(d time.Duration) func(*release.ComponentVersion) {
	return func(cv *release.ComponentVersion) { cv.Timeout = release.D(d) }
}

func retries(attempts int, backoff, maxBackoff time.Duration) func(*release.ComponentVersion) {
	return func(cv *release.ComponentVersion) {
		cv.Retries = &release.Retries{Attempts: attempts, Backoff: release.D(backoff), MaxBackoff: release.D(maxBackoff)}
	}
}

// graphOf builds a dag.Graph whose nodes all carry From and To versions
// (v1.0.0 -> v1.1.0).
func graphOf(t testing.TB, nodes ...comp) *dag.Graph {
	t.Helper()
	ns := make([]dag.Node, len(nodes))
	for i, n := range nodes {
		to := &release.ComponentVersion{Name: n.name, Version: release.MustParseVersion("v1.1.0"), Type: release.TypeInline, Handler: n.name, Dependencies: n.deps}
		if n.cv != nil {
			n.cv(to)
		}
		from := &release.ComponentVersion{Name: n.name, Version: release.MustParseVersion("v1.0.0")}
		ns[i] = dag.Node{Name: n.name, Deps: n.deps, From: from, To: to}
	}
	g, err := dag.New(ns)
	require.NoError(t, err)
	return g
}

// hop is one hop of a test plan.
type hop struct {
	g         *dag.Graph
	pre, post []release.Check
}

// planOf assembles a plan of hops v1 -> v2 -> ... directly, without a
// catalog.
func planOf(hops ...hop) *runner.Plan {
	v := func(i int) release.Version { return release.MustParseVersion(fmt.Sprintf("v%d.0", i+1)) }
	p := &runner.Plan{Route: &path.Route{From: v(0), To: v(len(hops))}}
	for i, h := range hops {
		ph := path.Hop{From: v(i), To: v(i + 1), PreChecks: h.pre, PostChecks: h.post}
		p.Route.Hops = append(p.Route.Hops, ph)
		p.Hops = append(p.Hops, &runner.HopPlan{Hop: ph, Graph: h.g})
	}
	return p
}

// plan1 is a one-hop plan of the given components.
func plan1(t testing.TB, nodes ...comp) *runner.Plan { return planOf(hop{g: graphOf(t, nodes...)}) }

// result is what an Execute returned.
type result struct {
	st  *record.Status
	err error
}

// start runs Execute on its own goroutine (for tests that move a fake
// clock or cancel while it runs).
func start(ctx context.Context, e *runner.Executor, p *runner.Plan, prev *record.Status) <-chan result {
	ch := make(chan result, 1)
	go func() {
		st, err := e.Execute(ctx, p, prev)
		ch <- result{st, err}
	}()
	return ch
}

// wait returns the result of start, failing the test if Execute has not
// returned within a generous bound (a hang, not a slow machine).
func wait(t testing.TB, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("Execute did not return within 20s")
		return result{}
	}
}

// phases maps component name to phase on hop h.
func phases(st *record.Status, h int) map[string]record.Phase {
	out := map[string]record.Phase{}
	for _, c := range st.Hops[h].Components {
		out[c.Name] = c.Phase
	}
	return out
}

// comp returns the status of a component on hop h, failing the test if it
// is missing.
func compStatus(t testing.TB, st *record.Status, h int, name string) record.ComponentStatus {
	t.Helper()
	cs, ok := st.Component(h, name)
	require.Truef(t, ok, "Status.Component(%d, %q) not found", h, name)
	return *cs
}

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []runner.Event
}

func (r *recorder) Observe(ev runner.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) all() []runner.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// snapshots is a Checkpointer that keeps a deep copy of every status it is
// given.
type snapshots struct {
	mu   sync.Mutex
	all  []*record.Status
	fail func(n int, s *record.Status) error // optional: the error of call n (from 1)
}

func (c *snapshots) Checkpoint(_ context.Context, s *record.Status) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, s.DeepCopy())
	if c.fail != nil {
		return c.fail(len(c.all), s)
	}
	return nil
}

func (c *snapshots) last() *record.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.all) == 0 {
		return nil
	}
	return c.all[len(c.all)-1]
}

func (c *snapshots) list() []*record.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.all)
}

// fakeClock is a runnertest.Clock at t0.
func fakeClock() *runnertest.Clock { return runnertest.NewClock(t0) }

// layered returns n nodes in layers of width nodes, each depending on 1-4
// distinct nodes of the previous layer (seeded): within window positions
// of its own position when window > 0, anywhere in the layer otherwise.
// Durations come from dur, when not nil.
func layered(n, width, window int, seed uint64, dur func(*rand.Rand) time.Duration) []dag.Node {
	rnd := rand.New(rand.NewPCG(seed, 1))
	nodes := make([]dag.Node, n)
	for i := range nodes {
		nodes[i].Name = fmt.Sprintf("c%05d", i)
		if dur != nil {
			nodes[i].Duration = dur(rnd)
		}
		layer, pos := i/width, i%width
		if layer == 0 {
			continue
		}
		lo, hi := 0, width // candidate positions in the previous layer
		if window > 0 {
			lo, hi = max(pos-window, 0), min(pos+window+1, width)
		}
		k := min(1+rnd.IntN(4), hi-lo)
		for _, j := range rnd.Perm(hi - lo)[:k] {
			nodes[i].Deps = append(nodes[i].Deps, nodes[(layer-1)*width+lo+j].Name)
		}
		slices.Sort(nodes[i].Deps)
	}
	return nodes
}

// releaseRetries is n attempts without backoff.
func releaseRetries(n int) release.Retries { return release.Retries{Attempts: n} }

// releaseRetriesBackoff is n attempts with a fixed first backoff.
func releaseRetriesBackoff(n int, backoff time.Duration) release.Retries {
	return release.Retries{Attempts: n, Backoff: release.D(backoff)}
}
