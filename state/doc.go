// Package state is where a run's record.Status lives between processes,
// so that an upgrade survives a crash, a restart, or the upgrading process
// replacing itself, and so that two coordinators never both write it.
//
// A [Store] loads and saves the status. A [Lock] hands out [Lease]s: one
// holder at a time, each lease with a fencing token greater than any
// token before it. Every write presents the token of the lease it writes
// under, and a write with a token that is no longer current fails with a
// [*FencedError] ([ErrFenced]), naming the current holder, and changes
// nothing. Acquiring a lock held by an unexpired lease fails with a
// [*LockedError] ([ErrLocked]) naming the holder and the expiry. (This is
// Sunbeam's fencing-token lock: a holder paused past its lease wakes up
// fenced off, not writing over its successor.)
//
// A [Keeper] ([Keep]) refreshes a lease in the background and cancels the
// run's context, with a [*LostError] ([ErrLost]) as its cause, when a
// refresh is fenced or [Margin] (a tenth of the TTL) before the lease's
// expiry if no refresh succeeded by then; a TTL below [MinTTL] is lost
// whenever a refresh is late ([CheckTTL] refuses it). [Checkpointer] makes a Store
// and a Lease a runner.Checkpointer that commits what changed, retrying a
// transient error within the lease's TTL.
//
// [Run] puts these together: a coordinator runs a plan durably in one
// call, which acquires the lock, keeps the lease, loads the status and
// resumes from it, checkpoints under the lease, and releases the lock,
// even when ctx is cancelled:
//
//	store, err := state.OpenFile("/var/lib/my-upgrade")
//	exec := runner.New(r)
//	status, err := state.Run(ctx, store, store, exec, plan)
//
// Its doc says what its errors mean (locked, corrupt, fenced, a lost
// lease, the run's own failure). [WithSession] lets a coordinator look
// at the loaded status before anything runs (resume it, start over, write
// under the lease), and [Approve] records an approval of a gated step the
// same way, in one call.
//
// Backends: [Memory] (tests, one process), [File] (the embedded default:
// one directory, fsync, flock, safe across processes on one machine), and
// the module github.com/hopdag/hopdag/state/etcdstore (coordinators on
// several machines). Package state/statetest is the conformance suite
// they all pass.
//
// # What a checkpoint costs
//
// The status is a journal of commits plus a snapshot. The executor
// checkpoints once per round of its scheduler, with the component
// records that changed (runner.ChangeCheckpointer); [Store.Commit] writes
// them as one journal record: the run's and hops' own fields (a few
// hundred bytes per hop) and the changed components (about 180-300 bytes
// each), one fsync (File) or one etcd transaction for the whole round,
// however many components started or finished in it. A commit that
// rewrites most components, or that would grow the journal past the
// snapshot's size (1 MiB at least), writes a snapshot instead, so Load
// (snapshot + replay) reads at most about twice the snapshot, and the
// bytes written stay linear in the run; so they do when the Checkpointer
// is wrapped (a runner.CheckpointFunc that counts or logs) and the
// wrapper passes on the ctx and the status Execute gave it, where
// Execute puts what changed (runner.Changes); a wrapper that passes a
// copy makes every checkpoint whole. Measured (BenchmarkDurableRun,
// docs/state.md): a File store adds about 20 to 50 µs per component to a
// 10,000-component run, flat from 1,000 components up.
//
// # Record format
//
// Every record is one line: the CRC-32C of a JSON object in hex, a space,
// the object, a newline. Objects are commits ("kind":"commit-delta": seq,
// token, the status without hops, the number of hops, the hops whose
// header or component count changed since the writer's last record as
// {index, header, count}, and the changed components as {hop, index,
// status}; so a commit's size does not grow with the hops. Stores
// written before it hold "kind":"commit" records, the status with every
// hop's header and count, which still load), snapshot heads
// ("snapshot": seq, token, header, shard count) and snapshot shards
// ("shard": a run of components). Component records carry the whole
// record.ComponentStatus, so fields the runner adds later (a component's
// upgrade phases, approvals) travel without a new format, and readers
// ignore what they do not know. No record grows with the run beyond a
// bound: commits and shards are split at 256 KiB where a backend limits
// value sizes (etcd refuses requests over 1.5 MiB, Kubernetes objects
// over about 1 MiB). A File keeps the snapshot in SnapshotFile, replaced
// atomically, and appends commits to JournalFile; etcd keeps one key per
// commit and per shard. A Kubernetes store is meant to do the same: one
// object per shard and per commit (or a bounded ring of commit objects),
// each create or update conditional on the lease's resourceVersion as
// etcd's transactions are on the lock key's revision.
//
// A File's (and a Memory's) snapshot head names the journal that follows
// it by a random ID ("journal":{"id":...,"replaces":...}), and the
// journal's first line is its header: a commit of the snapshot's seq with
// no status, carrying that ID. So a journal that is missing, cut to
// nothing or another snapshot's (an older one put back from a backup) is a
// [*CorruptError], not the snapshot alone (an older status), right after a
// snapshot too, when the journal holds no commit. A crash between a
// snapshot and its journal's header leaves the journal the snapshot
// replaced, which the head names ("replaces") and which ends at the commit
// before the snapshot: its commits are all in the snapshot, and the next
// commit starts the snapshot's own journal. (That one journal, put back
// whole from a backup, is therefore taken for a crash's.) The first
// snapshot of a store gives its journal a header before it is written, so
// no crash leaves a snapshot without a journal. Stores written before
// journals had headers load as before, their journal unchecked until their
// next snapshot; readers that know no headers skip them, as commits the
// snapshot holds.
//
// A torn last journal line (an append a crash cut short: never
// acknowledged) lacks its newline and is dropped; the next commit cuts it
// off. A handle remembers how far it wrote its journal (the journal's ID,
// end offset and last commit): a journal of that ID found shorter, cut
// at a line boundary or inside a line, lost acknowledged commits, and is
// a [*CorruptError] naming the offsets, for that handle's Commit and Save
// (the run halts with CHECKPOINT_FAILED), not a torn tail. Any other record that does not check out (a bad checksum, the last
// line's too when it is whole: a whole line was written out, so damage to
// it is not a torn append; a gap in the sequence, a journal that does not
// follow its snapshot, a status that does not add up)
// is a [*CorruptError] ([ErrCorrupt]) naming the file or key and the byte
// offset; it is left in place, nothing is written over it, and the error
// never advises deleting it.
//
// # Fencing: what survives what
//
//   - A token is never issued twice: every record of the status carries
//     the token it was written under, Acquire issues a token above both
//     the lock's last token and the status's, and a write under a token
//     below the status's is fenced ([FencedError.Written]). Deleting the
//     lease record, or restoring it from an old backup, does not reset
//     tokens (a File keeps the last token issued in its "lock" file too,
//     for a lease that has not written yet); neither does deleting the
//     status (the lease record keeps them). Losing both the lease record
//     and the lock file can issue again a token that never wrote; losing
//     them all (the whole directory) starts over. On etcd tokens are
//     revisions, which only grow.
//   - A holder is dead only when its lease expired: never because its
//     process exited, a file is missing or a lock file is unlocked. Then
//     another holder may acquire only after a clock-skew allowance
//     ([Skew], a tenth of the TTL; etcd: its server's own expiry, on the
//     server's clock). The Keeper cancels its run [Margin] before the
//     expiry on the holder's clock, which Lease.Expires counts from before
//     the request that set it, so the holder stops first.
//   - Clocks compared: Memory and File compare the acquirer's wall clock
//     with the Expires the holder wrote (processes on one machine; tests
//     pass a fake clock to every party, [WithClock]); etcd compares only
//     durations, each on one clock: the server times its lease, the
//     holder its Expires.
//   - Reading without taking: every backend is a [LeaseReader], whose
//     ReadLease says the current lease and whether Acquire would refuse
//     now, by the rule above, writing nothing (hopdag status tells a run
//     whose coordinator died from one that runs).
//
// Every backend is safe for concurrent use.
package state
