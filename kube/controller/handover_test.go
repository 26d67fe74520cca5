package controller_test

import (
	"context"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// The handover tests run the controller as separate OS processes (the
// child of handoverchild_test.go) and check what they did from the log
// the children share (the harness of handoverlog_test.go).

// TestSelfUpgradeInterleaveCheck: the checks of assertOneAtATime fail on
// logs of two controllers at once, and of a superseded holder's write.
func TestSelfUpgradeInterleaveCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []entry
		inter int
		stale int
	}{
		{"one after another", []entry{{"start", "0 a", "1", ""}, {"write", "1 ok", "1", ""}, {"start", "0 b", "2", ""}, {"write", "2 ok", "2", ""}}, -1, -1},
		{"first acts again", []entry{{"start", "0 a", "1", ""}, {"start", "0 b", "2", ""}, {"done", "0 a", "1", ""}}, 2, -1},
		{"alternating", []entry{{"start", "0 a", "1", ""}, {"start", "0 b", "2", ""}, {"start", "0 c", "1", ""}, {"start", "0 d", "2", ""}}, 2, -1},
		{"fenced write of the old", []entry{{"write", "1 ok", "1", ""}, {"write", "2 ok", "2", ""}, {"write", "1 fenced", "2", ""}}, -1, -1},
		{"refused refresh and write of the old", []entry{{"start", "0 a", "1", ""}, {"start", "0 b", "2", ""}, {"refresh", "1 fenced", "1", ""}, {"write", "1 fenced", "1", ""}}, -1, -1},
		{"accepted write of the old", []entry{{"start", "0 a", "1", ""}, {"start", "0 b", "2", ""}, {"write", "1 ok", "1", ""}}, 2, -1},
		{"old token lands after new", []entry{{"write", "1 ok", "1", ""}, {"write", "2 ok", "2", ""}, {"write", "1 ok", "2", ""}}, -1, 2},
		{"old token's write in flight when the new wrote", []entry{{"begin", "1 -", "1", "1"}, {"write", "2 ok", "2", "1"}, {"write", "1 ok", "1", "1"}}, -1, -1},
		{"old token's write begun after the new wrote", []entry{{"begin", "1 -", "1", "1"}, {"write", "1 ok", "1", "1"}, {"write", "2 ok", "2", "1"}, {"begin", "1 -", "1", "2"}, {"write", "1 ok", "1", "2"}}, 2, 4},
		{"old token's write begun after the new began", []entry{{"begin", "2 -", "2", "1"}, {"begin", "1 -", "1", "1"}, {"write", "2 ok", "2", "1"}, {"write", "1 ok", "1", "1"}}, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, _ := interleaved(acts(tc.lines))
			assert.Equal(t, tc.inter, i)
			assert.Equal(t, tc.stale, staleWrite(tc.lines))
		})
	}
}

