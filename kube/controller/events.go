package controller

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// Limits of events.k8s.io/v1, which refuses an Event whose note or action
// is longer (client-go's recorder neither shortens such an Event nor
// reports the refusal: the Event is lost).
const (
	noteBytes   = 1024
	actionBytes = 128
)

// limited is the reconciler's event recorder: every Event goes through
// it, its note cut to noteBytes (saying how much was left out) and its
// action to actionBytes, so that the API server accepts it.
type limited struct{ rec recorder.EventRecorder }

func (l limited) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	l.rec.Eventf(regarding, related, eventtype, reason, cutBytes(action, actionBytes), "%s", cutNote(fmt.Sprintf(note, args...)))
}

func (l limited) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	l.rec.AnnotatedEventf(regarding, related, annotations, eventtype, reason, cutBytes(action, actionBytes), "%s", cutNote(fmt.Sprintf(note, args...)))
}

// cutNote is s cut to at most noteBytes, at a rune boundary, ending
// "... and N more bytes" when it was cut.
func cutNote(s string) string {
	if len(s) <= noteBytes {
		return s
	}
	// N has at most as many digits as len(s): the room is never too large.
	room := noteBytes - len("... and  more bytes") - len(strconv.Itoa(len(s)))
	kept := runePrefix(s, room)
	return fmt.Sprintf("%s... and %d more bytes", kept, len(s)-len(kept))
}

// cutBytes is s cut to at most n bytes (at a rune boundary, "..."
// included) when longer.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return runePrefix(s, n-3) + "..."
}

// runePrefix is the longest prefix of s of at most n bytes that does not
// split a rune.
func runePrefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
