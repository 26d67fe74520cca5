package yamldoc

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/hopdag/hopdag/internal/english"
)

// Problem is one thing wrong with a document: where, what, and how to fix
// it. The caller turns it into its own error type.
type Problem struct {
	File    string // the file's path, as the caller named it
	Line    int    // 1-based line of the offending node (0 when unknown)
	Field   string // field path inside the document, e.g. "spec.components[2].version"
	Message string // what is wrong
	Fix     string // how to fix it ("" when the message says it all)
	// Omits marks the "and N more" summary of problems not listed.
	Omits bool
	// Hides marks a syntax error: the documents after it, up to the next
	// "---" line, are lost.
	Hides bool
}

// Reporter receives the problems the parser and the decoder find.
type Reporter interface {
	// Room reports whether a problem of file at line would be listed.
	// When it would not, the reporter counts it as omitted, and the
	// caller need not build it.
	Room(file string, line int) bool
	// Report lists p (call Room first when building p costs anything).
	Report(p Problem)
}

// Caps on the problems Load lists, so that a hostile file (a million
// unknown keys) costs a bounded report: problems past a cap are counted,
// not built, and one Problem says how many there were.
const (
	MaxPerFile  = 100
	MaxProblems = 1000
)

// Problems is the Reporter of one load: it collects Problems, at most
// MaxPerFile per file and MaxProblems in all; its zero value is ready to use. A file past
// its cap keeps the problems of its lowest lines, whatever order they were
// found in (Load checks a document's top-level keys before its spec), so
// that the listed ones are the first a reader meets and the summary sits
// at the first line not listed.
type Problems struct {
	list    []Problem
	listed  int            // problems in list, summaries aside
	files   map[string]int // problems listed per file
	maxLine map[string]int // the highest line listed per file
	// over holds, per file past its cap, how many problems were not
	// listed and the lowest line of them; rest, past the total cap, how
	// many and where the first was found.
	over     map[string]*omitted
	rest     omitted
	restFile string
}

type omitted struct{ n, line int }

// Room reports whether a problem of file can be listed. When it cannot,
// the problem (at line) is counted as omitted: the caller then need not
// build it.
func (ps *Problems) Room(file string, line int) bool {
	if ps.files == nil {
		ps.files, ps.maxLine, ps.over = map[string]int{}, map[string]int{}, map[string]*omitted{}
	}
	switch {
	case ps.files[file] >= MaxPerFile && line < ps.maxLine[file]:
		return true // add lists it in place of the file's last listed problem
	case ps.files[file] >= MaxPerFile:
		ps.omit(file, line)
		return false
	case ps.listed >= MaxProblems:
		if ps.rest.n == 0 {
			ps.rest.line, ps.restFile = line, file
		}
		ps.rest.n++
		return false
	}
	return true
}

// omit counts a problem of file at line as not listed.
func (ps *Problems) omit(file string, line int) {
	o := ps.over[file]
	if o == nil {
		o = &omitted{line: line}
		ps.over[file] = o
	}
	o.n++
	o.line = min(o.line, line)
}

// Report lists p; call Room first when building p costs anything.
func (ps *Problems) Report(p Problem) {
	if !ps.Room(p.File, p.Line) {
		return
	}
	if ps.files[p.File] >= MaxPerFile {
		ps.evict(p.File)
	}
	ps.files[p.File]++
	ps.listed++
	ps.list = append(ps.list, p)
	ps.maxLine[p.File] = max(ps.maxLine[p.File], p.Line)
}

// evict takes the listed problem of file at its highest line out of the
// list, counted as omitted. It scans the list (at most MaxProblems), for
// a problem found above one listed: at most MaxPerFile times per
// pass over a file checked in line order, once per problem where the
// checks go in another order (releases by version: 40,000 releases
// written newest first take 1.12 s, in order 1.14 s).
func (ps *Problems) evict(file string) {
	last, top := -1, -1
	for i, p := range ps.list {
		if p.File == file && p.Line >= top {
			last, top = i, p.Line
		}
	}
	ps.list = slices.Delete(ps.list, last, last+1)
	ps.files[file]--
	ps.listed--
	ps.omit(file, top)
	ps.maxLine[file] = 0
	for _, p := range ps.list {
		if p.File == file {
			ps.maxLine[file] = max(ps.maxLine[file], p.Line)
		}
	}
}

// Drop removes the problems of files (listed and counted).
func (ps *Problems) Drop(files map[string]bool) {
	kept := ps.list[:0]
	for _, p := range ps.list {
		if files[p.File] {
			ps.files[p.File]--
			ps.listed--
			continue
		}
		kept = append(kept, p)
	}
	ps.list = kept
	for f := range files {
		delete(ps.over, f)
		delete(ps.maxLine, f)
	}
}

// Sorted sorts and deduplicates the problems, adds the "and N more" ones,
// and returns them with the number of problems not listed. The order is
// file, line, field and message.
func (ps *Problems) Sorted() (list []Problem, omitted int) {
	if len(ps.list) == 0 && ps.rest.n == 0 {
		return nil, 0
	}
	list = ps.list
	omitted = ps.rest.n
	for _, file := range slices.Sorted(maps.Keys(ps.over)) {
		o := ps.over[file]
		omitted += o.n
		list = append(list, Problem{File: file, Line: o.line, Omits: true,
			Message: fmt.Sprintf("and %d more %s in this file, not listed (at most %d per file are)", o.n, english.Plural(o.n, "problem"), MaxPerFile),
			Fix:     "fix the problems listed and load again"})
	}
	if ps.rest.n > 0 {
		list = append(list, Problem{File: ps.restFile, Line: ps.rest.line, Omits: true,
			Message: fmt.Sprintf("and %d more %s from here on, not listed (at most %d in all are)", ps.rest.n, english.Plural(ps.rest.n, "problem"), MaxProblems),
			Fix:     "fix the problems listed and load again"})
	}
	slices.SortStableFunc(list, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Field, b.Field), cmp.Compare(a.Message, b.Message))
	})
	return slices.Compact(list), omitted
}
