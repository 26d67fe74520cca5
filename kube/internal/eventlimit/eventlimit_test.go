package eventlimit

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestNote: a note longer than the events API accepts is cut to
// NoteBytes at a rune boundary, saying how many bytes were left out.
func TestNote(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		cut      bool
	}{
		{name: "short", in: "component a failed"},
		{name: "at the limit", in: strings.Repeat("x", NoteBytes)},
		{name: "one over", in: strings.Repeat("x", NoteBytes+1), cut: true},
		{name: "long", in: strings.Repeat("x", 5000), cut: true},
		{name: "runes", in: strings.Repeat("é", 1000), cut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Note(tc.in)
			assert.LessOrEqual(t, len(got), NoteBytes, "len(Note(%d bytes))", len(tc.in))
			if !tc.cut {
				assert.Equal(t, tc.in, got)
				return
			}
			kept, more, ok := strings.Cut(got, "... and ")
			if assert.True(t, ok, "Note(%d bytes) = %q, want it to end ... and N more bytes", len(tc.in), got) {
				assert.True(t, strings.HasPrefix(tc.in, kept), "the note's start is kept")
				assert.Equal(t, strings.TrimSuffix(more, " more bytes"), strconv.Itoa(len(tc.in)-len(kept)), "the bytes left out")
				assert.Greater(t, len(kept), NoteBytes-40, "cutNote keeps most of the limit")
			}
		})
	}
}

// recorded is one Event a capture received.
type recorded struct{ action, note string }

// capture is an event recorder that keeps what it receives.
type capture struct{ got *[]recorded }

func (c capture) Eventf(_, _ runtime.Object, _, _, action, note string, args ...any) {
	*c.got = append(*c.got, recorded{action, fmt.Sprintf(note, args...)})
}

func (c capture) AnnotatedEventf(_, _ runtime.Object, _ map[string]string, _, _, action, note string, args ...any) {
	*c.got = append(*c.got, recorded{action, fmt.Sprintf(note, args...)})
}

// TestRecorder: every Event through the Recorder has
// a note and an action the events API accepts, however it is recorded.
func TestRecorder(t *testing.T) {
	var got []recorded
	l := New(capture{&got})
	long, action := strings.Repeat("n", 2000), "Component "+strings.Repeat("c", 200)
	l.Eventf(nil, nil, "Warning", "R", action, "%s", long)
	l.AnnotatedEventf(nil, nil, nil, "Warning", "R", action, "%s", long)
	l.Eventf(nil, nil, "Normal", "R", "Hop a", "hop %d of %d", 1, 2)
	require.Len(t, got, 3)
	for i, r := range got[:2] {
		assert.Len(t, r.action, ActionBytes, "action of Event %d", i)
		assert.Equal(t, Note(long), r.note, "note of Event %d", i)
	}
	assert.Equal(t, recorded{"Hop a", "hop 1 of 2"}, got[2])
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"one over", 7, "one ..."},
		{"ééé", 5, "é..."},
	} {
		if got := Cut(tc.in, tc.n); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
