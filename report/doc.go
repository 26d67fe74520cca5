// Package report prints the status of a run for people: the table that
// `hopdag run`, `hopdag status` and the demo show.
//
// Rows are one per component of every hop, hops in order. Within a hop the
// rows follow the plan's batch order (batch 1 first, names sorted within a
// batch) when the plan is known (PlanOrder); without it, the order the
// components started in, then those not started yet in the status's order.
// Output is deterministic for a given status.
//
// It is exported because the demo (core module) and the hopdag command (a
// module of its own) print the same table.
package report
