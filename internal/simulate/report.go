package simulate

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/hopdag/hopdag/runner"
)

// Progress prints one line per event, and on a terminal keeps a progress bar
// on the last line.
type Progress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
}

// NewProgress returns a progress printer writing to w.
func NewProgress(w io.Writer, terminal bool) *Progress { return &Progress{w: w, terminal: terminal} }

// Observe implements runner.Observer.
func (p *Progress) Observe(ev runner.Event) {
	line := eventLine(ev)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal {
		fmt.Fprint(p.w, "\r\033[K")
	}
	if line != "" {
		fmt.Fprintf(p.w, "[%3d/%d] %s\n", ev.Progress.Done, ev.Progress.Total, line)
	}
	if p.terminal && ev.Type != runner.PlanFinished {
		fmt.Fprint(p.w, bar(ev.Progress, 30))
	}
}

func bar(pr runner.Progress, width int) string {
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
		return fmt.Sprintf("  FAILED  %s: %v", comp, ev.Err)
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
		return fmt.Sprintf("hop %d %s %s: %s", ev.Hop+1, ev.HopName, strings.ToLower(string(ev.Phase)), ev.Reason)
	case runner.PlanFinished:
		return fmt.Sprintf("plan %s (%s)", strings.ToLower(string(ev.Phase)), ev.Duration.Round(time.Millisecond))
	}
	return ""
}

// StatusTable prints one row per component of every hop.
func StatusTable(w io.Writer, s *runner.Status) {
	fmt.Fprintf(w, "status %s -> %s: %s", s.From, s.To, s.Phase)
	if s.Code != "" {
		fmt.Fprintf(w, " (%s)", s.Code)
	}
	fmt.Fprintf(w, ", %d/%d components done, run %d\n", s.Progress.Done, s.Progress.Total, s.Runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOP\tCOMPONENT\tFROM\tTO\tPHASE\tATTEMPTS\tNOTE")
	for i, h := range s.Hops {
		for _, c := range h.Components {
			note := c.Reason
			if c.Error != "" && c.Phase != runner.Succeeded {
				note = c.Error
			}
			if c.Code != "" {
				note = string(c.Code) + ": " + note
			}
			fmt.Fprintf(tw, "%d %s -> %s\t%s\t%s\t%s\t%s\t%d\t%s\n", i+1, h.From, h.To, c.Name, dash(c.FromVersion), c.ToVersion, c.Phase, c.Attempts, note)
		}
	}
	tw.Flush()
	if s.LastFailure != nil {
		f := s.LastFailure
		what := f.Component + " " + f.Version
		if f.Check != "" {
			what = "check " + f.Check
		}
		fmt.Fprintf(w, "last failure: hop %d %s: %s: %s\n", f.Hop+1, what, f.Code, f.Error)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
