package yamldoc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLines: Line finds the line of a field path below each document's
// spec, through aliases and merge keys and in large mappings, parsing a
// document again once.
func TestLines(t *testing.T) {
	var big strings.Builder
	big.WriteString("spec:\n")
	for i := range 2 * smallMapping {
		fmt.Fprintf(&big, "  k%d: v\n", i)
	}
	big.WriteString("  last: [a, b]\n")
	text := "kind: A\nspec:\n  name: a\n  rules:\n    - from: x\n      to: y\n  base: &b {deep: 1}\n  merged:\n    <<: *b\n---\n" + big.String()
	ls := NewLines("spec")
	var docs []Document
	p := Parser{Lines: ls, Decode: func(doc Document) { docs = append(docs, doc) }}
	p.Parse([]File{{Name: "f.yaml", Data: []byte(text)}})
	if len(docs) != 2 {
		t.Fatalf("parsed %d documents, want 2", len(docs))
	}
	first, second := docs[0].Line, docs[1].Line
	tests := []struct {
		name string
		doc  int
		path []any
		want int
	}{
		{"spec itself", first, nil, 3},
		{"key", first, []any{"name"}, 3},
		{"list item field", first, []any{"rules", 0, "to"}, 6},
		{"through a merge key", first, []any{"merged", "deep"}, 7},
		{"absent: the document's line", first, []any{"nope"}, first},
		{"index past the end", first, []any{"rules", 5}, first},
		{"large mapping, indexed", second, []any{"last", 1}, second + 1 + 2*smallMapping},
		{"large mapping, absent key", second, []any{"none"}, second},
		{"no such document", 99, []any{"name"}, 99},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ls.Line("f.yaml", tt.doc, tt.path...), "Line(f.yaml, %d, %v)", tt.doc, tt.path)
		})
	}
	assert.Equal(t, 2, ls.Reparsed(), "documents parsed again")
	var none *Lines
	assert.Equal(t, 7, none.Line("f.yaml", 7, "name"), "a nil Lines gives the document's line")
}
