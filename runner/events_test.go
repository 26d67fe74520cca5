package runner_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// ev is the part of an Event a sequence test compares.
type ev struct {
	Type      runner.EventType
	Hop       int
	Component string
	Attempt   int
	Done      int
	Code      record.Code
	Phase     record.Phase
}

func (e ev) String() string { return fmt.Sprintf("%+v", struct{ ev }{e}) }

func summary(evs []runner.Event) []ev {
	out := make([]ev, len(evs))
	for i, e := range evs {
		out[i] = ev{e.Type, e.Hop, e.Component, e.Attempt, e.Progress.Done, e.Code, e.Phase}
	}
	return out
}

// The documented sequence, in order, with progress, on a chain run one at
// a time: every event, its hop, component, attempt and progress.
func TestEventSequence(t *testing.T) {
	clock := fakeClock()
	rec := &recorder{}
	fake := runnertest.New().Script("b", runnertest.Script{FailFirst: 1})
	fake.OnStart = func(runner.Task) { clock.Advance(time.Second) }
	e := runner.New(fake, runner.WithClock(clock), runner.WithObserver(rec), runner.WithMaxParallel(1))
	p := planOf(hop{g: graphOf(t, c("a"), c("b", "a").with(retries(2, 0, 0)))}, hop{g: graphOf(t, c("c"))})
	st, err := e.Execute(context.Background(), p, nil)
	require.NoError(t, err)

	want := []ev{
		{Type: runner.PlanStarted, Hop: -1},
		{Type: runner.HopStarted, Hop: 0},
		{Type: runner.ComponentStarted, Hop: 0, Component: "a", Attempt: 1},
		{Type: runner.ComponentSucceeded, Hop: 0, Component: "a", Attempt: 1, Done: 1},
		{Type: runner.ComponentStarted, Hop: 0, Component: "b", Attempt: 1, Done: 1},
		{Type: runner.ComponentRetrying, Hop: 0, Component: "b", Attempt: 1, Done: 1, Code: record.CodeComponentFailed},
		{Type: runner.ComponentStarted, Hop: 0, Component: "b", Attempt: 2, Done: 1},
		{Type: runner.ComponentSucceeded, Hop: 0, Component: "b", Attempt: 2, Done: 2},
		{Type: runner.HopSucceeded, Hop: 0, Done: 2, Phase: record.Succeeded},
		{Type: runner.HopStarted, Hop: 1, Done: 2},
		{Type: runner.ComponentStarted, Hop: 1, Component: "c", Attempt: 1, Done: 2},
		{Type: runner.ComponentSucceeded, Hop: 1, Component: "c", Attempt: 1, Done: 3},
		{Type: runner.HopSucceeded, Hop: 1, Done: 3, Phase: record.Succeeded},
		{Type: runner.PlanFinished, Hop: -1, Done: 3, Phase: record.Succeeded},
	}
	evs := rec.all()
	assert.Equal(t, want, summary(evs), "events (-want +got)")
	for _, e := range evs {
		assert.Equal(t, 3, e.Progress.Total, "%s: Progress.Total", e.Type)
		switch {
		case e.Hop == 0:
			assert.Equal(t, "v1.0 -> v2.0", e.HopName, "%s: HopName", e.Type)
		case e.Hop == 1:
			assert.Equal(t, "v2.0 -> v3.0", e.HopName, "%s: HopName", e.Type)
		default:
			assert.Empty(t, e.HopName, "%s: HopName of a plan event", e.Type)
		}
		if e.Component != "" {
			assert.Equal(t, "v1.1.0", e.Version, "%s %s: Version", e.Type, e.Component)
		}
	}
	// Times and durations come from the clock: each attempt moved it 1s.
	assert.Equal(t, t0, evs[0].Time, "PlanStarted time")
	assert.Equal(t, time.Second, evs[3].Duration, "a's duration")
	assert.Equal(t, 2*time.Second, evs[7].Duration, "b's duration over both attempts")
	assert.Equal(t, 3*time.Second, evs[8].Duration, "hop 1 duration")
	assert.Equal(t, 4*time.Second, evs[13].Duration, "plan duration")
	assert.Equal(t, t0.Add(4*time.Second), evs[13].Time, "PlanFinished time")
	assert.ErrorIs(t, evs[5].Err, runnertest.ErrScripted, "ComponentRetrying.Err")
	assert.Zero(t, evs[5].Backoff, "ComponentRetrying.Backoff without backoff")
	assert.Equal(t, st.FinishedAt, evs[13].Time)
}

