// Package dag is the component graph of one hop (from-release ->
// to-release): the components that change, ordered by their dependencies.
//
// [Build] turns two releases of a [release.Catalog] into a [Graph]: one node
// per component whose version changes (a component new in the to-release
// counts as changed; [IncludeUnchanged] forces every component in), edges
// from the to-release's ComponentVersion dependencies. A dependency on a
// component that does not change makes no node, but the ordering through it
// is kept: if A depends on B, B on C, and B does not change, A still runs
// after C. Components with `before: all` precede every other node.
//
// A Graph is index-based (flat adjacency lists). Node indexes are 0..Len()-1
// in name order, so every list the Graph returns is sorted by name as well as
// by index. [Graph.Levels] are the Kahn batches (openFuyao's batch view),
// [Graph.CriticalPath] is the longest path by expected duration (the lower
// bound on any schedule's makespan), [Graph.TransitiveReduction],
// [Graph.Ancestors] and [Graph.Descendants] answer the usual questions, and
// [Graph.DOT], [Graph.Mermaid] and [Graph.MarshalJSON] draw it
// deterministically.
//
// Bad graphs are refused with every problem at once: dependencies on
// components the release does not ship ([ErrMissingDependency], naming both
// components), self-dependencies ([ErrSelfDependency]) and every cycle
// ([CycleError], one entry per strongly connected component, written as a
// closed path that starts and ends at its smallest name). Cycle detection is
// iterative (Tarjan) and linear, so 50,000 nodes neither blow the stack nor
// hang, and a cycle through unchanged components is reported like any other.
//
// Arrows point along "depends on" in errors (a -> b: a depends on b) and
// along execution in pictures (b -> a: b runs before a).
//
// The graph is not a github.com/heimdalr/dag DAG: building one of those
// costs time and memory that follow the transitive closure (about a second
// for 10,000 nodes in 8 layers, minutes in 40; milliseconds here whatever
// the shape). [ToHeimdalr] and [FromHeimdalr] convert for callers who
// already use it.
//
// Cost: New is linear in nodes plus edges (it sorts the nodes by name
// unless they come sorted) and computes the levels once; Build is too, plus
// one merged set per unchanged component for the ordering carried through
// it (never a path-by-path search, so diamonds do not blow up).
// CriticalPath, Ancestors and Descendants are linear; TransitiveReduction
// is one bounded search per node, meant for display. A cycle report is
// linear for the usual shapes.
//
// A Graph is immutable after construction and safe for concurrent use. The
// slices and Nodes it returns are shared with it: read them, do not modify
// them.
package dag
