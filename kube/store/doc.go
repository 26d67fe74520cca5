// Package store keeps a run's state.Store and state.Lock on the Kubernetes
// API server, for operators whose only database is the cluster.
//
// A Store named N in namespace NS keeps the state package's record format
// (checksummed snapshot and commit records, see package state) in these
// objects, all labelled hopdag.io/store=N:
//
//   - the coordination.k8s.io/v1 Lease NS/N: the lock. Its holderIdentity,
//     renewTime and leaseDurationSeconds are the lease; the annotation
//     hopdag.io/token is the fencing token of the last acquisition;
//   - the ConfigMap NS/N, the head: the annotation hopdag.io/fence holds the
//     highest token ever handed out, hopdag.io/lease-seconds the duration
//     of its lease (as Acquire set it); hopdag.io/generation, hopdag.io/id
//     and hopdag.io/chunks name the current snapshot; hopdag.io/journal
//     names the last journal record after it (SEQ-ID);
//   - the ConfigMaps NS/N-G-X-I: chunk I of snapshot generation G (X is a
//     random id of the write that made it): chunk 0 is the snapshot's head
//     record, the others its shards;
//   - the ConfigMaps NS/N-G-X-jSEQ-ID: the journal, one record of one group
//     commit each (the changed components), its annotation hopdag.io/prev
//     naming the record before it.
//
// Every record is one ConfigMap of at most ChunkSize bytes, so no object
// nears the API server's ~1.5 MiB limit whatever the run's size, and a
// commit writes only what changed: one new ConfigMap and an update of the
// head's annotations (a commit larger than ChunkSize is split into
// records written together). When the journal outgrows the snapshot (or 1
// MiB, whichever is larger), or a commit rewrites most of the status, a
// new snapshot replaces it and the records it includes are removed: the
// bytes written stay linear in the run (BenchmarkDurableRun: about 300
// bytes a transition at 10,000 components). No record is ever rewritten;
// only the head's annotations change.
//
// Fencing: Acquire takes the Lease (a write conditioned on its
// resourceVersion, so two acquirers cannot both win), then raises the
// head's fence to the new token (also conditioned). A commit checks that
// the Lease holds its token unexpired and that the head's fence is the
// token (reading the head again when the writer's last view of it has
// another fence), creates its records, and then moves the head's journal
// pointer to them with a write conditioned on the head's resourceVersion
// as the writer last saw it: an Acquire since then changed the head, so
// the write conflicts and the commit is fenced. (A conflict is checked by
// reading the head: client-go resends a request that got a 5xx with
// Retry-After, so the first one may have landed.) A record no head names
// (its writer lost that race, or crashed before the head moved) is never
// read; the next snapshot removes it. A superseded holder's write can
// therefore land only before its successor's Acquire returns (between the
// Lease takeover and the fence raise), where the successor's Load sees it,
// never after; and it lands atomically: readers follow the head, from one
// consistent List of the store's objects.
//
// The token never decreases: a new one is one more than the larger of the
// Lease's token and the head's fence, so deleting or recreating the Lease
// does not reset it (the head keeps the fence); deleting the head deletes
// the run's status with it.
//
// A holder is dead only when its lease expired, never because its Lease
// object is gone: with the Lease missing (kubectl delete lease) and a
// token issued (the head's fence above 0), the lease is taken as held by
// the last token issued. The first Acquire that finds it missing creates
// the Lease again, held by "(unknown: the Lease was missing)" with that
// token for one TTL from then (the holder's, which the head records, or
// the acquirer's if longer: an acquirer with a shorter TTL does not take
// over a holder that refreshes in time), and refuses with a
// *state.LockedError whose Missing names the Lease; later Acquires find
// that Lease and wait for its expiry, which they do not move. The holder
// goes on: its commits pass while the Lease is missing or holds its token
// unexpired, and its next Refresh puts its own name and TTL back (creating
// the Lease if none is there yet, or taking the one an Acquire put back
// just before); its Release frees it, keeping the token. A holder that is
// gone does not refresh, and the lease taken as held runs out. Any other
// token stays fenced, and its FencedError does not call the lock free.
// ReadLease says the same as Acquire.
//
// Deleting the head and the Lease together (or every object labelled
// hopdag.io/store=N) starts the store over: nothing on the API server
// remembers a token, so the status is gone and tokens start from 1 again.
// A coordinator still running on it is fenced all the same, by the handle
// it acquired with, which remembers the head's UID: a head made again has
// another, and the handle's writes are refused even under a token issued
// again (TestHeadAndLeaseDeleted); a token passed to another handle is
// not. Delete them only when no coordinator runs on the store (hopdag
// status --state kube://NS/N says whether one does).
//
// Remove deletes the whole store (records, head, Lease) under the
// current lease: kube/controller removes a deleted ClusterVersion's store
// so that stores do not pile up and one created again under the name
// starts with none.
//
// An acquisition is two writes: when the fence raise fails after the
// Lease was taken, Acquire frees the Lease again (keeping its token), so
// that it is not held by nobody until it expires; if that fails too, the
// same holder's next Acquire takes the Lease back (its token is above the
// head's fence: the acquisition never finished), and others wait for its
// expiry.
//
// Damage: an annotation of the store's that does not parse (a fence or a
// token that is not a number, an id that is not hex, a journal reference
// that is not SEQ-ID) and a record whose bytes do not check out (its
// CRC-32C, its kind, its place in the chain) are a *state.CorruptError
// naming the object, the annotation or binaryData.status, and the first
// bad byte, and so is a head whose label was taken off. Nothing writes
// over them: Save and Commit refuse (Acquire refuses a damaged annotation
// of the head or the Lease), and a snapshot checks the records it
// replaces before it removes them (one metadata List: an object is read
// whole again only when its resourceVersion is no longer the one the
// writer saw). A snapshot removes only objects named as the store names
// its own: a labelled copy an operator made stays.
//
// Save also refuses a token whose Lease expired or was released, as the
// state.Lock contract asks, and Acquire takes an expired Lease over only
// once the clock-skew allowance (state.Skew: a tenth of its duration)
// has passed after its expiry too. Lease times are wall-clock times:
// renewTime is the holder's clock, compared with the acquirer's, so the
// allowance must cover the clocks' difference (keep nodes on NTP).
// (client-go's leader election instead times a lease from when the
// acquirer observed its last change, on its own clock; that needs a
// watcher that has seen the lease for a whole TTL, which a Store opened to
// resume a run has not.)
package store
