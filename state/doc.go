// Package state is where a run's runner.Status lives between processes,
// so that an upgrade survives a crash, a restart, or the upgrading process
// replacing itself, and so that two coordinators never both write it.
//
// A [Store] loads and saves the status. A [Lock] hands out [Lease]s: one
// holder at a time, each lease with a fencing token greater than any
// token before it, never reused, across releases and restarts. Every Save
// presents the token of the lease it writes under, and a Save with a token
// that is no longer current fails with a [*FencedError] ([ErrFenced]),
// naming the current holder, and changes nothing. Acquiring a lock held
// by an unexpired lease fails with a [*LockedError] ([ErrLocked]) naming
// the holder and the expiry. (This is Sunbeam's fencing-token lock: a
// holder paused past its lease wakes up fenced off, not writing over its
// successor.)
//
// A [Keeper] ([Keep]) refreshes a lease in the background and cancels the
// run's context the moment the lease is lost, with a [*LostError]
// ([ErrLost]) as its cause. [Checkpointer] makes a Store and a Lease a
// runner.Checkpointer, so the executor records every transition under the
// lease. The usual shape of a coordinator:
//
//	lease, err := store.Acquire(ctx, "host/pid", 15*time.Second)
//	ctx, keeper := state.Keep(ctx, store, lease)
//	defer keeper.Stop()
//	prev, err := store.Load(ctx) // nil for a fresh run
//	exec := runner.New(r, runner.WithCheckpointer(state.Checkpointer(store, lease)))
//	status, err := exec.Execute(ctx, plan, prev)
//	keeper.Stop()
//	err = store.Release(ctx, keeper.Lease())
//
// Backends: [Memory] (tests, one process), [File] (the embedded default:
// one directory, atomic replace with fsync, flock, safe across processes
// on one machine), and package state/etcdstore (coordinators on several
// machines). Package state/statetest is the conformance suite they all
// pass.
//
// Records that do not parse are reported as a [*CorruptError]
// ([ErrCorrupt]) naming the file or key, and left in place. Every backend
// is safe for concurrent use. Lease expiry is timed on a clock
// ([WithClock]) so that tests never sleep.
package state
