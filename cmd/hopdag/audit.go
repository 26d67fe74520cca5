package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// auditLog is the --log-file of a command: one JSON object per line
// (auditRecord), appended, each line written with one write(2) call as it
// happens, so that a SIGKILL loses nothing already logged and a resumed run
// appends to the same file. It records the command invoked, every event of
// the run, every lock transition (acquire, refresh, release, loss, refusal),
// interrupts, and the exit status. A nil *auditLog logs nothing.
type auditLog struct {
	mu   sync.Mutex
	f    *os.File
	pid  int
	err  error // the first write error, reported once at close
	path string
	// cliText, when set, puts the library's messages in events in the
	// command line's terms (cli.cliMessage), as the table shows them.
	cliText func(string) string
}

// auditRecord is one line of the audit log. Kind is "command", "event",
// "lock", "signal", "abandon", "rollback" (Phase is the upgrade's phase
// when asked, Reason the --reason), "approve" (Step and By), "new-upgrade" (the previous upgrade of the
// store was finished: Phase is its phase, Reason the line printed),
// "output" (a line a command wrote: Event is stdout or stderr, Reason the
// line), "log" (a warning or error the run logged on stderr, such as
// events the progress display dropped: Event is WARN or ERROR, Reason the
// message and its attributes) or "exit"; Event is the runner's event type
// for "event", and Acquired, Refreshed, Released, Lost or Refused for
// "lock".
type auditRecord struct {
	Time      time.Time `json:"time"`
	PID       int       `json:"pid"`
	Kind      string    `json:"kind"`
	Event     string    `json:"event,omitempty"`
	Args      []string  `json:"args,omitempty"`
	Host      string    `json:"host,omitempty"`
	Hop       string    `json:"hop,omitempty"`
	Component string    `json:"component,omitempty"`
	Version   string    `json:"version,omitempty"`
	Attempt   int       `json:"attempt,omitempty"`
	Check     string    `json:"check,omitempty"`
	Phase     string    `json:"phase,omitempty"`
	Code      string    `json:"code,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Error     string    `json:"error,omitempty"`
	Duration  string    `json:"duration,omitempty"`
	Backoff   string    `json:"backoff,omitempty"`
	Done      *int      `json:"done,omitempty"`
	Total     *int      `json:"total,omitempty"`
	Holder    string    `json:"holder,omitempty"`
	Token     uint64    `json:"token,omitempty"`
	Expires   time.Time `json:"expires,omitzero"`
	Signal    string    `json:"signal,omitempty"`
	// Step and By are an approval's (kind "approve").
	Step   string `json:"step,omitempty"`
	By     string `json:"by,omitempty"`
	Status *int   `json:"status,omitempty"`
}

// openAudit opens path for appending, creating it and its directory.
func openAudit(path string) (*auditLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("--log-file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--log-file: %w", err)
	}
	return &auditLog{f: f, pid: os.Getpid(), path: path}, nil
}

func (a *auditLog) write(r auditRecord) {
	if a == nil {
		return
	}
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.Time = r.Time.UTC()
	r.PID = a.pid
	line, err := json.Marshal(r)
	if err != nil {
		return // every field marshals
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.f.Write(append(line, '\n')); err != nil && a.err == nil {
		a.err = err
	}
}

// close closes the file and returns the first write error.
func (a *auditLog) close() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.f.Close()
	if a.err != nil {
		return fmt.Errorf("--log-file %s: %w", a.path, a.err)
	}
	return err
}

func (a *auditLog) command(args []string) {
	host, _ := os.Hostname()
	a.write(auditRecord{Kind: "command", Args: append([]string{"hopdag"}, redactArgs(args)...), Host: host})
}

// secretKey matches the --set keys whose values the audit log leaves out.
var secretKey = regexp.MustCompile(`(?i)password|passwd|token|secret|credential|apikey|api_key`)

// redacted stands for a secret value in the audit log.
const redacted = "REDACTED"

// redactArgs is the command line as the audit log records it: the values
// of --set-secret, and of --set keys that look secret (secretKey),
// replaced by REDACTED.
func redactArgs(args []string) []string {
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		name, value, inline := strings.Cut(out[i], "=")
		if name != "--set" && name != "--set-secret" {
			continue
		}
		if !inline {
			if i+1 >= len(out) {
				break
			}
			i++
			value = out[i]
		}
		value = redactPairs(value, name == "--set-secret")
		if inline {
			out[i] = name + "=" + value
		} else {
			out[i] = value
		}
	}
	return out
}

// redactPairs redacts the values of KEY=VALUE,... (all of them, or those
// of secret-looking keys).
func redactPairs(s string, all bool) string {
	pairs := splitPairs(s)
	for i, p := range pairs {
		if k, _, ok := strings.Cut(p, "="); ok && (all || secretKey.MatchString(k)) {
			pairs[i] = k + "=" + redacted
		} else {
			pairs[i] = strings.ReplaceAll(p, ",", `\,`)
		}
	}
	return strings.Join(pairs, ",")
}

func (a *auditLog) exit(code int) { a.write(auditRecord{Kind: "exit", Status: &code}) }

// Observe implements runner.Observer: one line per event. hopdag run adds
// it with runner.WithBlockingObserver, so that the log has every event,
// whatever the progress display on stdout does (a pipe nobody reads holds
// that one up, not the log).
func (a *auditLog) Observe(ev runner.Event) {
	r := auditRecord{Time: ev.Time, Kind: "event", Event: string(ev.Type), Hop: ev.HopName, Component: ev.Component,
		Version: ev.Version, Attempt: ev.Attempt, Check: ev.Check, Phase: string(ev.Phase), Code: string(ev.Code),
		Reason: a.text(ev.Reason), Done: &ev.Progress.Done, Total: &ev.Progress.Total}
	if ev.Err != nil {
		r.Error = a.text(ev.Err.Error())
	}
	if ev.Duration > 0 {
		r.Duration = ev.Duration.String()
	}
	if ev.Backoff > 0 {
		r.Backoff = ev.Backoff.String()
	}
	a.write(r)
}

// text is msg in the command line's terms (cli.cliMessage, set by the
// command), or msg.
func (a *auditLog) text(msg string) string {
	if a == nil || a.cliText == nil {
		return msg
	}
	return a.cliText(msg)
}

func (a *auditLog) lock(event string, l state.Lease, err error) {
	r := auditRecord{Kind: "lock", Event: event, Holder: l.Holder, Token: l.Token, Expires: l.Expires}
	if err != nil {
		r.Error = a.text(err.Error())
	}
	a.write(r)
}

func (c *cli) auditSignal(sig os.Signal, what string) {
	if c.rf != nil {
		c.rf.audit.write(auditRecord{Kind: "signal", Signal: signame(sig), Reason: what})
	}
}

// auditedLock logs every transition of a lock: the keeper refreshes
// through it, so refreshes are logged too.
type auditedLock struct {
	state.Lock
	log *auditLog
}

func (l auditedLock) Acquire(ctx context.Context, holder string, ttl time.Duration) (state.Lease, error) {
	lease, err := l.Lock.Acquire(ctx, holder, ttl)
	if err != nil {
		r := state.Lease{Holder: holder}
		if le, ok := err.(*state.LockedError); ok {
			r = state.Lease{Holder: le.Holder, Token: le.Token, Expires: le.Expires}
		}
		l.log.lock("Refused", r, err)
		return lease, err
	}
	l.log.lock("Acquired", lease, nil)
	return lease, nil
}

func (l auditedLock) Refresh(ctx context.Context, lease state.Lease) (state.Lease, error) {
	next, err := l.Lock.Refresh(ctx, lease)
	if err != nil {
		l.log.lock("RefreshFailed", lease, err)
		return next, err
	}
	l.log.lock("Refreshed", next, nil)
	return next, nil
}

func (l auditedLock) Release(ctx context.Context, lease state.Lease) error {
	err := l.Lock.Release(ctx, lease)
	event := "Released"
	if err != nil {
		event = "ReleaseFailed"
	}
	l.log.lock(event, lease, err)
	return err
}

// warnings is a slog.Handler that passes every record to the handler it
// wraps and writes those at Warn and above to the audit log too (kind
// "log"), so that what a run says about itself on stderr only (events an
// observer dropped, a lease refresh that failed) is in the log as well.
type warnings struct {
	slog.Handler
	log   *auditLog
	attrs string // " k=v" of WithAttrs, in order
	group string // the groups of WithGroup, "g." each
}

// logWarnings returns l with its warnings and errors in a as well; l
// when a is nil.
func logWarnings(l *slog.Logger, a *auditLog) *slog.Logger {
	if a == nil {
		return l
	}
	return slog.New(warnings{Handler: l.Handler(), log: a})
}

func (w warnings) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		var b strings.Builder
		b.WriteString(r.Message)
		b.WriteString(w.attrs)
		r.Attrs(func(a slog.Attr) bool {
			b.WriteString(attrText(w.group, a))
			return true
		})
		w.log.write(auditRecord{Time: r.Time, Kind: "log", Event: r.Level.String(), Reason: w.log.text(b.String())})
	}
	return w.Handler.Handle(ctx, r)
}

func (w warnings) WithAttrs(attrs []slog.Attr) slog.Handler {
	for _, a := range attrs {
		w.attrs += attrText(w.group, a)
	}
	w.Handler = w.Handler.WithAttrs(attrs)
	return w
}

func (w warnings) WithGroup(name string) slog.Handler {
	if name != "" {
		w.group += name + "."
	}
	w.Handler = w.Handler.WithGroup(name)
	return w
}

// attrText is " group.key=value".
func attrText(group string, a slog.Attr) string {
	return fmt.Sprintf(" %s%s=%v", group, a.Key, a.Value.Resolve())
}
