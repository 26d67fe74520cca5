package components

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitDocuments(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []chunk
	}{
		{"one", "a: 1\n", []chunk{{"a: 1\n", 1}}},
		{"empty", "", []chunk{{"", 1}}},
		{"separators", "---\na: 1\n--- # c\nb: 2\n---\n", []chunk{{"", 1}, {"a: 1\n", 2}, {"b: 2\n", 4}, {"", 6}}},
		{"not separators", "a: |\n  ---\n---x\n--- a\n", []chunk{{"a: |\n  ---\n---x\n--- a\n", 1}}},
		{"CRLF", "a: 1\r\n---\r\nb: 2\r\n", []chunk{{"a: 1\r\n", 1}, {"b: 2\r\n", 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, splitDocuments(tt.text))
		})
	}
}

func TestTail(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		bytes  string
		lines  []string
	}{
		{"under the bound", 100, []string{"a\nb\n", "c"}, "a\nb\nc", []string{"a", "b", "c"}},
		{"cut line dropped", 6, []string{"first\nsecond\nthird\n"}, "third\n", []string{"third"}},
		{"cut inside the last line", 4, []string{"abcdefgh"}, "efgh", nil},
		{"amortised trimming keeps the tail", 3, []string{"12", "34", "56", "78", "9\n"}, "89\n", nil},
		{"blank lines skipped, last n kept", 100, []string{"1\n\n2\n3\n4\n  \n5\n6\n7\n8\n9\n10\n11\n"}, "1\n\n2\n3\n4\n  \n5\n6\n7\n8\n9\n10\n11\n",
			[]string{"2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newTail(tt.max)
			for _, w := range tt.writes {
				tl.write([]byte(w))
			}
			assert.Equal(t, tt.bytes, string(tl.bytes()))
			assert.Equal(t, tt.lines, tl.lastLines(stderrLines))
		})
	}
}

// FuzzDecodeDocuments: any text either decodes to objects with an
// identity, or to *DocumentErrors; an object's YAML decodes to itself.
func FuzzDecodeDocuments(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: A\nmetadata: {name: x}\n",
		"---\napiVersion: v1\nkind: A\nmetadata:\n  name: x\n  namespace: y\n---\n# c\n---\nkind: B\n",
		"- a\n--- !!map\nb: 1\n",
		"a: |\n  ---\n---x\n",
		"apiVersion: v1\r\nkind: A\r\nmetadata: {name: x}\r\n",
		"%YAML 1.2\n---\napiVersion: v1\nkind: A\nmetadata: {name: x}\n",
		"&a {apiVersion: v1, kind: A, metadata: {name: x}}\n---\n*a\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		docs, errs := decodeDocuments("m.yaml", text)
		n := 0
		for _, d := range docs {
			o := d.obj
			require.NotEmpty(t, o.APIVersion)
			require.NotEmpty(t, o.Kind)
			require.NotEmpty(t, o.Name)
			require.Greater(t, o.Doc, n, "documents are numbered in order")
			n = o.Doc
			require.True(t, strings.HasSuffix(o.YAML, "\n"))
			again, errs := decodeDocuments("m.yaml", o.YAML)
			require.Empty(t, errs, "an object's YAML decodes again: %q", o.YAML)
			require.Len(t, again, 1)
			require.Equal(t, o.key(), again[0].obj.key())
		}
		for _, err := range errs {
			var de *DocumentError
			require.True(t, errors.As(err, &de))
			require.ErrorIs(t, err, ErrInvalidManifest)
			require.Positive(t, de.Doc)
		}
	})
}