func TestEventSequenceFailure(t *testing.T) {
	rec := &recorder{}
	fake := runnertest.New().Script("a", runnertest.Script{FailAlways: true})
	bad := func(context.Context, runner.CheckTask) error { return errors.New("mirror down") }
	e := runner.New(fake, runner.WithObserver(rec), runner.WithMaxParallel(1), runner.WithCheck("mirror", bad))
	p := planOf(hop{g: graphOf(t, c("a"), c("b", "a")), pre: []release.Check{{Name: "mirror"}}})
	_, err := e.Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)

	want := []ev{
		{Type: runner.PlanStarted, Hop: -1},
		{Type: runner.HopStarted, Hop: 0},
		{Type: runner.CheckFailed, Hop: 0, Code: record.CodeCheckFailed},
		{Type: runner.ComponentStarted, Hop: 0, Component: "a", Attempt: 1},
		{Type: runner.ComponentFailed, Hop: 0, Component: "a", Attempt: 1, Code: record.CodeComponentFailed},
		{Type: runner.ComponentSkipped, Hop: 0, Component: "b", Code: record.CodeDependencyFailed},
		{Type: runner.HopFailed, Hop: 0, Code: record.CodeComponentFailed, Phase: record.Failed},
		{Type: runner.PlanFinished, Hop: -1, Code: record.CodeComponentFailed, Phase: record.Failed},
	}
	evs := rec.all()
	require.Equal(t, want, summary(evs), "events (-want +got)")
	assert.Equal(t, "mirror", evs[2].Check, "CheckFailed.Check")
	assert.Equal(t, "not required: recorded as a warning", evs[2].Reason, "CheckFailed.Reason")
	assert.ErrorIs(t, evs[4].Err, runnertest.ErrScripted, "ComponentFailed.Err")
	assert.Equal(t, "dependency a failed", evs[5].Reason, "ComponentSkipped.Reason")
	assert.ErrorIs(t, evs[7].Err, runner.ErrRunFailed, "PlanFinished.Err")
}

// A check that passes says so, with its name, hop and how long it took,
// as a failed one does: observers can tell every check ran.
func TestEventCheckSucceeded(t *testing.T) {
	clock := fakeClock()
	rec := &recorder{}
	took := func(d time.Duration) runner.CheckFunc {
		return func(context.Context, runner.CheckTask) error { clock.Advance(d); return nil }
	}
	e := runner.New(runnertest.New(), runner.WithClock(clock), runner.WithObserver(rec), runner.WithMaxParallel(1),
		runner.WithCheck("mirror", took(2*time.Second)), runner.WithCheck("health", took(3*time.Second)))
	p := planOf(hop{g: graphOf(t, c("a")), pre: []release.Check{{Name: "mirror", Required: true}}, post: []release.Check{{Name: "health"}}})
	_, err := e.Execute(context.Background(), p, nil)
	require.NoError(t, err)

	want := []ev{
		{Type: runner.PlanStarted, Hop: -1},
		{Type: runner.HopStarted, Hop: 0},
		{Type: runner.CheckSucceeded, Hop: 0},
		{Type: runner.ComponentStarted, Hop: 0, Component: "a", Attempt: 1},
		{Type: runner.ComponentSucceeded, Hop: 0, Component: "a", Attempt: 1, Done: 1},
		{Type: runner.CheckSucceeded, Hop: 0, Done: 1},
		{Type: runner.HopSucceeded, Hop: 0, Done: 1, Phase: record.Succeeded},
		{Type: runner.PlanFinished, Hop: -1, Done: 1, Phase: record.Succeeded},
	}
	evs := rec.all()
	require.Equal(t, want, summary(evs), "events (-want +got)")
	for i, check := range map[int]string{2: "mirror", 5: "health"} {
		assert.Equal(t, check, evs[i].Check, "CheckSucceeded.Check")
		assert.Equal(t, "v1.0 -> v2.0", evs[i].HopName, "CheckSucceeded.HopName of %s", check)
		assert.NoError(t, evs[i].Err, "CheckSucceeded.Err of %s", check)
	}
	assert.Equal(t, 2*time.Second, evs[2].Duration, "mirror's duration")
	assert.Equal(t, 3*time.Second, evs[5].Duration, "health's duration")
}

