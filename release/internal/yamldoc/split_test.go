package yamldoc

import (
	"testing"
	"unicode/utf8"
)

// TestBinaryAt checks the word-at-a-time scan against a byte-at-a-time
// reference, at every position of a probe byte.
func TestBinaryAt(t *testing.T) {
	ref := func(b []byte) int {
		for i := 0; i < len(b); {
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 || r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
				return i
			}
			i += size
		}
		return -1
	}
	base := []byte("apiVersion: hopdag.io/v1alpha1\tkind: \"Release\"\r\n# é ok\n")
	for _, probe := range []byte{0x00, 0x01, 0x1f, 0x7f, 0x80, 0xff, ' ', '\t', '~', 0x20, 0x7e} {
		for pos := range base {
			b := append([]byte{}, base...)
			b[pos] = probe
			if got, want := binaryAt(b), ref(b); got != want {
				t.Errorf("binaryAt(%q) = %d, want %d", b, got, want)
			}
		}
	}
}

func TestSplitDocuments(t *testing.T) {
	data := "# c\n---\na: 1\n--- # two\nb: |\n  ---\n...\n...\nc: ---\n---\n\x00\n----\n"
	got := splitDocuments([]byte(data))
	type want struct {
		text string
		line int
		bad  int
	}
	var gotW []want
	for _, s := range got {
		gotW = append(gotW, want{data[s.start:s.end], s.line, s.bad})
	}
	exp := []want{
		{"# c\n", 1, -1},
		{"---\na: 1\n", 2, -1},
		{"--- # two\nb: |\n  ---\n...\n", 4, -1},
		{"...\n", 8, -1},
		{"c: ---\n", 9, -1},
		{"---\n\x00\n----\n", 10, 53},
	}
	if len(gotW) != len(exp) {
		t.Fatalf("splitDocuments(%q) = %+v, want %+v", data, gotW, exp)
	}
	for i := range exp {
		if gotW[i] != exp[i] {
			t.Errorf("span %d = %+v, want %+v", i, gotW[i], exp[i])
		}
	}
}
