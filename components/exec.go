package components

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// Defaults of an Exec.
const (
	defaultGrace       = 10 * time.Second
	defaultOutputLimit = 64 << 10
	stderrLines        = 10
	// drainTimeout bounds the wait for the output pipes after the command's
	// process group is gone.
	drainTimeout = time.Second
)

// Exec is a runner.Runner for components of type exec: it runs the
// component's command (ComponentVersion.Command) as a child process.
//
// The command is an argv, never a shell string: Args[0] is the program
// (looked up, when it has no slash, in the PATH of the child's
// environment, so command.env.PATH counts; in this process's PATH when
// the environment has none) and no shell parses anything.
// Each argument, each Env value and Dir are text/template templates that
// see the same data as manifests (.Component, .From, .Hop, and .Values from
// WithExecValues), with missing keys an error. The child's environment is
// the base environment (the parent's, or WithEnv), then HOPDAG_COMPONENT,
// HOPDAG_VERSION, HOPDAG_FROM and HOPDAG_HOP, then the component's Env
// (later entries win).
//
// The command runs until it exits or ctx ends; the executor puts the
// component's timeout on ctx. The child leads a new process group (on Unix),
// and Exec owns the group: when ctx ends it sends SIGTERM to the group,
// waits up to the grace period (WithGracePeriod, 10s by default) for the
// group to exit, then sends SIGKILL, so a child that ignores SIGTERM is
// still killed. A context cancelled because a lease is lost (its cause
// has a StopBy method, as state.LostError does) cuts the grace period
// short at that time: the command never outlives the lease. When the
// command exits by itself, whatever is left in its
// group is killed at once: a command must not leave processes behind (start
// daemons with setsid, or through a service manager). A descendant that
// left the group and keeps stdout or stderr open holds Run up for one
// second at most.
//
// When the coordinator dies, even by SIGKILL, the command gets its
// parent-death signal on Linux (SIGKILL; SIGTERM under the guard), so the
// next coordinator, which takes over only once the lease expired, never
// runs the step while that process still runs. The signal reaches the
// process Exec started; processes the child started in turn are killed
// by it only if they set their own, or when the coordinator is PID 1 of
// its container (the kernel then kills the whole PID namespace).
// WithGuard closes that gap: every process of the command holds a lock
// that the next coordinator waits for (WaitGuards), after stopping them.
// Other systems have no parent-death signal: see exec_bsd.go. A program
// that is missing or not an executable file is found before anything
// starts, and is a runner.Permanent error, with the guard or without.
//
// When the coordinator is PID 1 or a child subreaper, the group's orphans
// are reparented to it: Exec reaps the ones that exited, so that zombies
// neither pile up nor hold a stop for the whole grace period.
//
// Standard output and error are captured, keeping the last
// WithOutputLimit bytes (64 KiB by default) of each, and logged at Debug
// on t.Logger; WithOutput copies them as they come. A command that exits
// non-zero, is killed or is stopped returns an *Error wrapping an
// *ExitError with the exit code and the last lines of stderr; when it was
// stopped, the *ExitError wraps ctx.Err(), so errors.Is tells a timeout
// (context.DeadlineExceeded) from a cancellation (context.Canceled).
//
// Exec is safe for concurrent use.
type Exec struct {
	grace          time.Duration
	limit          int
	values         map[string]any
	env            []string
	envSet         bool
	stdout, stderr io.Writer
	outMu          sync.Mutex // serialises writes to stdout and stderr
	// guard runs commands under the guard (WithGuard), holding guardLock.
	guard     bool
	guardLock string
}

// ExecOption configures NewExec.
type ExecOption func(*Exec)

// WithGracePeriod sets how long a stopped command's process group has
// between SIGTERM and SIGKILL (10s by default).
func WithGracePeriod(d time.Duration) ExecOption { return func(x *Exec) { x.grace = d } }

// WithOutputLimit sets how many bytes of stdout and of stderr are kept
// (the last ones; 64 KiB by default).
func WithOutputLimit(n int) ExecOption { return func(x *Exec) { x.limit = n } }

// WithExecValues sets the values templates see as .Values. The map is
// copied one level deep.
func WithExecValues(values map[string]any) ExecOption {
	return func(x *Exec) { x.values = maps.Clone(values) }
}

// WithEnv sets the base environment ("KEY=value" entries) in place of the
// parent process's.
func WithEnv(env []string) ExecOption {
	return func(x *Exec) { x.env, x.envSet = slices.Clone(env), true }
}

// WithOutput copies the command's stdout and stderr to w and errw as they
// come (nil discards). Writes from commands running in parallel are
// serialised but interleave.
func WithOutput(w, errw io.Writer) ExecOption {
	return func(x *Exec) { x.stdout, x.stderr = w, errw }
}

// NewExec returns an Exec.
func NewExec(opts ...ExecOption) *Exec {
	x := &Exec{grace: defaultGrace, limit: defaultOutputLimit}
	for _, o := range opts {
		o(x)
	}
	if x.grace < 0 {
		x.grace = 0
	}
	if x.limit <= 0 {
		x.limit = defaultOutputLimit
	}
	return x
}

