package yamldoc

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestProblems: the collector lists at most MaxPerFile problems per file,
// those of the lowest lines whatever order they came in, and at most
// MaxProblems in all, and says how many it left out where it stopped.
func TestProblems(t *testing.T) {
	tests := []struct {
		name    string
		report  func(ps *Problems)
		listed  int
		omitted int
		last    string // the last problem listed: File:Line Message
	}{
		{"none", func(*Problems) {}, 0, 0, ""},
		{"duplicates listed once", func(ps *Problems) {
			ps.Report(Problem{File: "a", Line: 1, Message: "m"})
			ps.Report(Problem{File: "a", Line: 1, Message: "m"})
		}, 1, 0, "a:1 m"},
		{"per-file cap keeps the lowest lines", func(ps *Problems) {
			for line := 2 * MaxPerFile; line > 0; line-- {
				ps.Report(Problem{File: "a", Line: line, Message: "m"})
			}
		}, MaxPerFile + 1, MaxPerFile, fmt.Sprintf("a:%d and %d more problems in this file, not listed (at most %d per file are)", MaxPerFile+1, MaxPerFile, MaxPerFile)},
		{"total cap", func(ps *Problems) {
			for f := range MaxProblems/MaxPerFile + 1 {
				for line := range MaxPerFile {
					ps.Report(Problem{File: fmt.Sprintf("f%02d", f), Line: line + 1, Message: "m"})
				}
			}
		}, MaxProblems + 1, MaxPerFile, fmt.Sprintf("f%02d:1 and %d more problems from here on, not listed (at most %d in all are)", MaxProblems/MaxPerFile, MaxPerFile, MaxProblems)},
		{"drop", func(ps *Problems) {
			ps.Report(Problem{File: "a", Line: 1, Message: "m"})
			ps.Report(Problem{File: "manifest", Line: 1, Message: "m"})
			ps.Drop(map[string]bool{"manifest": true})
		}, 1, 0, "a:1 m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ps Problems
			tt.report(&ps)
			list, omitted := ps.Sorted()
			assert.Len(t, list, tt.listed, "problems listed")
			assert.Equal(t, tt.omitted, omitted, "problems omitted")
			if len(list) > 0 {
				last := list[len(list)-1]
				assert.Equal(t, tt.last, fmt.Sprintf("%s:%d %s", last.File, last.Line, last.Message), "last problem")
				assert.Equal(t, tt.omitted > 0, last.Omits, "last problem is a summary")
			}
		})
	}
}

func TestProblemsRoom(t *testing.T) {
	var ps Problems
	for line := 1; line <= MaxPerFile; line++ {
		assert.True(t, ps.Room("a", line), "Room(a, %d) below the cap", line)
		ps.Report(Problem{File: "a", Line: line})
	}
	assert.False(t, ps.Room("a", MaxPerFile+1), "Room(a, %d) past the cap", MaxPerFile+1)
	assert.True(t, ps.Room("a", 0), "Room(a, 0): a line above the listed ones replaces the last")
	assert.True(t, ps.Room("b", 1), "Room(b, 1): another file")
}
