// Package eventlimit keeps the kube module's Events within what
// events.k8s.io/v1 accepts: client-go's recorder neither shortens an
// Event whose note or action is too long nor reports the API server's
// refusal, so such an Event is lost. Both controllers (the
// ClusterVersion reconciler and the UpgradeRollout controller) record
// through New's recorder.
package eventlimit

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// Limits of events.k8s.io/v1.
const (
	NoteBytes   = 1024
	ActionBytes = 128
)

// Recorder is an event recorder whose every Event has its note cut to
// NoteBytes (saying how much was left out) and its action to
// ActionBytes, so that the API server accepts it.
type Recorder struct{ rec recorder.EventRecorder }

// New returns the Recorder that records through rec.
func New(rec recorder.EventRecorder) Recorder { return Recorder{rec} }

// Eventf records an Event, cut to the limits.
func (l Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	l.rec.Eventf(regarding, related, eventtype, reason, Cut(action, ActionBytes), "%s", Note(fmt.Sprintf(note, args...)))
}

// AnnotatedEventf records an annotated Event, cut to the limits.
func (l Recorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	l.rec.AnnotatedEventf(regarding, related, annotations, eventtype, reason, Cut(action, ActionBytes), "%s", Note(fmt.Sprintf(note, args...)))
}

// Note is s cut to at most NoteBytes, at a rune boundary, ending
// "... and N more bytes" when it was cut.
func Note(s string) string {
	if len(s) <= NoteBytes {
		return s
	}
	// N has at most as many digits as len(s): the room is never too large.
	room := NoteBytes - len("... and  more bytes") - len(strconv.Itoa(len(s)))
	kept := runePrefix(s, room)
	return fmt.Sprintf("%s... and %d more bytes", kept, len(s)-len(kept))
}

// Cut is s cut to at most n bytes (at a rune boundary, "..." included)
// when longer.
func Cut(s string, n int) string {
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
