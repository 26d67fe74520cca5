package controller_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// TestStaleLeaderFenced pauses the leading controller (SIGSTOP) mid-run,
// lets its leases run out and a second controller take over and record
// progress, then lets the first run again (SIGCONT): the first's writes
// of the run's record are refused as fenced, it starts nothing more and
// exits, and the second finishes the upgrade with every component
// succeeded exactly once. The processes are those of the handover tests
// (handoverchild_test.go): leader Lease 1.5s, store lease 2s, components 1s.
func TestStaleLeaderFenced(t *testing.T) {
	h, c, key := newHandover(t)
	t0 := time.Now()
	const total = 19 // components of the three hops
	a := h.start("", time.Second)
	// The pause comes after progress: a success of the first's is
	// durable and it has started another component.
	waitForDurable(t, h, 0, 90*time.Second)
	h.waitForLine(len(h.lines()), 90*time.Second, "component started by the first controller after its first success", func(e entry) bool {
		return e.pid == a.pid && e.verb == "start"
	})
	b := h.start("", time.Second) // the standby: it waits for the leases
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	pausedAt := time.Now()
	stopped := len(h.lines())
	aToken := lastToken(h.lines()[:stopped], a)
	require.NotZero(t, aToken, "the first controller wrote the record before its pause")

	// The second takes over once the first's leases ran out, and records
	// a success of its own.
	took := h.waitForLine(stopped, 60*time.Second, "start by the second controller", func(e entry) bool {
		return e.pid == b.pid && e.verb == "start"
	})
	tookAfter := time.Since(pausedAt)
	atTakeover := durableSuccesses(t, h)
	waitForDurable(t, h, len(atTakeover), 60*time.Second)
	t.Logf("the second controller started a component %v after the pause (line %d), with %d of %d successes durable; it recorded one %v after the pause",
		tookAfter, took+1, len(atTakeover), total, time.Since(pausedAt))

	resumed := len(h.lines())
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	// Its first write (the SIGCONT hook's Save, or a checkpoint or lease
	// refresh it had due) is refused.
	h.waitForLine(resumed, 30*time.Second, "refused write of the first controller after SIGCONT", func(e entry) bool {
		return e.pid == a.pid && (e.verb == "write" || e.verb == "refresh") && e.result() == "fenced"
	})
	select {
	case <-a.exited:
		t.Logf("the resumed controller exited: %v", a.err)
	case <-time.After(30 * time.Second):
		t.Fatal("the resumed controller did not stop: it lost its leases")
	}
	require.False(t, b.gone(), "the second controller runs on")
	waitFor(t, c, key, 120*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})

	lines := h.lines()
	acting, after := checkResumed(t, lines, a, stopped, resumed)
	// Before its pause and after the resume the first controller's lines
	// are apart; the rest is one controller at a time, and no write under
	// the first's token landed after the second's.
	assertOneAtATime(t, acting)
	assert.Equal(t, -1, staleWrite(lines), "a write under a superseded token landed")
	bToken := checkSucceededOnce(t, h, acting, b, atTakeover, total)
	assert.Greater(t, bToken, aToken, "the second controller wrote under a greater token")
	t.Logf("tokens %d then %d; after SIGCONT the first controller had %d writes refused, %d writes sent before the pause return, and logged %d late component ends; %v in all",
		aToken, bToken, after.refused, after.inFlight, after.late, time.Since(t0))
}

// lastToken is the token of p's last accepted write among lines.
func lastToken(lines []entry, p *proc) uint64 {
	var token uint64
	for _, l := range lines {
		if l.pid == p.pid && l.verb == "write" && l.result() == "ok" {
			token = l.token()
		}
	}
	return token
}

// resumedLines counts what the paused controller logged after it was
// resumed.
type resumedLines struct {
	// refused: writes refused as fenced; inFlight: writes sent before the
	// pause whose acceptance returned after it; late: component ends of
	// components it was running when paused (their successes are not
	// recorded).
	refused, inFlight, late int
}

// checkResumed checks the log of a controller a, paused at line stopped
// and resumed at line resumed: it logged nothing while paused, and after
// the resume it started nothing and no write of its was accepted but
// those sent before the pause. It returns the log without a's lines
// after the resume (the acting controllers'), and what a logged then.
func checkResumed(t *testing.T, lines []entry, a *proc, stopped, resumed int) (acting []entry, after resumedLines) {
	t.Helper()
	began := map[string]int{} // a's writes by number: where each began
	for i, l := range lines {
		if l.pid == a.pid && l.verb == "begin" {
			began[l.n] = i
		}
		if l.pid != a.pid || i < resumed {
			acting = append(acting, l)
			continue
		}
		switch b, ok := began[l.n]; {
		case l.verb == "begin":
			continue
		case l.verb == "start":
			t.Errorf("line %d: the resumed controller started %s", i+1, l.what)
		case l.verb == "write" && l.result() == "ok" && ok && b < stopped:
			// Sent before the pause: the API server took it then, before
			// the second controller's lease (staleWrite checks the order).
			after.inFlight++
		case l.verb == "write" && l.result() == "ok":
			t.Errorf("line %d: the resumed controller's write under token %d was accepted", i+1, l.token())
		case l.verb == "done":
			after.late++
		case l.result() == "fenced":
			after.refused++
		}
		t.Logf("after SIGCONT, the first controller: %s %s", l.verb, l.what)
	}
	for i, l := range lines[:resumed] {
		if l.pid == a.pid && i >= stopped {
			t.Errorf("line %d: the paused controller logged %s %s", i+1, l.verb, l.what)
		}
	}
	return acting, after
}

// checkSucceededOnce checks, in the acting controllers' log, that b, which
// took over when the successes atTakeover were durable, started none of
// them again, and that every one of the total components succeeded
// exactly once. It returns the token of b's first accepted write.
func checkSucceededOnce(t *testing.T, h *handover, acting []entry, b *proc, atTakeover map[string]bool, total int) (bToken uint64) {
	t.Helper()
	succeeded := map[string]int{}
	for i, l := range acting {
		switch {
		case l.pid == b.pid && l.verb == "write" && l.result() == "ok" && bToken == 0:
			bToken = l.token()
		case l.verb == "start" && l.pid == b.pid:
			assert.False(t, atTakeover[l.what], "line %d: %s started again after its success was recorded", i+1, l.what)
		case l.verb == "done" && (l.pid == b.pid || atTakeover[l.what]):
			// The first's successes count if they were recorded before
			// the takeover; the second runs the others again.
			succeeded[l.what]++
		}
	}
	final := durableSuccesses(t, h)
	assert.Len(t, final, total, "every component succeeded")
	for what := range final {
		assert.Equal(t, 1, succeeded[what], "%s succeeded exactly once", what)
	}
	assert.Len(t, succeeded, total, fmt.Sprintf("successes: %v", succeeded))
	return bToken
}
