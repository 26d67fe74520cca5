package simulate

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// Progress prints one line per event, and on a terminal keeps a progress bar
// on the last line. It is an io.Writer too, for the other lines that go to
// the same terminal (a command's output, a log): Write puts them above the
// bar.
type Progress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	text     func(string) string
	// bar is the bar on the last line, "" when none is drawn.
	bar string
}

// NewProgress returns a progress printer writing to w.
func NewProgress(w io.Writer, terminal bool) *Progress { return &Progress{w: w, terminal: terminal} }

// WithText makes p print each line as text returns it (the command line
// puts the library's messages in its own terms); it returns p.
func (p *Progress) WithText(text func(string) string) *Progress {
	p.text = text
	return p
}

// Observe implements runner.Observer.
func (p *Progress) Observe(ev runner.Event) {
	line := eventLine(ev)
	if p.text != nil {
		line = p.text(line)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal {
		fmt.Fprint(p.w, "\r\033[K")
		p.bar = ""
	}
	if line != "" {
		fmt.Fprintf(p.w, "[%3d/%d] %s\n", ev.Progress.Done, ev.Progress.Total, line)
	}
	if p.terminal && ev.Type != runner.PlanFinished {
		p.bar = bar(ev.Progress, 30)
		fmt.Fprint(p.w, p.bar)
	}
}

// Write writes b, whole lines, where p writes: on a terminal the bar is
// cleared first and drawn again after, so that the lines do not land on
// the bar's line. It returns len(b) once written.
func (p *Progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != "" {
		fmt.Fprint(p.w, "\r\033[K")
	}
	n, err := p.w.Write(b)
	if p.bar != "" {
		fmt.Fprint(p.w, p.bar)
	}
	return n, err
}

func bar(pr record.Progress, width int) string {
	filled := 0
	if pr.Total > 0 {
		filled = pr.Done * width / pr.Total
	}
	return fmt.Sprintf("[%s%s] %d/%d", strings.Repeat("#", filled), strings.Repeat(".", width-filled), pr.Done, pr.Total)
}

func eventLine(ev runner.Event) string {
	comp := ev.Component + " " + ev.Version
	switch ev.Type {
	case runner.PlanStarted:
		return "plan started"
	case runner.HopStarted:
		return fmt.Sprintf("hop %d %s started", ev.Hop+1, ev.HopName)
	case runner.CheckSucceeded:
		return fmt.Sprintf("  check %s passed (%s)", ev.Check, ev.Duration.Round(time.Millisecond))
	case runner.CheckFailed:
		return fmt.Sprintf("  check %s failed (%s): %v", ev.Check, ev.Reason, ev.Err)
	case runner.ComponentStarted:
		if ev.Attempt > 1 {
			return fmt.Sprintf("  start   %s (attempt %d)", comp, ev.Attempt)
		}
		return "  start   " + comp
	case runner.ComponentRetrying:
		return fmt.Sprintf("  retry   %s after %s: %v", comp, ev.Backoff.Round(time.Millisecond), ev.Err)
	case runner.ComponentSucceeded:
		return fmt.Sprintf("  done    %s (%s)", comp, ev.Duration.Round(time.Millisecond))
	case runner.ComponentFailed:
		return fmt.Sprintf("  FAILED  %s: %s", comp, withoutName(ev.Component, ev.Version, ev.Err))
	case runner.ComponentSkipped:
		return fmt.Sprintf("  skip    %s: %s", comp, ev.Reason)
	case runner.ComponentCancelled:
		return fmt.Sprintf("  cancel  %s: %s", comp, ev.Reason)
	case runner.ComponentRollingBack:
		return "  undo    " + comp
	case runner.ComponentRolledBack:
		return "  undone  " + ev.Component + " (back at " + ev.Version + ")"
	case runner.ComponentRollbackFailed:
		return fmt.Sprintf("  STAYS   %s: %s", comp, ev.Reason)
	case runner.HopSucceeded:
		return fmt.Sprintf("hop %d %s succeeded (%s)", ev.Hop+1, ev.HopName, ev.Duration.Round(time.Millisecond))
	case runner.HopFailed:
		// The reason may start with the phase ("cancelled: interrupted by
		// SIGINT"): it is said once.
		words := phaseWords(ev.Phase)
		return fmt.Sprintf("hop %d %s %s: %s", ev.Hop+1, ev.HopName, words, strings.TrimPrefix(ev.Reason, words+": "))
	case runner.PlanFinished:
		return fmt.Sprintf("plan %s (%s)", phaseWords(ev.Phase), ev.Duration.Round(time.Millisecond))
	}
	return ""
}

// withoutName is a component's error as the progress line tells it after
// the component's name and version: without a leading "PACKAGE: NAME
// VERSION: " or "NAME: " that would name them again (as
// runner.ComponentError does).
func withoutName(component, version string, err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	texts := []string{msg}
	if pkg, after, ok := strings.Cut(msg, ": "); ok && pkg == strings.ToLower(pkg) && !strings.ContainsAny(pkg, " .") {
		texts = append(texts, after)
	}
	for _, text := range texts {
		for _, name := range []string{component + " " + version + ": ", component + ": "} {
			if after, ok := strings.CutPrefix(text, name); ok && after != "" {
				return after
			}
		}
	}
	return msg
}

// phaseWords is a phase as words in a sentence: "RolledBack" is "rolled
// back", "WaitingForApproval" "waiting for approval".
func phaseWords(p record.Phase) string {
	var b strings.Builder
	for i, r := range string(p) {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte(' ')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
