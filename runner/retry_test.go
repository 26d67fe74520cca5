package runner_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// backoffs returns the Backoff of every ComponentRetrying event.
func backoffs(evs []runner.Event) []time.Duration {
	var out []time.Duration
	for _, ev := range evs {
		if ev.Type == runner.ComponentRetrying {
			out = append(out, ev.Backoff)
		}
	}
	return out
}

// Exponential backoff with a cap, on a fake clock: each retry starts only
// once its whole backoff has passed.
func TestRetryBackoff(t *testing.T) {
	clock := fakeClock()
	fake := runnertest.New().Script("a", runnertest.Script{FailFirst: 3})
	rec := &recorder{}
	e := runner.New(fake, runner.WithClock(clock), runner.WithJitter(0, 1), runner.WithObserver(rec))
	p := plan1(t, c("a").with(retries(4, 10*time.Second, 25*time.Second)))
	done := start(context.Background(), e, p, nil)

	for k, wait := range []time.Duration{10 * time.Second, 20 * time.Second, 25 * time.Second} {
		require.True(t, clock.WaitForTimers(1, 10*time.Second), "retry %d: no backoff timer", k+1)
		require.Equal(t, k+1, fake.Attempts("a"), "attempts before retry %d", k+1)
		clock.Advance(wait - time.Millisecond)
		require.Equal(t, 1, clock.Pending(), "retry %d: backoff ended before %v", k+1, wait)
		clock.Advance(time.Millisecond)
	}
	res := wait(t, done)
	require.NoError(t, res.err)
	a := compStatus(t, res.st, 0, "a")
	assert.Equal(t, record.Succeeded, a.Phase, "a phase")
	assert.Equal(t, 4, a.Attempts, "a attempts")
	assert.Empty(t, a.Error, "a error after a successful retry")
	assert.Equal(t, []time.Duration{10 * time.Second, 20 * time.Second, 25 * time.Second}, backoffs(rec.all()), "backoffs: doubled, capped at 25s")
	var attempts []int
	for _, r := range fake.Records() {
		attempts = append(attempts, r.Attempt)
	}
	assert.Equal(t, []int{1, 2, 3, 4}, attempts, "Task.Attempt of each call")
	assert.Equal(t, t0.Add(55*time.Second), a.FinishedAt, "a finished after 10s+20s+25s of backoff")
	assert.Equal(t, 55*time.Second, a.Duration.Duration, "a duration spans its attempts")
}

// Jitter shortens a backoff by up to its fraction, the same way for the
// same seed.
func TestRetryJitter(t *testing.T) {
	run := func(seed uint64) time.Duration {
		clock := fakeClock()
		rec := &recorder{}
		fake := runnertest.New().Script("a", runnertest.Script{FailFirst: 1})
		e := runner.New(fake, runner.WithClock(clock), runner.WithJitter(0.5, seed), runner.WithObserver(rec))
		done := start(context.Background(), e, plan1(t, c("a").with(retries(2, 10*time.Second, 0))), nil)
		require.True(t, clock.WaitForTimers(1, 10*time.Second), "no backoff timer")
		clock.Advance(10 * time.Second)
		res := wait(t, done)
		require.NoError(t, res.err)
		b := backoffs(rec.all())
		require.Len(t, b, 1)
		return b[0]
	}
	first := run(42)
	assert.GreaterOrEqual(t, first, 5*time.Second, "jittered backoff, want >= 10s * (1 - 0.5)")
	assert.Less(t, first, 10*time.Second, "jittered backoff, want < 10s")
	assert.Equal(t, first, run(42), "backoff with the same seed")
}

