// Package runner executes upgrade plans: the hops of a path.Route in order
// and, per hop, the components of its dag.Graph in parallel, through a
// pluggable Runner (package components routes by component type).
//
// NewPlan resolves the route between two states (path.Resolve: a version,
// or one version per track) and builds each hop's graph, failing before
// anything runs for whatever is knowable then: no route, a cycle, a missing
// dependency, and with ForExecutor a component type or hop check that
// nothing can run. A Plan prints as a dry run (String, JSON, YAML).
//
// An Executor runs a plan:
//
//   - Scheduling: Eager (default) starts a component the moment its
//     dependencies have succeeded, longest remaining path first; Batch runs
//     level by level with a barrier (openFuyao's semantics).
//   - Limits: WithMaxParallel for the hop, WithGroupLimit per
//     ComponentVersion.Group.
//   - Timeouts and retries: per component (ComponentVersion.Timeout and
//     Retries) or executor defaults; exponential backoff with a cap and
//     jitter; Permanent errors are not retried; a timeout reaches the
//     runner through its ctx, and an attempt it stopped is recorded
//     (COMPONENT_TIMEOUT) as "timed out after D (whose timeout: the
//     component's spec.timeout and where it is set, or the default)",
//     in place of the runner's "context deadline exceeded"; the error
//     still matches context.DeadlineExceeded.
//   - Failure policy: ContinueIndependent (default; dependents of a failed
//     component are Skipped with a reason naming it), FailFast, or
//     MaxFailures(n); Rollback and RollbackRun (or a rule's onFailure:
//     rollback) roll a failed hop back, dependents first, through the
//     runner's Rollbacker ability: the same scheduler walks the hop's
//     graph in reverse, with the same limits, retries, events and
//     checkpoints (rollback.go).
//   - Steps: a runner with phases calls Task.Enter before each; the step
//     is recorded (record.ComponentStatus.Step) before it runs, and a retry or a
//     resumed run continues there (step.go). Task.Waiting says what a
//     running attempt waits for: a ComponentWaiting event per change.
//   - Gates and run to a step: a gated hop, component or declared phase
//     stops the run WaitingForApproval until record.Status.Approve (gate.go);
//     WithUntil stops it Paused after a named step (until.go).
//   - Hop checks: pre-checks before a hop's components, post-checks after;
//     a failed required check stops the run, an optional one is a warning.
//   - Safety: a runner panic is that component's failure (code PANIC, with
//     the stack), never a crash; the caller's ctx cancelled stops the run
//     promptly and leaves what did not finish Cancelled.
//
// The status (a record.Status, package record) is the durable record:
// phases per run, hop and component, attempts, times, the last error and
// a Code from a closed catalog (record.Codes). Execute writes it; what
// only reads or stores it imports package record, not this one.
// A Checkpointer records every transition, once per round of the
// scheduler (group commit: what arrived during one checkpoint goes into
// the next), Running before the runner is invoked, so a crash never loses
// a success or hides a start; a ChangeCheckpointer is told which
// component records changed. A failed checkpoint halts the run at once.
// Execute resumes from a previous status without re-running what
// succeeded. Before the first component starts, Execute prepares the run
// in one step (prepare.go): the plan's and options' problems, the resume
// checks, the until step, the gates and the status as the run starts.
// Observers receive Events off the scheduler's goroutine, each through a
// queue of its own, so one that stalls holds up no other; an observer
// added with WithBlockingObserver (an audit log) gets each on the
// scheduler's goroutine before the run goes on, and none is dropped. The
// Clock is injectable (runnertest.Clock) so retry and timeout tests do
// not sleep.
//
// Concurrency: one goroutine, the caller of Execute, owns the status;
// attempts run on a pool of workers and report back through a mailbox; no
// goroutine outlives Execute. An Executor may run several plans at once.
package runner
