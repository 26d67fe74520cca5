package statetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// testFencing runs two coordinators on one store. A runs a two-hop plan
// and stalls in the second hop; its lease refreshes hang (a paused
// process) and the lease expires. B acquires, A's refreshes go on, B
// resumes the run from the store and finishes it. Every write A attempts
// after its lease expired is fenced, A's keeper cancels A's context (at
// the expiry or at its first refresh after it), and no write ever moves
// the stored status backwards.
func testFencing(t *testing.T, env Env) {
	ctx := t.Context()
	plan := Plan(t)
	mon := &monitor{}
	a, b := env.Open(), env.Open()

	la := acquire(t, a, "coordinator-a", env)
	paused := &pausedLock{Lock: a, resumed: make(chan struct{})}
	ctxA, keeperA := state.Keep(ctx, paused, la, state.WithClock(env.Clock))
	defer keeperA.Stop()
	storeA := &watched{Store: a, mon: mon, name: "a"}

	stalled := make(chan struct{})
	var once sync.Once
	runA := runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		if t.HopIndex == 1 && t.Component == "control-plane" {
			once.Do(func() { close(stalled) })
			<-ctx.Done()
			return fmt.Errorf("control-plane interrupted: %w", ctx.Err())
		}
		return nil
	})
	type result struct {
		s   *record.Status
		err error
	}
	doneA := make(chan result, 1)
	go func() {
		s, err := runner.New(runA, runner.WithCheckpointer(state.Checkpointer(storeA, la))).Execute(ctxA, plan, nil)
		doneA <- result{s, err}
	}()
	<-stalled
	before, err := a.Load(ctx)
	require.NoError(t, err)

	// A is paused past its lease.
	// A is stalled with nothing else running, so it attempts no write
	// between here and the expiry.
	paused.pause()
	mon.expired.Store(true)
	env.Expire(keeperA.Lease())

	lb := acquire(t, b, "coordinator-b", env)
	require.Greater(t, lb.Token, la.Token, "B's token must be above A's")
	// A runs again. On a fake clock its keeper saw the lease expire
	// already; on a real one, its next refresh is fenced.
	paused.resume()
	ctxB, keeperB := state.Keep(ctx, b, lb, state.WithClock(env.Clock))
	prev, err := b.Load(ctxB)
	require.NoError(t, err)
	require.NotNil(t, prev, "B found no status to resume")
	storeB := &watched{Store: b, mon: mon, name: "b"}
	stB, err := runner.New(runner.RunnerFunc(func(context.Context, runner.Task) error { return nil }),
		runner.WithCheckpointer(state.Checkpointer(storeB, lb))).Execute(ctxB, plan, prev)
	require.NoError(t, err, "B's run")
	require.Equal(t, record.Succeeded, stB.Phase)

	// A's keeper cancels A's run; A's last checkpoints are fenced.
	<-ctxA.Done()
	cause := context.Cause(ctxA)
	require.ErrorIs(t, cause, state.ErrLost, "cause of A's cancellation: %v", cause)
	resA := <-doneA
	require.ErrorIs(t, resA.err, state.ErrFenced, "A's run must stop on a fenced checkpoint")
	assert.Equal(t, record.CodeCheckpointFailed, resA.s.Code)

	// Direct writes by A: fenced, naming B.
	requireFenced(t, storeA.Save(ctx, la.Token, resA.s), la.Token, "coordinator-b", lb.Token)
	requireFenced(t, storeA.Save(ctx, la.Token, before), la.Token, "coordinator-b", lb.Token)
	_, err = a.Refresh(ctx, la)
	requireFenced(t, err, la.Token, "coordinator-b", lb.Token)
	requireFenced(t, a.Release(ctx, la), la.Token, "coordinator-b", lb.Token)

	got, err := b.Load(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, mustJSON(t, stB), mustJSON(t, got), "stored status is not B's final one")

	keeperB.Stop()
	require.NoError(t, b.Release(ctx, keeperB.Lease()))

	mon.mu.Lock()
	defer mon.mu.Unlock()
	assert.Empty(t, mon.backwards, "the stored status moved backwards")
	assert.NotZero(t, storeA.lateSaves, "A attempted no write after its lease expired")
	assert.Empty(t, storeA.lateAccepted, "writes by A accepted after its lease expired")
}

