package controller

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/kube/internal/english"
	"github.com/hopdag/hopdag/runner"
)

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