// command is a component's command with its templates executed.
type command struct {
	args []string
	env  []string
	dir  string
}

// render executes the templates of cv's command, reporting all failures.
func (x *Exec) render(cv *release.ComponentVersion, data templateData) (command, error) {
	c := cv.Command
	if c == nil || len(c.Args) == 0 || c.Args[0] == "" {
		return command{}, ErrNoCommand
	}
	var (
		out  command
		errs []error
	)
	run := func(name, text string) string {
		s, err := execute(name, text, data)
		if err != nil {
			errs = append(errs, err)
		}
		return s
	}
	for i, a := range c.Args {
		out.args = append(out.args, run(fmt.Sprintf("command.args[%d]", i), a))
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		out.env = append(out.env, k+"="+run("command.env."+k, c.Env[k]))
	}
	out.dir = run("command.dir", c.Dir)
	return out, join(errs)
}

// Validate reports whether cv has a command whose templates execute, for a
// new component (.From and .Hop empty), so that a missing param or value
// shows at plan time.
func (x *Exec) Validate(cv *release.ComponentVersion) error {
	if cv == nil {
		return nilComponent()
	}
	if _, err := x.render(cv, newData(cv, "", "", x.values)); err != nil {
		return wrap(cv, "validate", err)
	}
	return nil
}

// Run runs t.To's command (see Exec). A command that cannot be rendered or
// whose program does not exist is a runner.Permanent error.
func (x *Exec) Run(ctx context.Context, t runner.Task) error {
	cv := t.To
	if cv == nil {
		return noTarget(t)
	}
	fail := func(err error) error {
		return &Error{Component: cv.Name, Version: cv.Version.Original(), Op: "exec", Err: err}
	}
	c, err := x.render(cv, newData(cv, fromVersion(t), hopName(t), x.values))
	if err != nil {
		return runner.Permanent(fail(err))
	}
	env := x.env
	if !x.envSet {
		env = os.Environ()
	}
	c.env = slices.Concat(env, []string{
		"HOPDAG_COMPONENT=" + cv.Name,
		"HOPDAG_VERSION=" + cv.Version.Original(),
		"HOPDAG_FROM=" + fromVersion(t),
		"HOPDAG_HOP=" + hopName(t),
	}, c.env)
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	log := logger(t)
	log.Debug("exec", "args", c.args, "dir", c.dir)
	start := time.Now()
	stdout, stderr, err := x.run(ctx, c)
	log.Debug("exec done", "args", c.args, "duration", time.Since(start), "stdout", string(stdout.bytes()), "stderr", string(stderr.bytes()), "error", err)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return runner.Permanent(fail(err))
		}
		return fail(err)
	}
	return nil
}

