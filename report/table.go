package report

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// PlanOrder is the order of each hop's components in p: its batches, one
// after the other.
func PlanOrder(p *runner.Plan) [][]string {
	order := make([][]string, len(p.Hops))
	for i, h := range p.Hops {
		order[i] = slices.Concat(h.Batches()...)
	}
	return order
}

// Table prints s: a summary line, the message, the gates, the catalog
// bundle it came from, one row per component (see the package comment for
// the order; order is PlanOrder's, or nil), a line of warnings (failed
// checks that were not required) per hop that has any, and the last
// failure. The message and the last failure print all their
// lines (an exec failure's stderr), indented, up to ten (see lines); the
// rows' ERROR column the first and the last. Columns: hop, component, versions, phase, attempts, duration,
// code, and the last error (or why it was skipped or cancelled).
func Table(w io.Writer, s *record.Status, order [][]string) {
	fmt.Fprintf(w, "status %s -> %s: %s", s.From, s.To, s.Phase)
	if s.Code != "" {
		fmt.Fprintf(w, " (%s)", s.Code)
	}
	fmt.Fprintf(w, ", %d/%d components done, run %d\n", s.Progress.Done, s.Progress.Total, s.Runs)
	if s.Message != "" {
		msg := s.Message
		if f := s.LastFailure; f != nil && strings.HasSuffix(strings.TrimSpace(msg), strings.TrimSpace(f.Error)) {
			// The last failure prints the lines below.
			msg = firstLine(msg)
		}
		fmt.Fprintf(w, "message: %s\n", lines(msg))
	}
	if g := gates(s); g != "" {
		fmt.Fprintf(w, "gated: %s\n", g)
	}
	if c := catalog(s.Catalog); c != "" {
		fmt.Fprintf(w, "catalog: %s\n", c)
	}
	var rowsBuf bytes.Buffer
	tw := tabwriter.NewWriter(&rowsBuf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOP\tCOMPONENT\tFROM\tTO\tPHASE\tATTEMPTS\tDURATION\tCODE\tERROR")
	for i, h := range s.Hops {
		var names []string
		if i < len(order) {
			names = order[i]
		}
		for _, c := range rows(h.Components, names) {
			note := c.Error
			if note == "" || c.Phase == record.Succeeded || c.Phase == record.RolledBack && strings.HasSuffix(note, context.Canceled.Error()) {
				// A component cancelled by the failure, then rolled back:
				// what happened to it is the rollback, not the cancel.
				note = c.Reason
			}
			code := c.Code
			if f := s.LastFailure; code == "" && f != nil && f.Hop == i && f.Component == c.Name {
				// The failed component, rolled back since, keeps the code
				// of its failure, as the last line says.
				code = f.Code
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", hopName(i, h), c.Name,
				dash(c.FromVersion), c.ToVersion, c.Phase, c.Attempts, duration(c.Duration.Duration), dash(string(code)), oneLine(note))
		}
	}
	tw.Flush()
	// Without trailing blanks (an empty last column), for diffs and goldens.
	for line := range strings.Lines(rowsBuf.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
	for i, h := range s.Hops {
		if len(h.Warnings) == 0 {
			continue
		}
		ws := make([]string, len(h.Warnings))
		for j, warning := range h.Warnings {
			ws[j] = oneLine(warning)
		}
		fmt.Fprintf(w, "warnings: hop %s: %s\n", hopName(i, h), strings.Join(ws, "; "))
	}
	if f := s.LastFailure; f != nil {
		what := strings.TrimSpace(f.Component + " " + f.Version)
		if f.Check != "" {
			what = "check " + f.Check
		}
		where := fmt.Sprintf("hop %d", f.Hop+1)
		if what != "" {
			where += " " + what // a request (ROLLBACK_REQUESTED) names no component
		}
		fmt.Fprintf(w, "last failure: %s: %s: %s\n", where, f.Code, lines(f.Error))
	}
}

// hopName is the i-th hop h as the HOP column shows it: "N FROM -> TO",
// and on a route across tracks "N TRACK FROM -> TO" (which track moves).
func hopName(i int, h record.HopStatus) string {
	if h.Track != "" {
		return fmt.Sprintf("%d %s %s -> %s", i+1, h.Track, h.From, h.To)
	}
	return fmt.Sprintf("%d %s -> %s", i+1, h.From, h.To)
}

// catalog is the catalog bundle a run came from: "REF (DIGEST)", then
// whether it came from the local cache (the registry was unreachable) and
// the note on how its digest was found; "" for a directory.
func catalog(c record.CatalogSource) string {
	if c.Ref == "" {
		return ""
	}
	out := c.Ref
	if c.Digest != "" {
		out += " (" + c.Digest + ")"
	}
	if c.Cached {
		out += ", from the local cache"
	}
	if c.Note != "" {
		sep := "; "
		if c.Cached {
			sep = ": "
		}
		out += sep + c.Note
	}
	return out
}

// gates lists the steps the caller gated (Status.Gates) and those
// waiting, sorted, each with its state: waiting, approved by whom, or not
// reached yet.
func gates(s *record.Status) string {
	steps := slices.Concat(s.Gates, s.Waiting)
	slices.Sort(steps)
	var out []string
	for _, step := range slices.Compact(steps) {
		state := "not reached"
		switch i := slices.IndexFunc(s.Approvals, func(a record.Approval) bool { return a.Step == step }); {
		case i >= 0:
			state = "approved by " + s.Approvals[i].By
		case slices.Contains(s.Waiting, step):
			state = "waiting"
		}
		out = append(out, fmt.Sprintf("%s (%s)", step, state))
	}
	return strings.Join(out, ", ")
}

// rows orders a hop's components: by their position in names when given
// (components names does not list come last), else started ones by start
// time, then the rest; ties keep the status's order.
func rows(cs []record.ComponentStatus, names []string) []record.ComponentStatus {
	out := slices.Clone(cs)
	if names == nil && slices.ContainsFunc(cs, func(c record.ComponentStatus) bool { return c.Order > 0 }) {
		// The plan's order, as recorded in the status.
		slices.SortStableFunc(out, func(a, b record.ComponentStatus) int { return cmp.Compare(a.Order, b.Order) })
		return out
	}
	if names != nil {
		rank := make(map[string]int, len(names))
		for i, n := range names {
			rank[n] = i
		}
		pos := func(c record.ComponentStatus) int {
			if r, ok := rank[c.Name]; ok {
				return r
			}
			return len(names)
		}
		slices.SortStableFunc(out, func(a, b record.ComponentStatus) int { return cmp.Compare(pos(a), pos(b)) })
		return out
	}
	slices.SortStableFunc(out, func(a, b record.ComponentStatus) int {
		switch za, zb := a.StartedAt.IsZero(), b.StartedAt.IsZero(); {
		case za && zb:
			return 0
		case za:
			return 1
		case zb:
			return -1
		}
		return a.StartedAt.Compare(b.StartedAt)
	})
	return out
}

func duration(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return d.Round(time.Millisecond).String()
}

// oneLine is s on one line: its first line, and its last when it has
// more (an exec failure's first line ends "last lines of stderr:").
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	first, last := strings.TrimSpace(lines[0]), strings.TrimSpace(lines[len(lines)-1])
	if len(lines) == 1 {
		return first
	}
	return first + " … " + last
}

// maxLines is how many lines lines prints after the first: as many as
// the exec runner keeps of a failed command's stderr.
const maxLines = 10

// lines is s with its lines after the first indented under it, blank ones
// left out, at most maxLines of them (then how many more there were).
func lines(s string) string {
	all := strings.Split(strings.TrimSpace(s), "\n")
	var b strings.Builder
	b.WriteString(strings.TrimSpace(all[0]))
	n := 0
	for _, l := range all[1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n++; n > maxLines {
			continue
		}
		// A tab indents the stderr lines in the error; four spaces do
		// here, and two more for each tab after the first (a list in a
		// list).
		trimmed := strings.TrimLeft(l, "\t")
		deeper := max(len(l)-len(trimmed)-1, 0)
		b.WriteString("\n    " + strings.Repeat("  ", deeper) + strings.TrimRight(trimmed, " \r"))
	}
	if n > maxLines {
		fmt.Fprintf(&b, "\n    … %d more lines", n-maxLines)
	}
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