// A failed check says how long it ran too.
func TestEventCheckFailedDuration(t *testing.T) {
	clock := fakeClock()
	rec := &recorder{}
	bad := func(context.Context, runner.CheckTask) error {
		clock.Advance(time.Second)
		return errors.New("mirror down")
	}
	e := runner.New(runnertest.New(), runner.WithClock(clock), runner.WithObserver(rec), runner.WithCheck("mirror", bad))
	_, err := e.Execute(context.Background(), planOf(hop{g: graphOf(t, c("a")), pre: []release.Check{{Name: "mirror", Required: true}}}), nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	evs := rec.all()
	require.Equal(t, runner.CheckFailed, evs[2].Type, "event 3")
	assert.Equal(t, time.Second, evs[2].Duration, "CheckFailed.Duration")
}

func TestEventCancelled(t *testing.T) {
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := runnertest.New().Script("a", runnertest.Script{Hang: true})
	fake.OnStart = func(runner.Task) { cancel() }
	res := wait(t, start(ctx, runner.New(fake, runner.WithObserver(rec), runner.WithMaxParallel(1)), plan1(t, c("a"), c("b")), nil))
	require.ErrorIs(t, res.err, context.Canceled)
	var types []runner.EventType
	for _, e := range rec.all() {
		types = append(types, e.Type)
	}
	assert.Equal(t, []runner.EventType{runner.PlanStarted, runner.HopStarted, runner.ComponentStarted,
		runner.ComponentCancelled, runner.ComponentCancelled, runner.HopFailed, runner.PlanFinished}, types)
	last := rec.all()[len(types)-1]
	assert.Equal(t, record.Cancelled, last.Phase, "PlanFinished.Phase")
	assert.Equal(t, record.CodeCancelled, last.Code, "PlanFinished.Code")
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// textLogger logs to buf without times, so that lines can be compared.
func textLogger(buf *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Attr{}
		}
		return a
	}}))
}

// A panicking observer is recovered and logged; the others get every event
// and the run is not affected.
func TestObserverPanics(t *testing.T) {
	var logs syncBuffer
	rec := &recorder{}
	panicky := runner.ObserverFunc(func(e runner.Event) { panic("observer bug") })
	e := runner.New(runnertest.New(), runner.WithObserver(panicky), runner.WithObserver(rec), runner.WithLogger(textLogger(&logs)))
	st, err := e.Execute(context.Background(), plan1(t, c("a"), c("b", "a")), nil)
	require.NoError(t, err)
	assert.Equal(t, record.Succeeded, st.Phase)
	assert.Len(t, rec.all(), 8, "events delivered to the observer after the panicking one")
	assert.Equal(t, 8, strings.Count(logs.String(), `level=ERROR msg="runner: observer panicked"`), "logged panics:\n%s", logs.String())
	assert.Contains(t, logs.String(), `panic="observer bug"`)
}

// An observer that blocks does not block the run; Execute returns after
// the drain timeout, and the events it did not take are dropped.
func TestObserverBlocks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var logs syncBuffer
	release := make(chan struct{})
	var mu sync.Mutex
	var got []runner.EventType
	blocking := runner.ObserverFunc(func(e runner.Event) {
		mu.Lock()
		got = append(got, e.Type)
		mu.Unlock()
		<-release
	})
	fake := runnertest.New()
	e := runner.New(fake, runner.WithObserver(blocking), runner.WithObserverDrain(20*time.Millisecond), runner.WithLogger(textLogger(&logs)))
	res := wait(t, start(context.Background(), e, plan1(t, c("a"), c("b", "a"), c("c", "b")), nil))
	require.NoError(t, res.err)
	assert.Equal(t, record.Succeeded, res.st.Phase, "the run finished while the observer blocked")
	assert.Len(t, fake.Records(), 3, "every component ran")
	assert.Contains(t, logs.String(), "observers did not take every event before the drain timeout")
	close(release)
	// Once the observer returns, the delivery goroutine exits (goleak above)
	// without delivering what Execute dropped.
	require.Eventually(t, func() bool { return goleak.Find(goleak.IgnoreCurrent()) == nil }, 5*time.Second, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []runner.EventType{runner.PlanStarted}, got, "events the blocking observer saw")
}