// Plan returns a plan of two hops (v1.0 -> v1.1 -> v1.2), each upgrading
// etcd, then control-plane, then workers.
func Plan(t testing.TB) *runner.Plan {
	comp := func(name, version string, deps ...string) release.ComponentVersion {
		return release.ComponentVersion{Name: name, Version: release.MustParseVersion(version),
			Type: release.TypeInline, Handler: name, Dependencies: deps}
	}
	var comps []release.ComponentVersion
	var rels []release.Release
	for i, v := range []string{"v1.0", "v1.1", "v1.2"} {
		cv := fmt.Sprintf("v1.%d.0", i)
		comps = append(comps, comp("etcd", cv), comp("control-plane", cv, "etcd"), comp("workers", cv, "control-plane"))
		rels = append(rels, release.Release{Version: release.MustParseVersion(v), Components: []release.ComponentRef{
			{Name: "etcd", Version: release.MustParseVersion(cv)},
			{Name: "control-plane", Version: release.MustParseVersion(cv)},
			{Name: "workers", Version: release.MustParseVersion(cv)},
		}})
	}
	c, err := release.NewCatalog(rels, comps, []release.UpgradePath{{Rules: []release.Rule{
		{From: release.MustParseConstraint("v1.0"), To: release.MustParseVersion("v1.1")},
		{From: release.MustParseConstraint("v1.1"), To: release.MustParseVersion("v1.2")},
	}}})
	require.NoError(t, err)
	p, err := runner.NewPlan(c, path.MustParseState("v1.0"), path.MustParseState("v1.2"))
	require.NoError(t, err)
	require.Len(t, p.Hops, 2)
	return p
}

// pausedLock is a Lock whose refreshes hang, between pause and resume,
// until resume or until their ctx is done: a coordinator that stopped
// running, and may run again.
type pausedLock struct {
	state.Lock
	paused  atomic.Bool
	resumed chan struct{}
}

func (p *pausedLock) pause() { p.paused.Store(true) }

func (p *pausedLock) resume() { close(p.resumed) }

func (p *pausedLock) Refresh(ctx context.Context, l state.Lease) (state.Lease, error) {
	if p.paused.Load() {
		select {
		case <-ctx.Done():
			return state.Lease{}, ctx.Err()
		case <-p.resumed:
		}
	}
	return p.Lock.Refresh(ctx, l)
}

// monitor watches the stored status across every write of both
// coordinators.
type monitor struct {
	expired atomic.Bool

	mu        sync.Mutex
	last      *record.Status
	backwards []string
}

// watched is a coordinator's Store: after every Save, accepted or not, it
// loads the stored status and checks that it did not move backwards.
type watched struct {
	state.Store
	mon  *monitor
	name string
	// lateSaves counts Saves attempted after the lease expired, and
	// lateAccepted lists those that were not fenced.
	lateSaves    int
	lateAccepted []string
}

func (w *watched) Save(ctx context.Context, token uint64, s *record.Status) error {
	w.mon.mu.Lock()
	defer w.mon.mu.Unlock()
	err := w.Store.Save(ctx, token, s)
	if w.mon.expired.Load() && w.name == "a" {
		w.lateSaves++
		if !errors.Is(err, state.ErrFenced) {
			w.lateAccepted = append(w.lateAccepted, fmt.Sprintf("save %d: err %v, want ErrFenced", w.lateSaves, err))
		}
	}
	cur, lerr := w.Store.Load(ctx)
	if lerr != nil {
		w.mon.backwards = append(w.mon.backwards, fmt.Sprintf("after a save by %s: Load: %v", w.name, lerr))
		return err
	}
	if why := regress(w.mon.last, cur); why != "" {
		w.mon.backwards = append(w.mon.backwards, fmt.Sprintf("after a save by %s: %s", w.name, why))
	}
	w.mon.last = cur
	return err
}

// regress says how cur is behind prev, or "".
func regress(prev, cur *record.Status) string {
	switch {
	case prev == nil:
		return ""
	case cur == nil:
		return "status vanished"
	case cur.Progress.Done < prev.Progress.Done:
		return fmt.Sprintf("progress %d after %d", cur.Progress.Done, prev.Progress.Done)
	case cur.Runs < prev.Runs:
		return fmt.Sprintf("runs %d after %d", cur.Runs, prev.Runs)
	case len(cur.Hops) != len(prev.Hops):
		return fmt.Sprintf("%d hops after %d", len(cur.Hops), len(prev.Hops))
	}
	for i, h := range prev.Hops {
		if h.Phase == record.Succeeded && cur.Hops[i].Phase != record.Succeeded {
			return fmt.Sprintf("hop %d %s after Succeeded", i+1, cur.Hops[i].Phase)
		}
		for _, c := range h.Components {
			cc, ok := cur.Component(i, c.Name)
			switch {
			case !ok:
				return fmt.Sprintf("hop %d component %s vanished", i+1, c.Name)
			case c.Phase == record.Succeeded && cc.Phase != record.Succeeded:
				return fmt.Sprintf("hop %d component %s %s after Succeeded", i+1, c.Name, cc.Phase)
			case cc.Attempts < c.Attempts:
				return fmt.Sprintf("hop %d component %s attempts %d after %d", i+1, c.Name, cc.Attempts, c.Attempts)
			}
		}
	}
	return ""
}

func mustJSON(t *testing.T, s *record.Status) string {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}
