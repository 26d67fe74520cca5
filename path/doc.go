// Package path finds the chain of hops from the state a system runs to the
// state a user declares, from a catalog's UpgradePath rules; explains why
// when there is none; and lists what a system can upgrade to.
//
// A state is one version per track ([State], read by [ParseState]:
// "platform=27.03.0,kubernetes=v1.34.1"); a version is the state of a
// one-track system ("v26.09"). There is one API for both: [Resolve],
// [Targets] and [NoRouteError].
//
// # Graph
//
// The versions of a track (the Releases of that track in the catalog) are the
// nodes. Every rule of the track's UpgradePaths gives an edge from each known
// version its From constraint matches to its To version. A range
// (`>= v26.06-rc.1, < v26.06`) is expanded against the track's known versions
// with [release.Constraint.Check], so its prerelease rules apply: the range
// gives an edge from v26.06-rc.1 and v26.06-rc.2, never from v26.09-rc.1.
//
// Edges are then filtered:
//
//   - A blocked rule closes its edge: when several rules give the same edge
//     and any of them is blocked, the edge is unusable whatever the others say.
//     A blocked range blocks every version it covers, prereleases included
//     ([release.Constraint.Covers]): `from: "< v1.2"` blocks v1.1-rc.1 too,
//     and a downgrade an exact rule allows: `{from: "*", to: v1.0,
//     blocked: ...}` closes `{from: v2.0, to: v1.0}`.
//   - Otherwise, when several rules give the same edge, the first of them in
//     catalog order ([release.Catalog.Rules]: UpgradePath name, then declared
//     order) is the one recorded: its checks, risks and deprecation apply, and
//     the later rules are ignored for that edge.
//   - Downgrades (To sorts before From) are refused unless a rule allows that
//     edge explicitly, with an exact From version. A range or `*` never gives
//     a downgrade edge, and no rule gives an edge from a version to itself.
//   - Only versions with a Release on the track, and not marked
//     `installable: false` in the track's UpgradePath versions list, are hop
//     targets. The current version may be any known version, installable or
//     not.
//   - Channels: with [WithChannel], a route enters only versions whose entry
//     in the track's UpgradePath versions list names the channel (the
//     current version need not). Without a channel, a route between two GA
//     versions enters no prerelease unless the caller allows prereleases
//     ([AllowPrereleases]); from or to a prerelease, any version may be
//     entered. The edges this leaves out are reported as closed, with the
//     reason ([ClosedEdge.Excluded]); when the channel or the prerelease
//     rule is what stands in the way (the target is outside the channel,
//     or every route enters versions it excludes), [NoRouteError.Excluded]
//     names those versions and the message the option that relaxes it.
//   - An edge with risks is used only when the caller accepts every one of its
//     risks by name ([AcceptRisks]).
//   - [Guard]s check each edge against the component versions its two releases
//     ship. A violated mandatory guard removes the edge; a violated overridable
//     guard closes it unless the caller overrides the guard by name
//     ([OverrideGuards]), and the override is recorded on the hop
//     ([Hop.Overrides]). No guard applies unless passed with [WithGuards];
//     [KubernetesSkewGuard] is the Kubernetes version skew rule.
//
// # Choosing a route
//
// Among the usable routes from current to target, the one returned is, in
// order of precedence:
//
//  1. the one with the fewest deprecated edges and versions: each edge
//     whose rule has a deprecation reason counts one, and so does each
//     version entered that the track's UpgradePath versions list marks
//     deprecated (the target's own mark counts the same on every route). A
//     route without them wins even when it is longer, so a deprecated edge
//     or version is used only when every route has as many; the hop then
//     says why ([Hop.Why]);
//  2. among those, the one with the fewest hops;
//  3. among those, the one whose intermediate versions are highest, compared
//     hop by hop from the first: the route whose first intermediate version is
//     highest wins, on a tie the second decides, and so on (later versions
//     carry more fixes).
//
// Two distinct routes of equal length always differ in some intermediate
// version, so this order is total and the result is deterministic: the same
// catalog and options give the same route on every run, whatever the order of
// map iteration or goroutine scheduling. Accepted risks and overridden guards
// do not weigh in the choice.
//
// # Tracks
//
// [Resolve] plans across tracks as well (StarlingX: the platform release
// and the Kubernetes version). A state is one version per track; a hop
// moves one track along that track's rules, with everything above
// applying per track; a state is allowed only when every track's release
// supports the other tracks' versions ([release.Release.Supports]). Every
// state a route enters must be allowed, the current state names every
// track tied to one it names (else ErrInvalidOption), a target may name
// only some tracks, and the cheapest route is chosen as for one track:
// among the cheapest, each track's next hop is its highest version, and
// between tracks the smaller change goes first (patch before minor before
// major), then the constraining track. The route's hops record the track
// they move ([Hop.Track]); a runner executes it like a one-track route. An
// Index of a track that supports ties to another track is refused
// (ErrInvalidOption): it could not keep to the other track's version.
//
// # Errors
//
// An unknown current or target version gives an [*UnknownVersionError]
// (errors.Is [ErrUnknownVersion]) listing the nearest known versions. A target
// that cannot be reached gives an [*NoRouteError] (errors.Is [ErrNoRoute])
// with diagnostics: the versions reachable from current, the versions from
// which target is reachable, the blocked, risky, guarded or not-installable
// edges that would have joined them, and a minimal set of relaxations
// (risks to accept and guards to override, together) that gives a route:
// each one is needed, dropping any one gives no route. The reachable
// versions are listed furthest first, nearest the target. Error names the
// relaxations neutrally; [NoRouteError.Explain] lets a command line name its
// own flags. Its closed edges are grouped: each reason (a risk's message,
// a blocking rule's) is said once, after the edges it closes, at most 8
// reasons and 8 edges each, then "and N more". [Targets] returns the same
// error when no version at all is reachable, which answers "why is the
// upgrade list empty?". Across tracks the same type says which track
// cannot reach its target (its own error in [NoRouteError.Err]) or which
// supports constraints stand in the way ([NoRouteError.Blocks]); an
// unknown track gives an [*UnknownTrackError].
//
// # Index
//
// For a one-track state, [Resolve] and [Targets] build an [Index] of the
// track's edges on each call. To answer many questions on one track, build
// it once with [NewIndex]: its
// build time is linear in the number of rules plus the edges they give.
// Queries settle versions in increasing (deprecated, hops) cost: one
// breadth-first search per deprecation level reached, over the usable edges.
// [Index.Resolve] stops at the target, then walks over the cheapest routes
// only to apply the tie-break; [Index.Targets] searches every reachable
// version, ranking the routes of each hop count (a sort per hop count), and
// keeps a predecessor tree: its time and memory are linear in the versions
// and edges searched, and [Target.Route] builds a route only when asked
// ([Target.Next], the first hop, costs linear time over all the targets). An
// Index is read-only after construction and safe for concurrent use.
//
// This package imports only the release package of hopdag (and
// internal/english, for its messages).
package path