// An observer that blocks holds up no other: one added with
// WithBlockingObserver gets every event, PlanFinished last, before Execute
// returns; one added with WithObserver has a queue of its own and gets
// them all within the drain timeout. The log says, for the observer that
// blocked, how many events it dropped.
func TestObserverBlocksOnlyItself(t *testing.T) {
	for _, tc := range []struct {
		name  string
		add   func(runner.Observer) runner.Option
		drain time.Duration
	}{
		// The queued observer's events are delivered at once; the drain
		// is long so that a loaded machine has no say.
		{"queued", runner.WithObserver, 3 * time.Second},
		{"blocking", runner.WithBlockingObserver, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			var logs syncBuffer
			release := make(chan struct{})
			stalled := runner.ObserverFunc(func(runner.Event) { <-release })
			rec := &recorder{}
			e := runner.New(runnertest.New(), runner.WithObserver(stalled), tc.add(rec),
				runner.WithObserverDrain(tc.drain), runner.WithLogger(textLogger(&logs)))
			res := wait(t, start(context.Background(), e, plan1(t, c("a"), c("b", "a")), nil))
			require.NoError(t, res.err)
			got := rec.all()
			close(release)
			require.Len(t, got, 8, "events the observer beside a stalled one got: %v", summary(got))
			assert.Equal(t, runner.PlanStarted, got[0].Type, "first event")
			assert.Equal(t, runner.PlanFinished, got[7].Type, "last event")
			// The stalled observer took none: it is in the middle of the
			// first, and the 7 others are queued.
			assert.Contains(t, logs.String(), `level=WARN msg="runner: observers did not take every event before the drain timeout; these were dropped" observer=runner.ObserverFunc dropped=8`)
			assert.Equal(t, 1, strings.Count(logs.String(), "level=WARN"), "warnings, one for the stalled observer:\n%s", logs.String())
			require.Eventually(t, func() bool { return goleak.Find(goleak.IgnoreCurrent()) == nil }, 5*time.Second, time.Millisecond)
		})
	}
}

func TestSlogObserver(t *testing.T) {
	var logs syncBuffer
	fake := runnertest.New().Script("a", runnertest.Script{FailAlways: true})
	e := runner.New(fake, runner.WithObserver(runner.SlogObserver(textLogger(&logs))), runner.WithMaxParallel(1), runner.WithClock(fakeClock()))
	_, err := e.Execute(context.Background(), plan1(t, c("a"), c("b", "a"), c("c")), nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	want := []string{
		`level=INFO msg=PlanStarted done=0 total=3`,
		`level=INFO msg=HopStarted done=0 total=3 hop="v1.0 -> v2.0"`,
		`level=INFO msg=ComponentStarted done=0 total=3 hop="v1.0 -> v2.0" component=a version=v1.1.0 attempt=1`,
		`level=WARN msg=ComponentFailed done=0 total=3 hop="v1.0 -> v2.0" component=a version=v1.1.0 attempt=1 code=COMPONENT_FAILED error="a attempt 1: runnertest: scripted failure"`,
		`level=INFO msg=ComponentSkipped done=0 total=3 hop="v1.0 -> v2.0" component=b version=v1.1.0 attempt=0 code=DEPENDENCY_FAILED reason="dependency a failed"`,
		`level=INFO msg=ComponentStarted done=0 total=3 hop="v1.0 -> v2.0" component=c version=v1.1.0 attempt=1`,
	}
	require.GreaterOrEqual(t, len(lines), len(want)+2, "log lines:\n%s", logs.String())
	for i, w := range want {
		assert.Equal(t, w, lines[i], "log line %d", i+1)
	}
	assert.Contains(t, lines[len(lines)-2], "level=WARN msg=HopFailed")
	assert.Contains(t, lines[len(lines)-1], "level=INFO msg=PlanFinished")
	assert.Contains(t, lines[len(lines)-1], "phase=Failed")
}

// A check that passes is logged at Info with its name and duration.
func TestSlogObserverCheck(t *testing.T) {
	var logs syncBuffer
	clock := fakeClock()
	ok := func(context.Context, runner.CheckTask) error { clock.Advance(2 * time.Second); return nil }
	e := runner.New(runnertest.New(), runner.WithObserver(runner.SlogObserver(textLogger(&logs))), runner.WithClock(clock), runner.WithCheck("mirror", ok))
	_, err := e.Execute(context.Background(), planOf(hop{g: graphOf(t, c("a")), pre: []release.Check{{Name: "mirror"}}}), nil)
	require.NoError(t, err)
	assert.Contains(t, strings.Split(strings.TrimSpace(logs.String()), "\n"),
		`level=INFO msg=CheckSucceeded done=0 total=1 hop="v1.0 -> v2.0" check=mirror duration=2s`, "log lines:\n%s", logs.String())
}

// After a resume, PlanFinished and HopSucceeded say how long this run
// took, not the time since the first run started (which includes the time
// between runs; Status.StartedAt and FinishedAt span every run).
func TestEventDurationAfterResume(t *testing.T) {
	clock := fakeClock()
	fake := runnertest.New().Script("b", runnertest.Script{FailFirst: 1})
	fake.OnStart = func(runner.Task) { clock.Advance(time.Second) }
	p := plan1(t, c("a"), c("b", "a"))
	st1, err := runner.New(fake, runner.WithClock(clock), runner.WithMaxParallel(1)).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)

	clock.Advance(time.Hour) // the operator comes back later
	rec := &recorder{}
	st2, err := runner.New(fake, runner.WithClock(clock), runner.WithObserver(rec), runner.WithMaxParallel(1)).Execute(context.Background(), p, st1)
	require.NoError(t, err)
	evs := rec.all()
	require.NotEmpty(t, evs)
	last := evs[len(evs)-1]
	require.Equal(t, runner.PlanFinished, last.Type)
	assert.Equal(t, time.Second, last.Duration, "PlanFinished.Duration: this run's (b's second attempt)")
	assert.Equal(t, time.Second, evs[len(evs)-2].Duration, "HopSucceeded.Duration: this run's")
	assert.Equal(t, t0, st2.StartedAt, "Status.StartedAt: the first run's")
	assert.Equal(t, time.Hour+3*time.Second, st2.FinishedAt.Sub(st2.StartedAt), "Status spans both runs and the time between")
}

