package state_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
)

// A coordinator takes the lock, keeps it while the run lasts, resumes
// from whatever status the store holds, and checkpoints every transition
// under its lease.
func Example() {
	ctx := context.Background()
	store := state.NewMemory()

	lease, err := store.Acquire(ctx, "coordinator-a", time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	runCtx, keeper := state.Keep(ctx, store, lease)
	prev, err := store.Load(runCtx) // nil: nothing saved yet
	if err != nil {
		fmt.Println(err)
		return
	}
	upgrade := runner.RunnerFunc(func(ctx context.Context, t runner.Task) error { return nil })
	exec := runner.New(upgrade, runner.WithCheckpointer(state.Checkpointer(store, lease)))
	_, err = exec.Execute(runCtx, examplePlan(), prev)
	keeper.Stop()
	fmt.Println("run:", err)
	fmt.Println("release:", store.Release(ctx, keeper.Lease()))

	saved, err := store.Load(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("saved:", saved.From, "->", saved.To, saved.Phase, saved.Progress.Done, "of", saved.Progress.Total)
	// Output:
	// run: <nil>
	// release: <nil>
	// saved: v1.0 -> v1.1 Succeeded 2 of 2
}

// A coordinator paused past its lease wakes up fenced off: its successor
// holds a greater token, and the store refuses the stale one.
func ExampleFencedError() {
	ctx := context.Background()
	clock := runnertest.NewClock(time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC))
	store := state.NewMemory(state.WithClock(clock))

	a, _ := store.Acquire(ctx, "node-a", 15*time.Second)
	_, err := store.Acquire(ctx, "node-b", 15*time.Second)
	fmt.Println(err)

	clock.Advance(20 * time.Second) // node-a stalls for 20s
	b, _ := store.Acquire(ctx, "node-b", 15*time.Second)
	fmt.Println("node-b holds lease", b.Token)

	err = store.Save(ctx, a.Token, runner.NewStatus(examplePlan()))
	fmt.Println(err)
	var fenced *state.FencedError
	fmt.Println(errors.Is(err, state.ErrFenced), errors.As(err, &fenced) && fenced.Holder == "node-b")
	// Output:
	// state: locked by node-a (lease 1) until 2026-09-01T10:00:15Z; wait for the lease to expire or for node-a to release it
	// node-b holds lease 2
	// state: fenced: lease 1 is not current; the lock is held by node-b (lease 2)
	// true true
}

// The keeper cancels the run's context as soon as a refresh finds the
// lease gone, here released behind the holder's back.
func ExampleKeep() {
	ctx := context.Background()
	clock := runnertest.NewClock(time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC))
	store := state.NewMemory(state.WithClock(clock))
	lease, _ := store.Acquire(ctx, "node-a", 15*time.Second)

	runCtx, keeper := state.Keep(ctx, store, lease, state.WithClock(clock))
	defer keeper.Stop()
	_ = store.Release(ctx, lease)  // an operator frees the lock
	clock.Advance(5 * time.Second) // the keeper refreshes a third of the TTL in

	<-runCtx.Done()
	fmt.Println(context.Cause(runCtx))
	fmt.Println(errors.Is(context.Cause(runCtx), state.ErrLost))
	// Output:
	// state: lease 1 of node-a lost: state: fenced: lease 1 is not current; the lock is free (the lease expired or was released): acquire it again
	// true
}

