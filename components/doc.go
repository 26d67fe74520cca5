// Package components holds the runners that upgrade one component, and the
// Router that picks one by component type (ComponentVersion.Type).
//
//   - [Router] maps a type to a runner.Runner. Users register the shipped
//     runners and their own types; an unregistered type is refused at plan
//     time (it implements runner.Validator) and, should a task reach it, with
//     a runner.Permanent error naming the type and the registered ones.
//   - [Inline] (type inline) is a registry of Go handlers by name, each a
//     runner.Runner that may also implement the phases [NeedsUpgrader],
//     [PreUpgrader], [Upgrader] and [PostUpgrader] (openFuyao's
//     PhaseRunner). A handler that finds the system already at the target
//     makes the component Skipped with reason [ReasonAtTarget].
//   - [Manifest] (type manifest) renders the component's manifests with
//     text/template, checks and orders the objects, hands them to an
//     [Applier], waits for the component's health checks through the
//     Applier's [ReadyChecker], and prunes what the component's [Inventory]
//     holds and this version does not render, only while each object is
//     still labelled as the component's (an Applier that is an
//     [InventoryStore]). Two Appliers ship here: [Recorder] (in memory, for
//     tests and dry runs) and [Dir] (files, for GitOps review and offline
//     sites); the Kubernetes one is in the nested module kube
//     (github.com/hopdag/hopdag/kube/apply). All three check ownership
//     before they write ([CheckOwner]): an object that exists labelled as
//     another component's or another instance's is refused with an
//     [*OwnerError] (runner.Permanent) unless taken over ([WithTakeOver],
//     apply.WithTakeOver), since the prune of either owner would delete
//     it from under the other; one without ownership labels is adopted,
//     and the report of its apply says so.
//   - [Exec] (type exec) runs the component's command: an argv, never a
//     shell string, in its own process group, killed as a whole on timeout
//     or cancellation.
//
// Steps and rollback: an inline handler's phases are entered with
// runner.Task.Enter (recorded before each runs), so a retry or a resumed
// run continues at the phase that failed or was interrupted, never at
// NeedsUpgrade once past it. A component that declares lifecycle phases
// (ComponentVersion.Phases) runs them through the Router: handler phases
// call the inline handler's [Stepper] ([Steps]), command phases run as
// exec commands, manifest phases through the manifest runner's
// [PhaseRunner] ([Manifest.RunPhase]). Every runner here implements runner.Rollbacker for the
// Rollback failure policy: an inline handler's Rollback phase, an exec
// component's rollback command, a manifest component's previous objects
// re-applied (rollback.go).
//
// A typical executor:
//
//	router := components.NewRouter().
//		Register(release.TypeInline, components.NewInline().Register("etcd", etcd)).
//		Register(release.TypeManifest, components.NewManifest(applier, components.WithValues(values))).
//		Register(release.TypeExec, components.NewExec())
//	exec := runner.New(router)
//	plan, err := runner.NewPlan(catalog, current, target, runner.ForExecutor(exec))
//
// Errors: every error a runner here returns is an [*Error] that names the
// component, its version and the step that failed, and wraps the cause, so
// that errors.Is(err, context.DeadlineExceeded) tells a timeout and
// errors.Is(err, context.Canceled) a cancellation. Problems that a retry
// cannot fix (an unknown type or handler, a template or manifest that does
// not render, a program that does not exist) are runner.Permanent. Messages
// start with "components: " once, at the outermost error; several problems
// are listed one per line, in the order they were found (manifest, then
// document order).
//
// Concurrency: the executor calls a runner from many goroutines at once.
// Router, Inline, Manifest, Exec, Recorder and Dir are safe for concurrent
// use; a Manifest is as safe as its Applier, and inline handlers must be
// safe themselves. No runner keeps state between runs, and the package has
// no global state.
package components
