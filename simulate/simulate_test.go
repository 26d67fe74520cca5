package simulate

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

func TestParseMode(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want runner.Mode
		err  bool
	}{{"eager", runner.Eager, false}, {"batch", runner.Batch, false}, {"Batch", 0, true}, {"", 0, true}} {
		got, err := ParseMode(tt.in)
		assert.Equal(t, tt.err, err != nil, "ParseMode(%q) error = %v", tt.in, err)
		assert.Equal(t, tt.want, got, "ParseMode(%q)", tt.in)
	}
}

func TestList(t *testing.T) {
	assert.Equal(t, []string{"etcd", "calico"}, List(" etcd, ,calico,"))
	assert.Nil(t, List(""))
}

func TestScaledClock(t *testing.T) {
	c := scaledClock{speed: 1000}
	assert.Equal(t, 60*time.Millisecond, c.real(time.Minute))
	ctx, cancel := c.WithTimeout(t.Context(), time.Second) // 1 ms scaled: the floor applies
	defer cancel()
	deadline, ok := ctx.Deadline()
	require.True(t, ok)
	assert.Greater(t, time.Until(deadline), time.Second, "scaled timeouts keep a floor of %s", minTimeout)
}

func TestProgressLines(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, false)
	pr := record.Progress{Done: 3, Total: 19}
	p.Observe(runner.Event{Type: runner.ComponentSucceeded, Component: "etcd", Version: "v3.6.4", Duration: 1500 * time.Millisecond, Progress: pr})
	p.Observe(runner.Event{Type: runner.ComponentFailed, Component: "calico", Version: "v3.30.2", Err: errors.New("boom"), Progress: pr})
	p.Observe(runner.Event{Type: runner.ComponentSkipped, Component: "metrics-server", Version: "v0.8.0", Reason: "dependency calico failed", Progress: pr})
	p.Observe(runner.Event{Type: runner.CheckSucceeded, Check: "mirror", Duration: 2500 * time.Millisecond, Progress: pr})
	p.Observe(runner.Event{Type: runner.CheckFailed, Check: "mirror", Reason: "required", Err: errors.New("down"), Progress: pr})
	assert.Equal(t, "[  3/19]   done    etcd v3.6.4 (1.5s)\n[  3/19]   FAILED  calico v3.30.2: boom\n[  3/19]   skip    metrics-server v0.8.0: dependency calico failed\n"+
		"[  3/19]   check mirror passed (2.5s)\n[  3/19]   check mirror failed (required): down\n", b.String())

	b.Reset()
	NewProgress(&b, true).Observe(runner.Event{Type: runner.HopStarted, Hop: 0, HopName: "a -> b", Progress: pr})
	assert.True(t, strings.HasSuffix(b.String(), "[####..........................] 3/19"), "terminal output ends with the bar: %q", b.String())
}

// Other lines written through the Progress (a command's output, a log)
// go above the bar on a terminal: the bar is cleared, the line written,
// the bar drawn again; elsewhere, and once the plan has finished, they are
// written as they are.
func TestProgressWrite(t *testing.T) {
	pr := record.Progress{Done: 3, Total: 19}
	const clear, bar = "\r\033[K", "[####..........................] 3/19"
	tests := []struct {
		name     string
		terminal bool
		events   []runner.EventType
		want     string
	}{
		{"a terminal, the bar drawn", true, []runner.EventType{runner.HopStarted},
			clear + "[  3/19] hop 1 a -> b started\n" + bar + clear + "  web | hello\n" + bar},
		{"a terminal, the plan finished", true, []runner.EventType{runner.HopStarted, runner.PlanFinished},
			clear + "[  3/19] hop 1 a -> b started\n" + bar + clear + "[  3/19] plan succeeded (0s)\n" + "  web | hello\n"},
		{"not a terminal", false, []runner.EventType{runner.HopStarted},
			"[  3/19] hop 1 a -> b started\n  web | hello\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			p := NewProgress(&b, tt.terminal)
			for _, typ := range tt.events {
				p.Observe(runner.Event{Type: typ, Hop: 0, HopName: "a -> b", Phase: record.Succeeded, Progress: pr})
			}
			n, err := p.Write([]byte("  web | hello\n"))
			require.NoError(t, err)
			assert.Equal(t, len("  web | hello\n"), n)
			assert.Equal(t, tt.want, b.String())
		})
	}
}

// The lines of a hop and a plan that end otherwise than they started
// say their phase in words: "rolled back", not "rolledback".
func TestProgressPhaseWords(t *testing.T) {
	pr := record.Progress{Done: 0, Total: 2}
	tests := []struct {
		ev   runner.Event
		want string
	}{
		{runner.Event{Type: runner.HopFailed, HopName: "a -> b", Phase: record.RolledBack, Reason: "rolled back: x@1.0"}, "hop 1 a -> b rolled back: x@1.0"},
		{runner.Event{Type: runner.HopFailed, HopName: "v1.0 -> v1.1", Phase: record.Cancelled, Reason: "cancelled: interrupted by SIGINT"}, "hop 1 v1.0 -> v1.1 cancelled: interrupted by SIGINT"},
		{runner.Event{Type: runner.ComponentFailed, Component: "kubernetes-worker", Version: "v1.33.3", Err: fmt.Errorf("%w (--fail)", ErrScripted)}, "  FAILED  kubernetes-worker v1.33.3: simulate: scripted failure (--fail)"},
		{runner.Event{Type: runner.ComponentFailed, Component: "api", Version: "1.1.0", Err: errors.New("components: api 1.1.0: upgrade: boom")}, "  FAILED  api 1.1.0: upgrade: boom"},
		{runner.Event{Type: runner.HopFailed, HopName: "a -> b", Phase: record.RollbackFailed, Reason: "y stays"}, "hop 1 a -> b rollback failed: y stays"},
		{runner.Event{Type: runner.HopFailed, HopName: "a -> b", Phase: record.Failed, Reason: "component x failed"}, "hop 1 a -> b failed: component x failed"},
		{runner.Event{Type: runner.PlanFinished, Phase: record.WaitingForApproval, Duration: time.Second}, "plan waiting for approval (1s)"},
		{runner.Event{Type: runner.PlanFinished, Phase: record.RolledBack, Duration: time.Second}, "plan rolled back (1s)"},
		{runner.Event{Type: runner.PlanFinished, Phase: record.Succeeded, Duration: time.Second}, "plan succeeded (1s)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			var b bytes.Buffer
			tt.ev.Progress = pr
			NewProgress(&b, false).Observe(tt.ev)
			assert.Equal(t, "[  0/2] "+tt.want+"\n", b.String())
		})
	}
}
