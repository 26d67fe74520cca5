package release

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalidCatalog is matched (errors.Is) by every error Load and
// NewCatalog return for bad input; errors.As to *LoadError gives the list.
var ErrInvalidCatalog = errors.New("release: invalid catalog")

// Problem is one thing wrong with a catalog: where, what, and how to fix it.
type Problem struct {
	// File is the path of the file inside the catalog ("" when built in code).
	File string `json:"file,omitempty"`
	// Line is the 1-based line of the offending node (0 when unknown).
	Line int `json:"line,omitempty"`
	// Field is the path of the field inside the document, e.g.
	// "spec.components[2].version" ("" for the whole document).
	Field string `json:"field,omitempty"`
	// Message says what is wrong.
	Message string `json:"message"`
	// Fix says how to fix it ("" when the message says it all).
	Fix string `json:"fix,omitempty"`

	omits bool // the "and N more" summary of problems not listed
}

// Error is "file:line: field: message; fix".
func (p Problem) Error() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(p.Line))
		}
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	if p.Fix != "" {
		b.WriteString("; ")
		b.WriteString(p.Fix)
	}
	return b.String()
}

// LoadError lists every problem of a catalog, sorted by file, line, field
// and message. It matches ErrInvalidCatalog.
type LoadError struct {
	Problems []Problem
	// Omitted counts the problems found but not listed: Load lists at most
	// 100 per file and 1,000 in all, and says "and N more" in a Problem of
	// its own where it stops.
	Omitted int
}

// Error prints one problem per line after a summary line.
func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString("release: invalid catalog: ")
	n := e.Total()
	if n == 1 {
		b.WriteString("1 problem")
	} else {
		b.WriteString(strconv.Itoa(n))
		b.WriteString(" problems")
	}
	if e.Omitted > 0 {
		b.WriteString(" (")
		b.WriteString(strconv.Itoa(e.Omitted))
		b.WriteString(" not listed)")
	}
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Total is the number of problems found: those listed, and those Omitted
// (not counting the Problems that say "and N more").
func (e *LoadError) Total() int {
	n := e.Omitted
	for _, p := range e.Problems {
		if !p.omits {
			n++
		}
	}
	return n
}

// Is reports whether target is ErrInvalidCatalog.
func (e *LoadError) Is(target error) bool { return target == ErrInvalidCatalog }

// Unwrap returns the problems as errors, in order.
func (e *LoadError) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

func itoa(n int) string { return strconv.Itoa(n) }