// TestSelfUpgradeHandover: the plan's self-upgrade component ends the
// controller process; a new process resumes from kube/store. The
// self-upgrade ran once and nothing that succeeded ran again.
func TestSelfUpgradeHandover(t *testing.T) {
	h, c, key := newHandover(t)
	t0 := time.Now()
	first := h.start(selfName, 100*time.Millisecond)
	// The new controller starts while the old one still runs (a rolling
	// update's surge): it must not act before the old one is gone.
	h.waitForStart(0, 90*time.Second)
	h.start("", 100*time.Millisecond)
	select {
	case <-first.exited:
		require.NoError(t, first.err, "the first controller exits by itself after the self-upgrade")
	case <-time.After(90 * time.Second):
		t.Fatal("the first controller did not exit after the self-upgrade component")
	}
	handedOver := len(h.lines())
	assertOneAtATime(t, h.lines())
	durable := durableSuccesses(t, h)
	require.True(t, durable[selfName], "the self-upgrade's success was durable when its process ended")
	t.Logf("the first controller exited after %v", time.Since(t0))
	var cv v1alpha1.ClusterVersion
	require.NoError(t, c.Get(context.Background(), key, &cv))
	require.NotEqual(t, "v26.09", cv.Status.CurrentVersion, "the handover happened mid-plan")

	waitFor(t, c, key, 90*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	lines := h.lines()
	// Never two controllers at once: every line of the first process comes
	// before every line of the second.
	assertOneAtATime(t, lines)
	starts := map[string]int{}
	for i, l := range lines {
		if l.verb != "start" {
			continue
		}
		starts[l.what]++
		// A component whose end the first process did not record before
		// exiting runs again; one recorded as succeeded never does.
		if i >= handedOver {
			assert.False(t, durable[l.what], "%s started again after its success was recorded", l.what)
		}
	}
	assert.Equal(t, 1, starts[selfName], "the self-upgrade component ran exactly once")
	assert.Greater(t, len(lines), handedOver, "the second controller did the rest")
}

// TestSIGKILLResumes kills the controller with SIGKILL at random moments,
// ten times, each time after starting its successor (which waits for the
// leader Lease and the store's lock meanwhile). Every controller has the
// self-upgrade component: the one that runs it exits by itself once its
// success is durable, and the next takes over. A component recorded as
// succeeded in the store is never started again, the controllers never
// act at once, the self-upgrade succeeded exactly once, and the upgrade
// ends.
func TestSIGKILLResumes(t *testing.T) {
	h, c, key := newHandover(t)
	t0 := time.Now()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	durable := map[string]bool{}
	checkedLines := 0
	const total = 19 // components of the three hops
	// selfExits counts the processes the self-upgrade ended; selfRedone
	// the self-upgrade successes a kill lost (it came after the component
	// logged done and before its success was durable: it runs again).
	// selfKilled the kills that came after it was durable, before its
	// process exited by itself.
	// steppedDown the controllers that ended by themselves otherwise
	// (leader election lost on a loaded machine).
	selfExits, selfRedone, selfKilled, kills, steppedDown := 0, 0, 0, 0, 0
	// doneSelf reports whether p logged the self-upgrade's success.
	doneSelf := func(p *proc) bool {
		for _, l := range h.lines() {
			if l.pid == p.pid && l.verb == "done" && l.what == selfName {
				return true
			}
		}
		return false
	}
	cur := h.start(selfName, time.Second)
	for i := 0; kills < 10; i++ {
		// Components take 1s each. The next controller starts as soon as
		// this one acts (a rolling update's surge): it acts once this
		// one's leader Lease (1.5s) and store lease (2s) ran out. Every
		// other kill comes at a random moment of the second after this
		// one started a component (mid-component); the others a random
		// moment of the half second after it recorded a new success
		// (mid-checkpoint, or about to start the next). So the kills hit
		// a moving upgrade whatever the machine's speed.
		h.waitForLine(checkedLines, 90*time.Second, "start of the controller "+cur.pid, func(e entry) bool {
			return e.pid == cur.pid && e.verb == "start"
		})
		next := h.start(selfName, time.Second)
		if i%2 == 1 {
			waitForDurable(t, h, len(durable), 90*time.Second)
			time.Sleep(time.Duration(rnd.IntN(500)) * time.Millisecond) // a random kill time, not a wait for an event
		} else {
			time.Sleep(time.Duration(rnd.IntN(1000)) * time.Millisecond) // a random kill time
		}
		if doneSelf(cur) {
			// It is on its way out by itself: let it go.
			select {
			case <-cur.exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("controller %s did not exit after the self-upgrade", cur.pid)
			}
		} else if !cur.gone() {
			_ = cur.cmd.Process.Signal(syscall.SIGKILL) // it may have ended by itself just now
		}
		<-cur.exited
		switch {
		case cur.err == nil:
			selfExits++
		case killed(cur):
			kills++
		default:
			steppedDown++
		}
		// Starts since the last check must not name a durable success.
		lines := h.lines()
		for _, l := range lines[checkedLines:] {
			if l.verb == "start" {
				assert.False(t, durable[l.what], "kill %d: %s started again after its success was recorded", kills, l.what)
			}
		}
		checkedLines = len(lines)
		assertOneAtATime(t, lines) // at each kill too: a failure shows where it began
		durable = durableSuccesses(t, h)
		if killed(cur) && doneSelf(cur) {
			if durable[selfName] {
				selfKilled++
			} else {
				selfRedone++
			}
		}
		cur = next
	}
	lastDurable := len(durable)
	// The last controllers finish; one that runs the self-upgrade ends and
	// another takes over.
	waitFor(t, c, key, 120*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		if cur.gone() {
			if cur.err == nil {
				selfExits++
			} else {
				steppedDown++
			}
			cur = h.start(selfName, time.Second)
		}
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	lines := h.lines()
	for _, l := range lines[checkedLines:] {
		if l.verb == "start" {
			assert.False(t, durable[l.what], "%s started again after its success was recorded", l.what)
		}
	}
	assertOneAtATime(t, lines)
	succeeded := map[string]int{}
	for _, l := range lines {
		if l.verb == "done" {
			succeeded[l.what]++
		}
	}
	final := durableSuccesses(t, h)
	t.Logf("%d SIGKILLs, %d self-upgrade exits and %d other exits in %v; %d of %d component successes were durable before the last controller started; %d self-upgrade successes lost to a kill",
		kills, selfExits, steppedDown, time.Since(t0), lastDurable, total, selfRedone)
	assert.Len(t, final, total, "every component succeeded")
	assert.True(t, final[selfName], "the self-upgrade's success is recorded")
	assert.Equal(t, 1, succeeded[selfName]-selfRedone, "the self-upgrade succeeded exactly once (besides successes a kill lost before they were durable)")
	assert.Equal(t, 1, selfExits+selfKilled, "one controller ended after the self-upgrade (by itself, or killed on its way out)")
	assert.GreaterOrEqual(t, lastDurable, 5, "the kills hit a moving upgrade: successes were recorded between them")
	assert.Less(t, lastDurable, total, "the last controller had work left: the kills came mid-upgrade")
}
