package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// --log-format (run) says what stderr holds: text lines, or JSON records
// only. With json, c.log is a JSON logger on stderr, and c.stderr becomes
// a writer that makes each line written to it one record of c.log (level
// INFO, "hopdag run: " left out), so that nothing hopdag writes there is
// text: the executor's events (runner.SlogObserver), the lines of commands
// (a record "output" with component, stream and line; guard.go), the
// notes on the lock and on interrupts, and the errors (level ERROR: errorf,
// fail1, usageError, which leaves out the flags' help).

// setLogFormat sets c.log, and c.stderr for json, from --log-format. It
// runs before the command (and its signal watcher) starts, so that every
// goroutine sees the same c.stderr. A --log-format that is neither text
// nor json logs as text; run refuses it.
func (c *cli) setLogFormat() {
	if c.rf == nil || *c.rf.logFormat != "json" {
		c.log = slog.New(cliTermsHandler{slog.NewTextHandler(c.aboveBar(), nil)})
		return
	}
	c.log = slog.New(cliTermsHandler{slog.NewJSONHandler(c.stderr, &slog.HandlerOptions{ReplaceAttr: durationText})})
	c.json = true
	c.stderr = &logLines{log: c.log, prefix: "hopdag " + c.name + ": "}
}

// durationText writes a duration as a Go duration string ("1.5s"), as
// every document and the status do, where slog's JSON writes nanoseconds.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// cliTermsHandler is a slog.Handler that puts what the library logs (a lost
// lease's error, say) in the command line's terms, as message does: the
// record's message and its string and error attributes go through
// cliText.
type cliTermsHandler struct{ slog.Handler }

func (h cliTermsHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, cliText(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(cliAttr(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h cliTermsHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = cliAttr(a)
	}
	return cliTermsHandler{h.Handler.WithAttrs(out)}
}

func (h cliTermsHandler) WithGroup(name string) slog.Handler {
	return cliTermsHandler{h.Handler.WithGroup(name)}
}

// cliAttr is a with a string or error value in the command line's terms.
func cliAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, cliText(v.String()))
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, cliText(err.Error()))
		}
	}
	return a
}

// errorf writes an error of the command: "hopdag NAME: " and the text on
// stderr, or with --log-format json one record of level ERROR.
func (c *cli) errorf(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	if c.json {
		c.log.Error(strings.TrimSpace(text))
		return
	}
	c.say("hopdag %s: %s", c.name, text)
}

// say writes a line to stderr, above the progress bar when one is drawn
// (an interrupt's notice comes while the run goes).
func (c *cli) say(format string, args ...any) { fmt.Fprintf(c.aboveBar(), format, args...) }

// aboveBar is stderr, straight, or above the progress bar once there is
// one.
func (c *cli) aboveBar() io.Writer { return &aboveBar{w: c.stderr, bar: &c.bar} }

// logLines is stderr with --log-format json: each line written to it is a
// record of log, without prefix. Writes may come from several goroutines
// (the signal watcher, the lock's waiter); mu keeps their lines whole.
type logLines struct {
	mu     sync.Mutex
	log    *slog.Logger
	prefix string
	buf    []byte
}

func (w *logLines) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if line := strings.TrimPrefix(string(w.buf[:i]), w.prefix); strings.TrimSpace(line) != "" {
			w.log.Info(line)
		}
		w.buf = w.buf[i+1:]
	}
}