func TestRetryAttempts(t *testing.T) {
	tests := []struct {
		name         string
		script       runnertest.Script
		def          release.Retries
		node         comp
		wantAttempts int
		wantPhase    record.Phase
	}{
		{"default is one attempt", runnertest.Script{FailAlways: true}, release.Retries{}, c("a"), 1, record.Failed},
		{"default retries", runnertest.Script{FailAlways: true}, releaseRetries(3), c("a"), 3, record.Failed},
		{"component retries override the default", runnertest.Script{FailAlways: true}, releaseRetries(3), c("a").with(retries(5, 0, 0)), 5, record.Failed},
		{"succeeds on the last attempt", runnertest.Script{FailFirst: 2}, releaseRetries(3), c("a"), 3, record.Succeeded},
		{"permanent is not retried", runnertest.Script{FailAlways: true, Permanent: true}, releaseRetries(5), c("a"), 1, record.Failed},
		{"panic is not retried", runnertest.Script{Panic: true}, releaseRetries(5), c("a"), 1, record.Failed},
		{"skip is not retried", runnertest.Script{Skip: "nothing to do"}, releaseRetries(5), c("a"), 1, record.Skipped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := runnertest.New().Script("a", tt.script)
			st, err := runner.New(fake, runner.WithDefaultRetries(tt.def), runner.WithClock(fakeClock())).
				Execute(context.Background(), plan1(t, tt.node), nil)
			a := compStatus(t, st, 0, "a")
			assert.Equal(t, tt.wantPhase, a.Phase, "a phase")
			assert.Equal(t, tt.wantAttempts, a.Attempts, "Status attempts")
			assert.Equal(t, tt.wantAttempts, fake.Attempts("a"), "runner calls")
			if tt.wantPhase != record.Failed {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, runner.ErrRunFailed)
			var ce *runner.ComponentError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.wantAttempts, ce.Attempt, "ComponentError.Attempt")
			require.NotNil(t, st.LastFailure)
			assert.Equal(t, tt.wantAttempts, st.LastFailure.Attempt, "LastFailure.Attempt")
			if !tt.script.Panic {
				assert.ErrorIs(t, err, runnertest.ErrScripted)
				assert.Equal(t, record.CodeComponentFailed, a.Code, "a code")
				assert.Contains(t, a.Error, "attempt "+string(rune('0'+tt.wantAttempts)), "a error is the last attempt's")
			}
		})
	}
}

// A timed-out attempt is retried like a failed one; its code is
// COMPONENT_TIMEOUT only if the last attempt timed out.
func TestRetryAfterTimeout(t *testing.T) {
	tests := []struct {
		name      string
		hang      func(runner.Task) bool
		wantPhase record.Phase
		wantCode  record.Code
	}{
		{"second attempt succeeds", func(t runner.Task) bool { return t.Attempt == 1 }, record.Succeeded, ""},
		{"both time out", func(runner.Task) bool { return true }, record.Failed, record.CodeComponentTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := fakeClock()
			rn := &deadlineRunner{hang: tt.hang}
			e := runner.New(rn, runner.WithClock(clock))
			done := start(context.Background(), e, plan1(t, c("a").with(timeout(time.Minute)).with(func(cv *release.ComponentVersion) {
				cv.Timeout = release.D(time.Minute)
				cv.Retries = &release.Retries{Attempts: 2}
			})), nil)
			require.True(t, clock.WaitForTimers(1, 10*time.Second), "no timeout timer")
			clock.Advance(time.Minute)
			if tt.wantPhase == record.Failed {
				require.True(t, clock.WaitForTimers(1, 10*time.Second), "no timeout timer for attempt 2")
				clock.Advance(time.Minute)
			}
			res := wait(t, done)
			a := compStatus(t, res.st, 0, "a")
			assert.Equal(t, tt.wantPhase, a.Phase, "a phase")
			assert.Equal(t, tt.wantCode, a.Code, "a code")
			assert.Equal(t, 2, a.Attempts, "a attempts")
		})
	}
}

// A retried attempt's ComponentRetrying event carries its code, as the
// executor tells it (not from the error): COMPONENT_TIMEOUT for one its
// timeout stopped, COMPONENT_FAILED for one that failed by itself, though
// with an error that matches context.DeadlineExceeded (a deadline of its
// own).
func TestRetryingEventCode(t *testing.T) {
	var mu sync.Mutex
	tries := map[string]int{}
	rn := runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		mu.Lock()
		tries[t.Component]++
		n := tries[t.Component]
		mu.Unlock()
		switch {
		case n > 1:
			return nil
		case t.Component == "slow":
			<-ctx.Done()
			return ctx.Err()
		default:
			return fmt.Errorf("client deadline: %w", context.DeadlineExceeded)
		}
	})
	rec := &recorder{}
	p := plan1(t, c("slow").with(func(cv *release.ComponentVersion) {
		retries(2, 0, 0)(cv)
		timeout(10 * time.Millisecond)(cv)
	}), c("own").with(retries(2, 0, 0)))
	_, err := runner.New(rn, runner.WithObserver(rec)).Execute(context.Background(), p, nil)
	require.NoError(t, err)
	got := map[string]record.Code{}
	for _, ev := range rec.all() {
		if ev.Type == runner.ComponentRetrying {
			got[ev.Component] = ev.Code
		}
	}
	assert.Equal(t, map[string]record.Code{"slow": record.CodeComponentTimeout, "own": record.CodeComponentFailed}, got)
}
