// Package etcdstore is a state.Store and state.Lock on etcd, for
// coordinators on several machines.
//
// A Store keeps one run under a key prefix: the status at prefix+"status"
// (indented JSON), the lock at prefix+"lock". The lock is a key bound to
// an etcd lease with the lease's TTL, so etcd deletes it when its holder
// stops refreshing; its value is the holder's name. The fencing token is
// the lock key's create revision: etcd revisions only grow, so tokens are
// never reused, across releases, expiries and restarts of any client.
// Save is one transaction that compares the lock key's create revision
// with the token and writes the status: a stale holder's write cannot
// slip in between the check and the write.
//
// Lease TTLs are whole seconds on the server (rounded up, and raised to
// the server's minimum); Lease.Expires is counted from before each
// request with the TTL asked for, so the holder's view of its lease never
// outlasts etcd's. etcd's own lease expiry runs on the server's clock.
//
// It is in its own package so that programs using the File store do not
// link the etcd client.
package etcdstore