// TestEventWaiting: Task.Waiting emits ComponentWaiting once per change of
// its message, between the attempt's ComponentStarted and its end, with
// the message as Reason; a retry's first report is emitted again, and a
// Task built by hand ignores it.
func TestEventWaiting(t *testing.T) {
	tests := []struct {
		name    string
		reports [][]string // per attempt
		want    []string   // event types and reasons, in order
	}{
		{name: "once per change", reports: [][]string{{"1 of 5", "1 of 5", "3 of 5", "3 of 5", "5 of 5"}},
			want: []string{"ComponentStarted", "ComponentWaiting 1 of 5", "ComponentWaiting 3 of 5", "ComponentWaiting 5 of 5", "ComponentSucceeded"}},
		{name: "empty ignored", reports: [][]string{{"", "x", ""}},
			want: []string{"ComponentStarted", "ComponentWaiting x", "ComponentSucceeded"}},
		{name: "retry reports again", reports: [][]string{{"x"}, {"x", "y"}},
			want: []string{"ComponentStarted", "ComponentWaiting x", "ComponentRetrying", "ComponentStarted", "ComponentWaiting x", "ComponentWaiting y", "ComponentSucceeded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			rn := runner.RunnerFunc(func(_ context.Context, task runner.Task) error {
				for _, m := range tt.reports[task.Attempt-1] {
					task.Waiting(m)
				}
				if task.Attempt < len(tt.reports) {
					return errors.New("not yet")
				}
				return nil
			})
			e := runner.New(rn, runner.WithObserver(rec), runner.WithDefaultRetries(releaseRetries(len(tt.reports))))
			_, err := e.Execute(context.Background(), plan1(t, c("a")), nil)
			require.NoError(t, err)
			var got []string
			for _, ev := range rec.all() {
				if ev.Component == "" {
					continue
				}
				s := string(ev.Type)
				if ev.Type == runner.ComponentWaiting {
					s += " " + ev.Reason
					assert.Equal(t, "a", ev.Component, "ComponentWaiting.Component")
					assert.Positive(t, ev.Attempt, "ComponentWaiting.Attempt")
				}
				got = append(got, s)
			}
			assert.Equal(t, tt.want, got)
		})
	}
	runner.Task{Component: "by hand"}.Waiting("nothing happens") // no executor: a no-op, no panic
}
