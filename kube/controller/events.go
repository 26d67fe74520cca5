package controller

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/hopdag/hopdag/kube/internal/english"
	"github.com/hopdag/hopdag/runner"
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

// componentFailed records the ComponentFailed Event of ev within the
// run's budget for them, the one of ComponentRetrying (at most
// retryEventsPerWindow a retryEventWindow: a run whose many components
// fail at once, a registry down, reports the first ones); a failure held
// back is named in the Event failedSummary records when the hop ends. It
// runs on the run's observer goroutine, the only user of ru.failEvents
// and ru.failHeld.
func (ru *run) componentFailed(ev runner.Event) {
	if ok, _ := ru.failEvents.take(ev.Time); !ok {
		ru.failHeld = append(ru.failHeld, ev.Component)
		return
	}
	ru.r.event(ru.p.cv, "Warning", "ComponentFailed", "Component "+ev.Component,
		fmt.Sprintf("component %s failed on hop %d (%s: %s)", ev.Component, ev.Hop+1, ev.Code, firstLine(fmt.Sprint(ev.Err))))
}

// failedShown is how many of the components whose ComponentFailed
// Event was held back failedSummary names.
const failedShown = 20

// failedSummary records, when hop ev ends, one ComponentFailed Event
// naming the components whose own Event the budget held back (by name),
// if any. It runs on the run's observer goroutine.
func (ru *run) failedSummary(ev runner.Event) {
	quiet := ru.failHeld
	ru.failHeld = nil
	if len(quiet) == 0 {
		return
	}
	slices.Sort(quiet)
	names := strings.Join(quiet[:min(len(quiet), failedShown)], ", ")
	if len(quiet) > failedShown {
		names += fmt.Sprintf(" and %d more", len(quiet)-failedShown)
	}
	ru.r.event(ru.p.cv, "Warning", "ComponentFailed", "Components failed on hop "+ev.HopName, fmt.Sprintf(
		"%d more %s failed on hop %d (%s) without an Event of %s own (at most %d ComponentFailed Events a %s): %s; the run's record in the state store has each one's error",
		len(quiet), english.Plural(len(quiet), "component"), ev.Hop+1, ev.HopName, english.Choose(len(quiet), "its", "their"), retryEventsPerWindow, retryEventWindow, names))
}
