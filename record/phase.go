package record

// Phase is the state of a run, a hop or a component.
type Phase string

// Phases. A run and a hop are Pending, Running, Succeeded, Failed,
// Cancelled; a run may also be Abandoned. A component is Pending, Running,
// Succeeded, Failed, Skipped or Cancelled. (An abandoned run's unfinished
// hops and components are Cancelled, code ABANDONED: see Status.Abandon.)
// A gate or the until step (runner.WithUntil) holds a run, a hop or a
// component WaitingForApproval or Paused. Under a rollback policy
// (runner.Rollback) a run, a hop and a component are RollingBack while
// their rollback runs, then RolledBack or RollbackFailed.
const (
	Pending   Phase = "Pending"
	Running   Phase = "Running"
	Succeeded Phase = "Succeeded"
	Failed    Phase = "Failed"
	Skipped   Phase = "Skipped"
	Cancelled Phase = "Cancelled"
	// Abandoned is terminal: runner.Executor.Execute refuses to resume an
	// abandoned run (Sunbeam's abandon). Set it with Status.Abandon.
	Abandoned Phase = "Abandoned"
	// WaitingForApproval is the phase of a step held by its gate, and of
	// the run stopped there (see Status.Approve).
	WaitingForApproval Phase = "WaitingForApproval"
	// Paused is the phase of a run, a hop or a component stopped at the
	// until step as asked.
	Paused Phase = "Paused"
	// RollingBack: a component's, hop's or run's rollback is in progress.
	RollingBack Phase = "RollingBack"
	// RolledBack: back at the from-version.
	RolledBack Phase = "RolledBack"
	// RollbackFailed: the rollback did not get there (a component's
	// rollback failed, or it is irreversible).
	RollbackFailed Phase = "RollbackFailed"
)

// Phases lists every Phase the executor writes, for readers that check
// a stored status (package state) and exhaustive tests.
func Phases() []Phase {
	return []Phase{Pending, Running, Succeeded, Failed, Skipped, Cancelled, Abandoned, WaitingForApproval, Paused,
		RollingBack, RolledBack, RollbackFailed}
}

// Terminal reports whether p is a final phase for a component.
func (p Phase) Terminal() bool {
	return p == Succeeded || p == Failed || p == Skipped || p == Cancelled || p == Abandoned
}

// Code classifies why a component, a hop or a run did not succeed. The set
// is closed: these are all the codes the executor writes.
type Code string

const (
	// CodeComponentFailed: the runner returned an error on its last attempt.
	CodeComponentFailed Code = "COMPONENT_FAILED"
	// CodeComponentTimeout: the last attempt ran past the component's timeout.
	CodeComponentTimeout Code = "COMPONENT_TIMEOUT"
	// CodeDependencyFailed: not run because a dependency failed (Skipped).
	CodeDependencyFailed Code = "DEPENDENCY_FAILED"
	// CodeCheckFailed: a required pre- or post-check of the hop failed.
	CodeCheckFailed Code = "CHECK_FAILED"
	// CodePanic: the runner panicked; Stack holds the stack.
	CodePanic Code = "PANIC"
	// CodeCancelled: stopped or never started because the caller cancelled
	// or a fail-fast policy stopped the run.
	CodeCancelled Code = "CANCELLED"
	// CodeCheckpointFailed: the Checkpointer could not record a transition,
	// so the run stopped rather than act without a record.
	CodeCheckpointFailed Code = "CHECKPOINT_FAILED"
	// CodeAbandoned: an operator abandoned the run; also the code of the
	// hops and components it left unfinished (see Status.Abandon).
	CodeAbandoned Code = "ABANDONED"
	// CodeWaitingForApproval: a gate holds the step until it is approved.
	CodeWaitingForApproval Code = "WAITING_FOR_APPROVAL"
	// CodeUntilReached: the run stopped at the step runner.WithUntil named.
	CodeUntilReached Code = "UNTIL_REACHED"
	// CodeRollbackFailed: the component's Rollback returned an error.
	CodeRollbackFailed Code = "ROLLBACK_FAILED"
	// CodeIrreversible: the component is irreversible and stays at its
	// target.
	CodeIrreversible Code = "IRREVERSIBLE"
	// CodeRollbackBlocked: not rolled back because a component that
	// depends on it stays at its target.
	CodeRollbackBlocked Code = "ROLLBACK_BLOCKED"
	// CodeRollbackRequested: the run was rolled back because it was
	// asked to be (runner.Revert), not because something failed; it is
	// the code of the status's LastFailure, which says who asked and why.
	CodeRollbackRequested Code = "ROLLBACK_REQUESTED"
)

// Codes lists every Code, for documentation and exhaustive tests.
func Codes() []Code {
	return []Code{CodeComponentFailed, CodeComponentTimeout, CodeDependencyFailed, CodeCheckFailed,
		CodePanic, CodeCancelled, CodeCheckpointFailed, CodeAbandoned, CodeWaitingForApproval, CodeUntilReached,
		CodeRollbackFailed, CodeIrreversible, CodeRollbackBlocked, CodeRollbackRequested}
}
