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

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
)

// A coordinator runs a plan durably in one call: Run takes the lock,
// keeps it while the run lasts, resumes from whatever status the store
// holds, checkpoints every transition under its lease, and releases the
// lock.
func Example() {
	ctx := context.Background()
	store := state.NewMemory()
	upgrade := runner.RunnerFunc(func(ctx context.Context, t runner.Task) error { return nil })

	status, err := state.Run(ctx, store, store, runner.New(upgrade), examplePlan())
	fmt.Println("run:", status.Phase, err)

	saved, err := store.Load(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("saved:", saved.From, "->", saved.To, saved.Phase, saved.Progress.Done, "of", saved.Progress.Total)
	_, err = store.Acquire(ctx, "next", time.Minute)
	fmt.Println("lock free:", err == nil)
	// Output:
	// run: Succeeded <nil>
	// saved: v1.0 -> v1.1 Succeeded 2 of 2
	// lock free: true
}

// A run that failed part way is resumed by the next Run on the same
// store: what succeeded does not run again. While another coordinator
// holds the lock, Run returns a *LockedError and runs nothing.
func ExampleRun() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "hopdag-run-")
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

	broken := true // the control plane's image cannot be pulled, at first
	upgrade := runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		fmt.Println("  upgrading", t.Component)
		if t.Component == "control-plane" && broken {
			return errors.New("image pull failed")
		}
		return nil
	})
	exec := runner.New(upgrade)

	fmt.Println("first run:")
	status, err := state.Run(ctx, store, store, exec, examplePlan(), state.WithHolder("node-a"))
	fmt.Println(" ", status.Phase, errors.Is(err, runner.ErrRunFailed))

	other, _ := store.Acquire(ctx, "node-b", time.Minute)
	_, err = state.Run(ctx, store, store, exec, examplePlan(), state.WithHolder("node-a"))
	var locked *state.LockedError
	fmt.Println("while node-b holds the lock:", errors.As(err, &locked) && locked.Holder == "node-b")
	_ = store.Release(ctx, other)

	broken = false
	fmt.Println("second run:")
	status, err = state.Run(ctx, store, store, exec, examplePlan(), state.WithHolder("node-a"))
	fmt.Println(" ", status.Phase, err)
	// Output:
	// first run:
	//   upgrading etcd
	//   upgrading control-plane
	//   Failed true
	// while node-b holds the lock: true
	// second run:
	//   upgrading control-plane
	//   Succeeded <nil>
}

// A hop gated for approval stops the run there; Approve records the
// approval under the lock, and the next Run goes on past the gate.
func ExampleApprove() {
	ctx := context.Background()
	store := state.NewMemory()
	upgrade := runner.RunnerFunc(func(ctx context.Context, t runner.Task) error { return nil })
	exec := runner.New(upgrade, runner.WithGates("v1.1"))

	status, err := state.Run(ctx, store, store, exec, examplePlan())
	fmt.Println(status.Phase, status.Waiting, errors.Is(err, runner.ErrWaitingForApproval))

	approved, err := state.Approve(ctx, store, store, "v1.1", "alice", time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("approved by", approved.Approvals[0].By)

	status, err = state.Run(ctx, store, store, exec, examplePlan())
	fmt.Println(status.Phase, err)
	// Output:
	// WaitingForApproval [v1.1] true
	// approved by alice
	// Succeeded <nil>
}

// WithSession decides what runs once the lock is held and the status
// loaded: here a coordinator says what it resumes, and starts over when
// the store holds a finished run.
func ExampleWithSession() {
	ctx := context.Background()
	store := state.NewMemory()
	upgrade := runner.RunnerFunc(func(ctx context.Context, t runner.Task) error { return nil })
	session := state.WithSession(func(ctx context.Context, s *state.Session) (*record.Status, error) {
		prev := s.Prev
		switch {
		case prev == nil:
			fmt.Println("a fresh run")
		case prev.Phase == record.Succeeded:
			fmt.Println("the last run succeeded; starting over")
			prev = nil
		default:
			fmt.Println("resuming a run that is", prev.Phase)
		}
		return s.Execute(ctx, prev)
	})
	for range 2 {
		status, err := state.Run(ctx, store, store, runner.New(upgrade), examplePlan(), session)
		fmt.Println(status.Phase, err)
	}
	// Output:
	// a fresh run
	// Succeeded <nil>
	// the last run succeeded; starting over
	// Succeeded <nil>
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
	st.Hops[0].Components[0].Phase = record.Running
	fmt.Println("commit:", store.Commit(ctx, lease.Token, st, []record.Ref{{Hop: 0, Component: 0}}))
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
	p, err := runner.NewPlan(c, path.MustParseState("v1.0"), path.MustParseState("v1.1"))
	if err != nil {
		panic(err)
	}
	return p
}
