package controller

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/internal/english"
	"github.com/hopdag/hopdag/kube/internal/eventlimit"
	"github.com/hopdag/hopdag/runner"
)

// Limits of what the status and the Events say of component retries.
const (
	// maxRetryListed is how many retried components status.plan.retrying
	// lists (Progress.Retrying counts them all), and retryShown how many
	// the Progressing message names.
	maxRetryListed, retryShown = 10, 3
	// retryErrorBytes is how much of a failed attempt's error (its first
	// line) the status and the Event keep.
	retryErrorBytes = 256
	// retryEventsPerWindow ComponentRetrying Events at most per
	// retryEventWindow and run: a run whose many components fail at once
	// (a registry down) reports the first ones, and the status lists
	// them all.
	retryEventsPerWindow, retryEventWindow = 10, time.Minute
)

// retryKey names a component of a hop.
type retryKey struct {
	hop       int
	component string
}

// retryOf is the status entry of a ComponentRetrying event.
func retryOf(ev runner.Event) v1alpha1.Retry {
	return v1alpha1.Retry{
		Hop: ev.Hop, Component: ev.Component, Attempt: ev.Attempt,
		Code: string(ev.Code), Message: cutLine(fmt.Sprint(ev.Err), retryErrorBytes),
		NextAttemptAt: metav1.NewTime(ev.Time.Add(ev.Backoff)),
	}
}

// cutLine is the first line of s, cut to at most n bytes (eventlimit.Cut).
func cutLine(s string, n int) string {
	return eventlimit.Cut(firstLine(s), n)
}

// retryNext says what comes after the failed attempt of rt: when the
// next one is due, or that it runs.
func retryNext(rt v1alpha1.Retry) string {
	if rt.Running {
		return fmt.Sprintf("attempt %d running", rt.Attempt+1)
	}
	return fmt.Sprintf("attempt %d due at %s", rt.Attempt+1, rt.NextAttemptAt.UTC().Format(time.RFC3339))
}

// retryingText is what the Progressing message adds for ps's retried
// components, or "".
func retryingText(ps *v1alpha1.PlanSummary) string {
	var b strings.Builder
	for i, rt := range ps.Retrying {
		if i == retryShown {
			break
		}
		fmt.Fprintf(&b, "; retrying %s on hop %d: attempt %d failed (%s: %s), %s", rt.Component, rt.Hop+1, rt.Attempt, rt.Code, rt.Message, retryNext(rt))
	}
	if more := ps.Progress.Retrying - min(len(ps.Retrying), retryShown); more > 0 {
		fmt.Fprintf(&b, "; and %d more %s retrying (status.plan.retrying)", more, english.Plural(more, "component"))
	}
	return b.String()
}

// retryEventNote is the note of the ComponentRetrying Event of rt, on
// hop (named "from -> to"), after backoff.
func retryEventNote(rt v1alpha1.Retry, hop string, backoff time.Duration) string {
	return fmt.Sprintf("component %s on hop %d (%s): attempt %d failed (%s: %s); %s (in %s)",
		rt.Component, rt.Hop+1, hop, rt.Attempt, rt.Code, rt.Message, retryNext(rt), roundBackoff(backoff))
}

// roundBackoff is d as a person reads it: whole seconds from a second on.
func roundBackoff(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}

// retries are the components a run retries, as its observer sees them
// (the executor's events: the run's record does not say that a component
// waits for a retry).
type retries map[retryKey]v1alpha1.Retry

// list is what status.plan.retrying shows of rs: at most maxRetryListed,
// by hop, then name; and how many there are.
func (rs retries) list() ([]v1alpha1.Retry, int) {
	if len(rs) == 0 {
		return nil, 0
	}
	out := make([]v1alpha1.Retry, 0, len(rs))
	for _, rt := range rs {
		out = append(out, rt)
	}
	slices.SortFunc(out, func(a, b v1alpha1.Retry) int {
		return cmp.Or(cmp.Compare(a.Hop, b.Hop), cmp.Compare(a.Component, b.Component))
	})
	return out[:min(len(out), maxRetryListed)], len(out)
}

// eventBudget lets at most n Events through per window, and counts those
// it holds back so that the next one let through says so. It is used by
// one goroutine (the run's observer).
type eventBudget struct {
	n      int
	window time.Duration
	start  time.Time
	sent   int
	held   int
}

// take reports whether an Event at now goes out, and how many were held
// back before it.
func (b *eventBudget) take(now time.Time) (ok bool, held int) {
	if b.start.IsZero() || now.Sub(b.start) >= b.window {
		b.start, b.sent = now, 0
	}
	if b.sent >= b.n {
		b.held++
		return false, 0
	}
	b.sent++
	held, b.held = b.held, 0
	return true, held
}

// observeRetry keeps ru's retried components as the executor's events
// tell them, records a ComponentRetrying Event for each failed attempt
// (within the budget), and reports whether ev changed what the status
// shows. It runs on the run's observer goroutine, the only user of
// ru.retryEvents.
func (ru *run) observeRetry(ev runner.Event) bool {
	key := retryKey{ev.Hop, ev.Component}
	var rt v1alpha1.Retry
	ru.mu.Lock()
	switch ev.Type {
	case runner.ComponentRetrying:
		rt = retryOf(ev)
		if ru.retrying == nil {
			ru.retrying = retries{}
		}
		ru.retrying[key] = rt
	case runner.ComponentStarted:
		got, ok := ru.retrying[key]
		if !ok || got.Running {
			ru.mu.Unlock()
			return false
		}
		got.Running = true
		ru.retrying[key] = got
	case runner.ComponentSucceeded, runner.ComponentSkipped, runner.ComponentFailed, runner.ComponentCancelled:
		if _, ok := ru.retrying[key]; !ok {
			ru.mu.Unlock()
			return false
		}
		delete(ru.retrying, key)
	default:
		ru.mu.Unlock()
		return false
	}
	// Written with the next progress write; before the first transition
	// is noted there is no progress to write (the retry is shown then).
	if ru.status.s.Phase != "" {
		ru.dirty = true
	}
	ru.mu.Unlock()
	if ev.Type != runner.ComponentRetrying {
		return true
	}
	if ok, held := ru.retryEvents.take(ev.Time); ok {
		note := retryEventNote(rt, ev.HopName, ev.Backoff)
		if held > 0 {
			note += fmt.Sprintf("; %d more failed %s of this upgrade went without an Event (at most %d a %s): status.plan.retrying lists the components retrying",
				held, english.Plural(held, "attempt"), retryEventsPerWindow, retryEventWindow)
		}
		// The events API merges the Events of one action and reason into
		// a series that shows the first note: one action per attempt.
		action := fmt.Sprintf("Retry %s attempt %d", runner.StepName(ru.p.plan.Hops[ev.Hop], ev.Component, ""), ev.Attempt+1)
		ru.r.event(ru.p.cv, "Warning", "ComponentRetrying", action, note)
	}
	return true
}