// The usual shape of a coordinator, as the package doc has it: the run
// gets the keeper's context (runCtx), which Stop cancels, and the release
// gets ctx, so the lock is free for the next run at once. (Keep's context
// given the name ctx, the release would fail with context.Canceled and
// leave the lock held until the lease expired.)
func ExampleKeep_coordinator() {
	ctx := context.Background()
	store := state.NewMemory()
	r := runner.RunnerFunc(func(ctx context.Context, t runner.Task) error { return nil })
	plan := examplePlan()

	lease, err := store.Acquire(ctx, "host/pid", 15*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	runCtx, keeper := state.Keep(ctx, store, lease)
	defer keeper.Stop()
	prev, err := store.Load(runCtx) // nil for a fresh run
	if err != nil {
		fmt.Println(err)
		return
	}
	exec := runner.New(r, runner.WithCheckpointer(state.Checkpointer(store, lease)))
	status, err := exec.Execute(runCtx, plan, prev)
	fmt.Println("run:", status.Phase, err)
	keeper.Stop()
	err = store.Release(ctx, keeper.Lease())
	fmt.Println("release:", err)

	next, err := store.Acquire(ctx, "host/pid-2", 15*time.Second)
	fmt.Println("next run: lease", next.Token, err)
	// Output:
	// run: Succeeded <nil>
	// release: <nil>
	// next run: lease 2 <nil>
}

// A File store is one directory: a snapshot, a journal of commits, the
// lease. A record that does not check out is an error that names the file
// and the offset; the file is left for an operator to look at.
func ExampleOpenFile() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "hopdag-state-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	store, err := state.OpenFile(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	lease, _ := store.Acquire(ctx, "node-a", time.Minute)
	st := runner.NewStatus(examplePlan())
	fmt.Println("save:", store.Save(ctx, lease.Token, st))
	st.Hops[0].Components[0].Phase = runner.Running
	fmt.Println("commit:", store.Commit(ctx, lease.Token, st, []runner.Ref{{Hop: 0, Component: 0}}))
	saved, _ := store.Load(ctx)
	fmt.Println("load:", saved.From, "->", saved.To, saved.Hops[0].Components[0].Name, saved.Hops[0].Components[0].Phase)

	journal := filepath.Join(dir, state.JournalFile)
	b, _ := os.ReadFile(journal)
	commit := bytes.IndexByte(b, '\n') + 1 // after the journal's header
	b[commit+20] = '!'                     // a disk error in the middle of the commit
	_ = os.WriteFile(journal, b, 0o644)
	_, err = store.Load(ctx)
	fmt.Println(strings.ReplaceAll(err.Error(), dir, "DIR"))
	fmt.Println(errors.Is(err, state.ErrCorrupt))
	// Output:
	// save: <nil>
	// commit: <nil>
	// load: v1.0 -> v1.1 control-plane Running
	// state: DIR/journal.log at byte 81 is corrupt: checksum 2fcdd717 does not match the record's 2d511607; it was left as it is and nothing was written: restore it from a backup or repair it by hand
	// true
}

// examplePlan is a one-hop plan upgrading etcd, then the control plane.
func examplePlan() *runner.Plan {
	comp := func(name, version string, deps ...string) release.ComponentVersion {
		return release.ComponentVersion{Name: name, Version: release.MustParseVersion(version), Type: release.TypeInline, Handler: name, Dependencies: deps}
	}
	rel := func(v, etcd, k8s string) release.Release {
		return release.Release{Version: release.MustParseVersion(v), Components: []release.ComponentRef{
			{Name: "etcd", Version: release.MustParseVersion(etcd)},
			{Name: "control-plane", Version: release.MustParseVersion(k8s)},
		}}
	}
	c, err := release.NewCatalog(
		[]release.Release{rel("v1.0", "v3.5.0", "v1.33.0"), rel("v1.1", "v3.6.0", "v1.34.0")},
		[]release.ComponentVersion{comp("etcd", "v3.5.0"), comp("etcd", "v3.6.0"),
			comp("control-plane", "v1.33.0", "etcd"), comp("control-plane", "v1.34.0", "etcd")},
		[]release.UpgradePath{{Rules: []release.Rule{{From: release.MustParseConstraint("v1.0"), To: release.MustParseVersion("v1.1")}}}},
	)
	if err != nil {
		panic(err)
	}
	p, err := runner.NewPlan(c, release.MustParseVersion("v1.0"), release.MustParseVersion("v1.1"))
	if err != nil {
		panic(err)
	}
	return p
}
