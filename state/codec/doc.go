// Package codec encodes a record.Status for the state backends and checks
// what it decodes, so that a torn or foreign record is an error rather
// than an empty status.
//
// It holds the record format every backend writes: checksummed, framed
// records (Frame, Unframe), the journal's group commits (Commits, with delta
// commits whose size does not grow with the run), snapshots split into
// shards of a size limit (Snapshot), and the replay of records into a
// status (State). The File store of package state writes them to a file;
// state/etcdstore and kube/store (modules of their own) write the same
// records to etcd keys and ConfigMaps. It is a package of its own, not
// internal to state, because those backends live in other modules, and a
// backend of your own can reuse it the same way.
//
// Records are JSON: readers ignore fields they do not know, and Unframe
// refuses kinds it does not know, so a record written by a newer hopdag is
// refused rather than misread. Nothing here does I/O; the functions are safe
// for concurrent use, a State is not.
package codec
