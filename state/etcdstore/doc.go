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
// create revision of a live key). The lock is at
// prefix+"lock": a key bound to an etcd lease with the lease's TTL, so
// etcd deletes it when its holder stops refreshing; its value is the
// holder's name. The fencing token is the lock key's create revision:
// etcd revisions only grow, so tokens are never reused, across releases,
// expiries, deleted keys and restarts of any client. Every write is a
// transaction that compares the lock key's create revision with the
// token: a stale holder's write cannot slip in between the check and the
// write.
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
