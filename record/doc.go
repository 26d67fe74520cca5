// Package record holds the durable record of an upgrade run: the Status
// that package runner writes while it executes a plan, and that stores
// (package state, state/etcdstore, kube/store), reports and bundles read
// and write. It holds data and the operations on data alone (Abandon,
// Approve, DeepCopy); it imports no executor, so a package that only
// reads or writes the record does not depend on how a run is executed.
//
// Every type has json and yaml tags: a Status is what a store keeps and
// what an operator can put in a CRD's status. The Phase and Code values
// are closed sets (Phases, Codes) that a reader of a stored status can
// check. Ref names one component record, for stores that write only what
// changed. Nothing here is safe for concurrent use: a Status has one
// writer at a time (the executor, or the caller between runs).
package record
