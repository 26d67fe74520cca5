package release

import (
	"cmp"
	"errors"
	"slices"
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
}

// Error prints one problem per line after a summary line.
func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString("release: invalid catalog: ")
	if len(e.Problems) == 1 {
		b.WriteString("1 problem")
	} else {
		b.WriteString(strconv.Itoa(len(e.Problems)))
		b.WriteString(" problems")
	}
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
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

// problems collects Problems; its zero value is ready to use.
type problems struct {
	list []Problem
}

func (ps *problems) add(p Problem) { ps.list = append(ps.list, p) }

// err sorts and deduplicates the problems and returns a *LoadError, or nil.
func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	slices.SortStableFunc(ps.list, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Field, b.Field), cmp.Compare(a.Message, b.Message))
	})
	ps.list = slices.Compact(ps.list)
	return &LoadError{Problems: ps.list}
}

func itoa(n int) string { return strconv.Itoa(n) }
