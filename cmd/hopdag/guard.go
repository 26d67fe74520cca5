package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/runner"
)

// execRunner is the runner of exec components: the exec runner with every
// command under its guard (components.WithGuard, one lock file per
// --state: commandsLock): every process of a command holds the lock, gets
// nothing between it and this hopdag (no process per command), and the
// command's first process gets SIGTERM the moment this hopdag dies,
// however it dies. What a killed run's commands left running is stopped
// (SIGTERM, the grace period, SIGKILL) by the next run before it starts
// anything (components.WaitGuards in run), and by this hopdag when a
// second interrupt ends it at once (stopCommands). Without it
// TestExecRunKilledAndResumed and TestSecondInterruptKillsAtOnce (the
// command's child outlives hopdag) fail.
//
// Each command's output goes, line by line, to stderr under its
// component's name (unless --quiet) and to the audit log (--log-file);
// see execOutput.
func (c *cli) execRunner(values map[string]any) (runner.Runner, error) {
	opts := []components.ExecOption{components.WithGracePeriod(c.grace()), components.WithExecValues(values),
		components.WithGuard(c.commandsLock())}
	sink := &outputSink{w: c.lines()}
	if c.json {
		sink.w, sink.log = nil, c.log
	}
	if c.rf != nil {
		sink.audit = c.rf.audit
		if *c.rf.quiet {
			sink.w, sink.log = nil, nil
		}
	}
	return &execOutput{Exec: components.NewExec(opts...), opts: opts, sink: sink}, nil
}

// execOutput is the exec runner with each command's output streamed: per
// Run (and Rollback) an Exec of the same options with WithOutput writing
// to lineWriters for this component, so that every line is printed as
// "  NAME | line" and recorded in the audit log as a record of kind
// "output" (Event "stdout" or "stderr", Reason the line; at most
// maxAuditLines a stream and attempt, then one record saying how many
// more there were). Validate and ValidateRollback are the Exec's.
type execOutput struct {
	*components.Exec
	opts []components.ExecOption
	sink *outputSink
}

func (x *execOutput) Run(ctx context.Context, t runner.Task) error {
	return x.do(ctx, t, (*components.Exec).Run)
}

func (x *execOutput) Rollback(ctx context.Context, t runner.Task) error {
	return x.do(ctx, t, (*components.Exec).Rollback)
}

func (x *execOutput) do(ctx context.Context, t runner.Task, f func(*components.Exec, context.Context, runner.Task) error) error {
	if x.sink.w == nil && x.sink.log == nil && x.sink.audit == nil {
		return f(x.Exec, ctx, t)
	}
	outRec, outDone := x.sink.recorder(t, "stdout")
	errRec, errDone := x.sink.recorder(t, "stderr")
	out, errw := x.sink.writer(t.Component, "stdout", outRec), x.sink.writer(t.Component, "stderr", errRec)
	exe := components.NewExec(append(slices.Clip(x.opts), components.WithOutput(out, errw))...)
	err := f(exe, ctx, t)
	// Run has returned: its readers are done, nothing writes any more.
	out.flush()
	errw.flush()
	outDone()
	errDone()
	return err
}

// Bounds of the output of commands: a line longer than maxOutputLine
// bytes is cut (on stderr and in the audit log), and the audit log keeps
// the first maxAuditLines lines of each stream of an attempt.
const (
	maxOutputLine = 4 << 10
	maxAuditLines = 200
)

// outputSink is where the lines of commands go: w (nil: nowhere, for
// --quiet or --log-format json), log (with --log-format json: a record
// per line; nil: none) and the audit log (nil: none). Commands run in
// parallel: each line is written to w in one call, under mu, so that
// lines never mix (they interleave, whole).
type outputSink struct {
	mu    sync.Mutex
	w     io.Writer
	log   *slog.Logger
	audit *auditLog
}

// writer returns the lineWriter of stream (stdout, stderr) of a command
// of component name; record, when not nil, gets each line.
func (s *outputSink) writer(name, stream string, record func(string)) *lineWriter {
	return &lineWriter{s: s, component: name, stream: stream, prefix: "  " + name + " | ", record: record}
}

// recorder returns what records the lines of stream of t in the audit
// log, and what to call once the command is done.
func (s *outputSink) recorder(t runner.Task, stream string) (record func(string), done func()) {
	if s.audit == nil {
		return nil, func() {}
	}
	base := auditRecord{Kind: "output", Event: stream, Component: t.Component, Attempt: t.Attempt}
	if t.Hop != nil {
		base.Hop = t.Hop.Name()
	}
	if t.To != nil {
		base.Version = t.To.Version.Original()
	}
	n := 0
	record = func(line string) {
		if n++; n <= maxAuditLines {
			r := base
			r.Reason = line
			s.audit.write(r)
		}
	}
	done = func() {
		if n > maxAuditLines {
			r := base
			r.Reason = fmt.Sprintf("… %d more lines not logged (the log keeps the first %d)", n-maxAuditLines, maxAuditLines)
			s.audit.write(r)
		}
	}
	return record, done
}

// lineWriter cuts a command's stream into lines. It is written by one
// goroutine (the Exec's reader of that stream), then flushed.
type lineWriter struct {
	s                 *outputSink
	component, stream string
	prefix            string
	record            func(string)
	buf               []byte
	// cut: the line in buf was cut at maxOutputLine; the rest of it is
	// dropped up to its newline.
	cut bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !w.cut {
			room := maxOutputLine - len(w.buf)
			if len(chunk) > room {
				w.buf = append(w.buf, chunk[:room]...)
				w.cut = true
			} else {
				w.buf = append(w.buf, chunk...)
			}
		}
		if i < 0 {
			break
		}
		w.line()
		p = p[i+1:]
	}
	return n, nil
}

// flush writes what is left, a last line without a newline.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 || w.cut {
		w.line()
	}
}

func (w *lineWriter) line() {
	line := strings.TrimRight(string(w.buf), "\r")
	if w.cut {
		line += " …(cut)"
	}
	w.buf, w.cut = w.buf[:0], false
	if w.record != nil {
		w.record(line)
	}
	if w.s.log != nil {
		w.s.log.Info("output", "component", w.component, "stream", w.stream, "line", line)
	}
	if w.s.w != nil {
		w.s.mu.Lock()
		defer w.s.mu.Unlock()
		_, _ = io.WriteString(w.s.w, w.prefix+line+"\n")
	}
}

// commandsLock is the file the guards of a run's commands hold a shared
// lock on (components.WithGuard): one per --state, in the temporary
// directory, so that it works for every backend on this machine (a run on
// another machine waits for the lease of a dead one to expire, which
// outlasts the grace period). A run waits for it (components.WaitGuards)
// before it starts.
func (c *cli) commandsLock() string {
	if c.state == nil || *c.state == "" {
		return ""
	}
	spec := *c.state
	if !strings.Contains(spec, "://") {
		if abs, err := filepath.Abs(spec); err == nil {
			spec = abs
		}
	}
	sum := sha256.Sum256([]byte(spec))
	return filepath.Join(os.TempDir(), "hopdag-commands-"+hex.EncodeToString(sum[:8])+".lock")
}

// stopCommands kills, at once, every process of this run's commands and
// their process groups (components.WaitGuards with no grace): hopdag is
// about to exit without waiting for them (a second interrupt), and they
// must not run on while nothing will record how they end. It returns when
// they are gone, or after a few seconds if some cannot be killed.
func (c *cli) stopCommands() {
	if lock := c.commandsLock(); lock != "" && c.executing.Load() {
		_ = components.WaitGuards(context.Background(), lock, 0, nil)
	}
}