// run starts the command, waits for it or for ctx, and returns its output.
//
// The child writes to pipes this process creates and reads, rather than to
// the pipes os/exec makes: cmd.Wait then returns when the child exits,
// whatever its descendants still hold open, and this function decides how
// long to read.
func (x *Exec) run(ctx context.Context, c command) (stdout, stderr *tail, err error) {
	stdout, stderr = newTail(x.limit), newTail(x.limit)
	prog, err := lookPath(c.args[0], c.dir, c.env)
	if err != nil {
		return stdout, stderr, err
	}
	cmd := exec.Command(prog, c.args[1:]...)
	cmd.Args[0] = c.args[0]
	cmd.Env, cmd.Dir = c.env, c.dir
	newProcessGroup(cmd, x.guard)
	outR, outW, err := os.Pipe()
	if err != nil {
		return stdout, stderr, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_ = outR.Close()
		_ = outW.Close()
		return stdout, stderr, err
	}
	var lock *os.File
	if x.guard {
		if lock, err = openGuard(x.guardLock); err != nil {
			_ = outR.Close()
			_ = outW.Close()
			_ = errR.Close()
			_ = errW.Close()
			return stdout, stderr, err
		}
		cmd.ExtraFiles = make([]*os.File, guardFD-2)
		cmd.ExtraFiles[guardFD-3] = lock
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	exited := make(chan error, 1)
	startErr := start(cmd, exited)
	// The child has its own copies of the write ends; closing ours lets the
	// readers see EOF once every process of the group has exited. It holds
	// the guard's lock on its copy: from now on the lock lives exactly as
	// long as the command's processes that keep it.
	if lock != nil {
		_ = lock.Close()
	}
	_ = outW.Close()
	_ = errW.Close()
	if startErr != nil {
		_ = outR.Close()
		_ = errR.Close()
		return stdout, stderr, startErr
	}
	var readers sync.WaitGroup
	readers.Go(func() { x.copy(stdout, outR, x.stdout) })
	readers.Go(func() { x.copy(stderr, errR, x.stderr) })

	g := group{leader: cmd.Process, reaps: reaper()}
	var waitErr, stopErr error
	select {
	case waitErr = <-exited:
		g.kill()
	case <-ctx.Done():
		stopErr = ctx.Err()
		waitErr = x.stop(g, exited, stopGrace(ctx, x.grace))
	}
	g.settle()

	// Every process of the group is gone, so the readers reach EOF once
	// they have drained the pipes, unless a descendant that left the group
	// (setsid) holds them open: wait drainTimeout for that, then close the
	// read ends.
	read := make(chan struct{})
	go func() { readers.Wait(); close(read) }()
	select {
	case <-read:
	case <-time.After(drainTimeout):
		_ = outR.Close()
		_ = errR.Close()
		<-read
	}
	_ = outR.Close()
	_ = errR.Close()

	if stopErr == nil && waitErr == nil {
		return stdout, stderr, nil
	}
	ee := &ExitError{Program: c.args[0], Code: -1, Stderr: stderr.lastLines(stderrLines), Err: waitErr}
	if cmd.ProcessState != nil {
		ee.Code, ee.Signal = cmd.ProcessState.ExitCode(), signalOf(cmd.ProcessState)
	}
	if stopErr != nil {
		ee.Err = stopErr
	} else if _, ok := errors.AsType[*exec.ExitError](waitErr); !ok {
		return stdout, stderr, waitErr
	}
	return stdout, stderr, ee
}

// settle reaps the group's killed orphans when this process is their
// reaper (PID 1, a subreaper), so that they do not stay zombies: it waits
// up to drainTimeout for the group to be gone. The leader was waited for.
func (g group) settle() {
	if !g.reaps {
		return
	}
	deadline := time.Now().Add(drainTimeout)
	for g.alive() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// start starts cmd and sends cmd.Wait's result to exited once it exited.
//
// The parent-death signal (newProcessGroup) follows the thread that
// started the child, not the process (Go issue 27505): the kernel sends it
// when that thread exits, which the runtime does to a thread whose locked
// goroutine ends without unlocking it. So the start and the wait happen
// on one goroutine locked to its thread for the child's whole life: no
// other goroutine can lock that thread and end it, and the signal comes
// only when this process dies. It costs a thread per running command,
// which the blocking wait takes anyway.
func start(cmd *exec.Cmd, exited chan<- error) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	return <-started
}

// lookPath finds the program file: as given when it has a slash (relative
// to dir when it is relative and dir is not ""), checked to be an
// executable file, else in the PATH of the child's environment (its last
// PATH entry, so that command.env.PATH wins), else in this process's
// PATH. A program that is missing wraps fs.ErrNotExist, one that is not
// an executable file fs.ErrPermission: Run makes both permanent.
func lookPath(file, dir string, env []string) (string, error) {
	if strings.ContainsRune(file, '/') {
		return file, executable(file, dir)
	}
	path, found := "", false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path, found = v, true
		}
	}
	if !found {
		return exec.LookPath(file)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // never the working directory by accident
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if path == os.Getenv("PATH") {
		return "", &exec.Error{Name: file, Err: exec.ErrNotFound}
	}
	return "", &exec.Error{Name: file, Err: fmt.Errorf("%w (the command's PATH is %s)", exec.ErrNotFound, path)}
}

// executable checks that file (relative to dir) is an executable file.
func executable(file, dir string) error {
	where, p := file, file
	if !filepath.IsAbs(file) && dir != "" {
		where, p = fmt.Sprintf("%s (in %s)", file, dir), filepath.Join(dir, file)
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("program %s: %w", where, fs.ErrNotExist)
	case err != nil:
		return fmt.Errorf("program %s: %w", where, err)
	case !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0:
		return fmt.Errorf("program %s: %w: %v, want an executable file (chmod +x it, or run it with its interpreter)", where, fs.ErrPermission, fi.Mode())
	}
	return nil
}

// stopGrace is the grace period of a stop: grace, cut short when ctx's
// cause says by when work must have stopped (a StopBy method: a lost
// lease, state.LostError, must not be outlived by its commands, since
// another coordinator may take over soon after its expiry).
func stopGrace(ctx context.Context, grace time.Duration) time.Duration {
	sb, ok := context.Cause(ctx).(interface{ StopBy() time.Time })
	if !ok {
		return grace
	}
	return max(min(grace, time.Until(sb.StopBy())), 0)
}

// stop ends a command whose context ended: SIGTERM to its group, up to one
// grace period for the whole group to exit, then SIGKILL to whatever is
// left. It returns the leader's wait error.
func (x *Exec) stop(g group, exited <-chan error, d time.Duration) error {
	g.terminate()
	grace := time.NewTimer(d)
	defer grace.Stop()
	var waitErr error
	select {
	case waitErr = <-exited:
		poll := time.NewTicker(10 * time.Millisecond)
		defer poll.Stop()
	wait:
		for g.alive() {
			select {
			case <-grace.C:
				break wait
			case <-poll.C:
			}
		}
		g.kill()
		return waitErr
	case <-grace.C:
		g.kill()
		return <-exited
	}
}

// copy reads r to EOF into t, and into w when it is not nil.
func (x *Exec) copy(t *tail, r io.Reader, w io.Writer) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			t.write(buf[:n])
			if w != nil {
				x.outMu.Lock()
				_, _ = w.Write(buf[:n])
				x.outMu.Unlock()
			}
		}
		if err != nil {
			return
		}
	}
}
