package controller

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hopdag/hopdag/kube/internal/english"
	"github.com/hopdag/hopdag/runner"
)

// What status.plan.waitingFor shows of the running components' waits.
const (
	// waitingShown waits are named; the others are counted.
	waitingShown = 2
	// waitingMaxLen caps each wait's message, in bytes.
	waitingMaxLen = 200
)

// waits are the latest Task.Waiting messages of the running components
// (ComponentWaiting events), by hop and component.
type waits map[retryKey]string

// text is status.plan.waitingFor: the first waitingShown waits by hop,
// then name, each cut to waitingMaxLen, and how many more there are.
func (ws waits) text() string {
	if len(ws) == 0 {
		return ""
	}
	keys := make([]retryKey, 0, len(ws))
	for k := range ws {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b retryKey) int {
		return cmp.Or(cmp.Compare(a.hop, b.hop), cmp.Compare(a.component, b.component))
	})
	shown := make([]string, 0, waitingShown)
	for _, k := range keys[:min(len(keys), waitingShown)] {
		shown = append(shown, k.component+": "+cut(ws[k], waitingMaxLen))
	}
	s := strings.Join(shown, "; ")
	if more := len(keys) - len(shown); more > 0 {
		s += fmt.Sprintf("; and %d more %s waiting", more, english.Plural(more, "component"))
	}
	return s
}

// cut cuts s to at most n bytes, on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := n - len("...")
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "..."
}

// observeWaiting keeps the running components' latest waits
// (ComponentWaiting) and forgets a component's when its attempt ends (or
// its hop), marking the progress dirty when that changes what the status
// shows.
func (ru *run) observeWaiting(ev runner.Event) {
	key := retryKey{ev.Hop, ev.Component}
	ru.mu.Lock()
	defer ru.mu.Unlock()
	switch ev.Type {
	case runner.ComponentWaiting:
		if ru.waiting == nil {
			ru.waiting = waits{}
		}
		ru.waiting[key] = ev.Reason
	case runner.ComponentSucceeded, runner.ComponentSkipped, runner.ComponentFailed, runner.ComponentCancelled,
		runner.ComponentRetrying, runner.ComponentRollingBack:
		if _, ok := ru.waiting[key]; !ok {
			return
		}
		delete(ru.waiting, key)
	case runner.HopSucceeded, runner.HopFailed:
		if len(ru.waiting) == 0 {
			return
		}
		clear(ru.waiting)
	default:
		return
	}
	// Written with the next progress write (at most once per interval).
	if ru.status.s.Phase != "" {
		ru.dirty = true
	}
}
