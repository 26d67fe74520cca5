// Package release is hopdag's data model and the loader that turns users'
// YAML into it.
//
// A [Catalog] holds Releases (a product version and the component versions
// it ships), ComponentVersions (one component at one version, with its type,
// dependencies, timeout, retries, health checks and what runs it) and
// UpgradePaths (which version may upgrade to which, with blocked and
// deprecated edges, risks and checks). [Load] reads a catalog directory
// strictly and reports every problem at once with file:line, the field path
// and a fix, dependency cycles included, in time and memory linear in the
// input and bounded on hostile input (see Load for the limits); [NewCatalog] applies the same rules to values built in code.
//
// [Version] parses what users write (v26.06, v26.06-rc.2, 26.06.01, v1.34.1),
// keeps the spelling for output and orders semantically. [Constraint] is a
// version range whose prerelease rules never admit the prereleases of a
// release the range does not name.
//
// All types carry json and yaml tags and DeepCopy methods so an operator can
// embed them in its CRD types. A Catalog is read-only after construction and
// safe for concurrent use.
//
// The YAML engine under Load (a fast parser, a strict reflection decoder,
// capped problem reports, the lines of field paths) is release/internal/yamldoc,
// which knows nothing of these types. Besides it, this package imports no
// other hopdag package but internal/cycles.
package release
