package components

// WithGuard makes every command hold a shared lock on the file lock for
// as long as it, or any process it started that keeps the lock's file
// descriptor, runs; and gives the command's first process SIGTERM (its
// parent-death signal, Linux) the moment this process dies, however it
// dies (SIGKILL, a crash, the OOM killer, pkill of the whole program).
// A coordinator about to resume a run calls WaitGuards with the same
// file first, holding the run's lock: it stops whatever a dead
// predecessor's commands left running on this machine (SIGTERM to their
// process groups, the grace it is given, SIGKILL) and returns only once
// the lock is free, so that an attempt never overlaps an earlier one.
// Use one file per run (per state store), in a directory that outlives
// the coordinator (os.TempDir()).
//
// The guarantee rests on no process that could outlive the coordinator:
// the lock lives in the command's processes (an inherited descriptor,
// number 99, opened read-only), so killing every process of this
// program kills nothing that holds it, and the lock is free only when no
// process of the command holds it. What it does not cover: a process
// that closes descriptor 99 (a daemon closing every descriptor, sudo
// without -C) is seen only while it stays in the command's process group
// with a process that holds it; start daemons with setsid, or through a
// service manager, as Exec asks. WaitGuards finds the holders on Linux
// (/proc); on other systems it can only wait for them, up to its timeout.
//
// Without WithGuard (or with lock ""), a command gets SIGKILL as its
// parent-death signal instead (Linux), since nothing would stop it after
// a SIGTERM it ignored, and processes it started outlive a killed
// coordinator.
//
// A guard costs no process: the command is started directly (no process
// of this program between them), one open and flock(2) per command.
func WithGuard(lock string) ExecOption {
	return func(x *Exec) { x.guard, x.guardLock = GuardSupported && lock != "", lock }
}

// guardFD is the descriptor on which a command under the guard holds the
// guard's lock: high, so that scripts that redirect descriptors 3 to 9
// (exec 9>lockfile) or let their shell pick one from 10 up leave it alone.
const guardFD = 99
