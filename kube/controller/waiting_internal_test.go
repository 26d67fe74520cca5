package controller

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/hopdag/hopdag/runner"
)

// TestWaitingFor: ComponentWaiting events set a running component's wait,
// the end of its attempt (or of its hop) clears it, and status.plan.waitingFor
// names the first two by hop, then name, each cut to 200 bytes, and
// counts the others.
func TestWaitingFor(t *testing.T) {
	wait := func(hop int, comp, msg string) runner.Event {
		return runner.Event{Type: runner.ComponentWaiting, Hop: hop, Component: comp, Reason: msg}
	}
	end := func(typ runner.EventType, hop int, comp string) runner.Event {
		return runner.Event{Type: typ, Hop: hop, Component: comp}
	}
	long := strings.Repeat("é", 150) // 300 bytes
	tests := []struct {
		name   string
		events []runner.Event
		want   string
	}{
		{"none", nil, ""},
		{"one", []runner.Event{wait(0, "calico", "waiting for DaemonSet kube-system/calico-node: 3 of 5 updated")},
			"calico: waiting for DaemonSet kube-system/calico-node: 3 of 5 updated"},
		{"latest wins", []runner.Event{wait(0, "calico", "1 of 5"), wait(0, "calico", "2 of 5")}, "calico: 2 of 5"},
		{"by hop then name, and more", []runner.Event{wait(1, "a", "x"), wait(0, "z", "y"), wait(0, "m", "w"), wait(1, "b", "v")},
			"m: w; z: y; and 2 more components waiting"},
		{"one more", []runner.Event{wait(0, "a", "x"), wait(0, "b", "y"), wait(0, "c", "z")}, "a: x; b: y; and 1 more component waiting"},
		{"succeeded clears", []runner.Event{wait(0, "a", "x"), wait(0, "b", "y"), end(runner.ComponentSucceeded, 0, "a")}, "b: y"},
		{"retrying clears", []runner.Event{wait(0, "a", "x"), end(runner.ComponentRetrying, 0, "a")}, ""},
		{"failed clears", []runner.Event{wait(0, "a", "x"), end(runner.ComponentFailed, 0, "a")}, ""},
		{"other hop's end keeps", []runner.Event{wait(1, "a", "x"), end(runner.ComponentSucceeded, 0, "a")}, "a: x"},
		{"hop end clears all", []runner.Event{wait(0, "a", "x"), wait(0, "b", "y"), {Type: runner.HopFailed, Hop: 0}}, ""},
		{"started keeps", []runner.Event{wait(0, "a", "x"), end(runner.ComponentStarted, 0, "b")}, "a: x"},
		{"long cut", []runner.Event{wait(0, "a", long)}, "a: " + strings.Repeat("é", 98) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ru := &run{}
			for _, ev := range tt.events {
				ru.observeWaiting(ev)
			}
			got := ru.waiting.text()
			assert.Equal(t, tt.want, got)
			assert.True(t, utf8.ValidString(got), "valid UTF-8")
		})
	}
}
