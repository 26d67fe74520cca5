// Package store keeps a run's state.Store and state.Lock on the Kubernetes
// API server, for operators whose only database is the cluster.
//
// A Store named N in namespace NS is three kinds of object:
//
//   - the coordination.k8s.io/v1 Lease NS/N: the lock. Its holderIdentity,
//     renewTime and leaseDurationSeconds are the lease; the annotation
//     hopdag.io/token is the fencing token of the last acquisition;
//   - the ConfigMap NS/N, the head: the annotation hopdag.io/fence holds the
//     highest token ever handed out, hopdag.io/generation the generation of
//     the status it points to and hopdag.io/chunks its number of chunks;
//   - the ConfigMaps NS/N-G-X-I: chunk I of generation G of the status (JSON;
//     X is a random id of the Save that wrote it, hopdag.io/id on the head),
//     each at most ChunkSize bytes, so that no object nears the API server's
//     ~1.5 MiB limit whatever the run size.
//
// Fencing: Acquire takes the Lease (a write conditioned on its
// resourceVersion, so two acquirers cannot both win), then raises the
// head's fence to the new token (also conditioned). Save reads the head,
// refuses a token other than its fence, writes the new generation's
// chunks, and then moves the head to them with a write conditioned on the
// resourceVersion it read: an Acquire in between changed the head, so the
// write conflicts and the Save is fenced. A Save therefore commits only
// while its token is the newest, and it commits atomically: readers follow
// the head, which names either the old generation or the new one.
//
// The token never decreases: a new one is one more than the larger of the
// Lease's token and the head's fence, so deleting or recreating the Lease
// does not reset it (the head keeps the fence); deleting the head deletes
// the run's status with it.
//
// Damage: an annotation of the store's that does not parse (a fence or a
// token that is not a number, an id or a checksum that is not hex) and a
// chunk whose bytes do not match its hopdag.io/sha256 (or, together, the
// head's) are a *state.CorruptError naming the object, the annotation or
// binaryData.status, and the first bad byte. Nothing writes over them:
// Acquire, Save and Commit refuse, and Save checks the generation it
// replaces before it removes it (with one metadata List: a chunk is read
// whole again only when its resourceVersion is no longer the one it was
// created with, which the head keeps in hopdag.io/chunk-versions).
//
// Save also refuses a token whose Lease expired or was released, as the
// state.Lock contract asks. Lease times are the writer's wall clock, as in
// client-go's leader election.
package store
