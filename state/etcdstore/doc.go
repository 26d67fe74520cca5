// Package etcdstore is a state.Store and state.Lock on etcd, for
// coordinators on several machines.
//
// A Store keeps one run under a key prefix, in the state package's record
// format (see package state): each group commit is one key,
// prefix+"log/<seq>", written once; the snapshot is a head,
// prefix+"snap", and shards, prefix+"snap/<seq>/<n>", none over 256 KiB
// however many components the run has (etcd refuses requests over 1.5
// MiB). A new snapshot is made current by one transaction that puts its
// head and deletes the older shards and the commits it includes. No key
// is rewritten once per transition, so etcd's database, which keeps every
// revision until compaction, grows with the run (about 6-12 MiB for a
// 10,000-component run), not with its square. The store never compacts:
// compaction is cluster-wide and would cut the history other clients of
// the same etcd watch. Run etcd with auto-compaction (e.g.
// --auto-compaction-mode=periodic --auto-compaction-retention=1h, and
// defragment now and then) so that the space of deleted commits and
// snapshots comes back; the fencing tokens do not depend on history (a
// revision of a live key). The lock is at
// prefix+"lock": a key bound to an etcd lease with the lease's TTL, so
// etcd deletes it when its holder stops refreshing; its value is the
// holder's name. The fencing token is the lock key's create revision:
// etcd revisions only grow, so tokens are never reused, across releases,
// expiries, deleted keys and restarts of any client. Every write is a
// transaction that compares the lock key's create revision with the
// token: a stale holder's write cannot slip in between the check and the
// write.
//
// # Fencing: what survives what
//
// Next to the lock key, prefix+"issued" (no etcd lease: it outlives
// expiries) records the last lease issued, {"holder","lease"} with the
// ID of the etcd lease its lock key is bound to, written in the
// transaction that creates the lock key (so its mod revision is the
// token), and {"token"} with no lease once that lease is released. A
// holder is dead only when its etcd lease is (expired on the server's
// clock, or revoked), never because its lock key is gone:
//
//   - The lock key deleted by hand while its holder runs: the lock is
//     held, for as long as the etcd lease the issued key names lives
//     (Acquire, ReadLease: a *state.LockedError with Missing the lock
//     key). The holder's next Refresh, or a commit that finds it gone,
//     puts the key back, bound to the same etcd lease; its writes then
//     compare the issued key's mod revision and the lock key's etcd
//     lease instead of its create revision (a new acquisition or a
//     release rewrites the first, an expiry deletes the second). A holder
//     that is gone keeps nothing: its etcd lease expires within its TTL.
//   - The issued key deleted too (or a prefix written before the store
//     kept it) while the status was written: its last writer may run.
//     Acquire writes the issued key naming the status's last token, held
//     by an unknown holder, bound to a new etcd lease of the acquirer's
//     TTL that nobody but that writer refreshes (so Acquires that find it
//     do not extend it), and refuses with Missing set; ReadLease says it
//     is held from the first (with a zero Expires before an Acquire).
//     The records no longer name the writer's etcd lease, and the
//     status's last token may be that of a lease long released or
//     expired, after which another was acquired that has not written
//     yet: so only the Store handle that acquired the lease takes it
//     back, while the etcd lease it was granted lives, and only if no
//     record it saw since named another lease. Its Refresh, Release or
//     commit writes both keys again, bound to that etcd lease (and
//     revokes the acquirer's). Any other handle presenting the token is
//     fenced, and so is a lease that never wrote the status: safe,
//     though its run stops. The same goes for a lock key put back whose
//     issued key is deleted after.
//   - A stale token stays fenced whatever is deleted: no record names it.
//     Tokens are revisions: none is ever issued twice.
//   - A lock key bound to no etcd lease (etcdctl put without --lease)
//     would never expire: Acquire and ReadLease refuse it as a
//     *state.CorruptError naming it. No coordinator wrote it; once none
//     runs on the prefix (hopdag status), it can be cleared, after which
//     the rules above apply.
//
// The keys read are only those of the store's exact forms (lock, issued,
// snap, snap/ and 20 digits / 6 digits, log/ and 20 digits); others under
// the prefix belong to a run whose prefix is nested in this one's
// (prefix+"log/"...) and are ignored, and a snapshot deletes only keys of
// its own forms. A key that starts as a form of the store's and goes on
// (prefix+"log/00000000000000000001/...", the keys of a run nested there)
// is refused: the range deletes of snapshots would take it.
//
// Lease TTLs are whole seconds on the server (rounded up, and raised to
// the server's minimum); Lease.Expires is counted from before each
// request with the TTL asked for, so the holder's view of its lease never
// outlasts etcd's. etcd's own lease expiry runs on the server's clock.
//
// It is a module of its own (github.com/hopdag/hopdag/state/etcdstore),
// so that importing the core library does not put grpc and the etcd
// client in a user's module graph.
package etcdstore
