package runner

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hopdag/hopdag/record"
)

func TestRecorded(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  string
	}{
		{"short", "exit code 3"},
		{"exactly the limit", strings.Repeat("x", record.MaxRecorded)},
		{"a megabyte", "HEAD " + strings.Repeat("y", 1<<20) + " TAIL"},
		{"multi-byte runes", strings.Repeat("é", record.MaxRecorded)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := recorded(tc.msg)
			if len(tc.msg) <= record.MaxRecorded {
				if got != tc.msg {
					t.Fatalf("recorded changed a message that fits")
				}
				return
			}
			if len(got) > record.MaxRecorded {
				t.Fatalf("recorded is %d bytes, over %d", len(got), record.MaxRecorded)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("recorded cut a rune")
			}
			if !strings.Contains(got, "bytes cut ...]") {
				t.Fatalf("no note of the cut: %.80q", got)
			}
			head, tail := tc.msg[:4], tc.msg[len(tc.msg)-4:]
			if !strings.HasPrefix(got, head) || !strings.HasSuffix(got, tail) {
				t.Fatalf("head or tail lost")
			}
		})
	}
}
