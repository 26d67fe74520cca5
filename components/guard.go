package components

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// GuardArg is the first argument with which Exec starts this program as
// the guard of a command (WithGuard). RunGuard recognises it.
const GuardArg = "__hopdag-exec-guard"

// RunGuard runs the guard of an Exec command and exits, when this process
// was started as one (os.Args[1] is GuardArg); otherwise it returns at
// once. A program whose Exec has WithGuard calls it first thing in main
// (and in TestMain, for tests that run commands under the guard), before
// anything else starts:
//
//	func main() {
//		components.RunGuard()
//		...
//	}
func RunGuard() {
	if len(os.Args) > 1 && os.Args[1] == GuardArg {
		os.Exit(guardMain(os.Args[2:]))
	}
}

// WithGuard runs every command under a guard process, so that the command
// and every process it started die with this process, however it dies
// (SIGKILL, a crash, the OOM killer), and with a grace period: when this
// process is gone, the guard sends SIGTERM to the command's process group,
// waits up to the grace period (WithGracePeriod) for the command to exit,
// then sends SIGKILL to the group. Without it, the parent-death signal
// (Linux) reaches only the process Exec started, at once and with SIGKILL:
// the command's own children (a pipeline, a background job, a daemon it
// spawned) outlive it, and a resumed run could start the step again while
// they still run.
//
// The guard is this program, started again with GuardArg: its main must
// call RunGuard first. lock, when not "", is a file the guards hold a
// shared lock on while they live; a coordinator about to resume a run
// calls WaitGuards with the same file first, which waits for the guards
// (and so the commands) of a killed predecessor on this machine to be
// gone. Use one file per run (per state store), in a directory that
// outlives the coordinator (os.TempDir()).
//
// The guard exists on Unix (GuardSupported); elsewhere WithGuard does
// nothing.
func WithGuard(lock string) ExecOption {
	return func(x *Exec) { x.guard, x.guardLock = GuardSupported, lock }
}

// guardArgs is the command line that runs prog (resolved) with args under
// the guard, self being this program.
func (x *Exec) guardArgs(prog string, args []string) []string {
	return append([]string{GuardArg, x.grace.String(), x.guardLock, strconv.Itoa(os.Getpid()), prog}, args...)
}

// Exit statuses of the guard itself (not of its command): bad arguments,
// and a coordinator that was gone before the command started.
const (
	guardUsage = 2
	guardGone  = 130
)

// parseGuard parses `GRACE LOCK PID PROGRAM [ARGS...]`.
func parseGuard(args []string) (grace time.Duration, lock string, parent int, prog []string, err error) {
	if len(args) < 4 {
		return 0, "", 0, nil, fmt.Errorf("want GRACE LOCK PID PROGRAM [ARGS...], got %d arguments", len(args))
	}
	if grace, err = time.ParseDuration(args[0]); err != nil {
		return 0, "", 0, nil, fmt.Errorf("GRACE: %w", err)
	}
	if parent, err = strconv.Atoi(args[2]); err != nil {
		return 0, "", 0, nil, fmt.Errorf("PID: %w", err)
	}
	return grace, args[1], parent, args[3:], nil
}
