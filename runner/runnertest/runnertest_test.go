package runnertest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

func task(component string, attempt int) runner.Task {
	return runner.Task{Component: component, Attempt: attempt, HopIndex: 1}
}

func TestRunnerScripts(t *testing.T) {
	tests := []struct {
		name   string
		script runnertest.Script
		want   []string // per attempt: "ok", "fail", "permanent", "skip", "panic"
	}{
		{"zero script succeeds", runnertest.Script{}, []string{"ok", "ok"}},
		{"fail first 2", runnertest.Script{FailFirst: 2}, []string{"fail", "fail", "ok"}},
		{"fail always", runnertest.Script{FailAlways: true}, []string{"fail", "fail", "fail"}},
		{"permanent", runnertest.Script{FailAlways: true, Permanent: true}, []string{"permanent", "permanent"}},
		{"panic on failing attempts", runnertest.Script{FailFirst: 1, Panic: true}, []string{"panic", "ok"}},
		{"panic always", runnertest.Script{Panic: true}, []string{"panic", "panic"}},
		{"skip", runnertest.Script{Skip: "at target"}, []string{"skip", "skip"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runnertest.New().Script("a", tt.script)
			for i, want := range tt.want {
				var err error
				var panicked any
				func() {
					defer func() { panicked = recover() }()
					err = r.Run(context.Background(), task("a", i+1))
				}()
				switch want {
				case "ok":
					assert.NoError(t, err, "attempt %d", i+1)
				case "fail":
					assert.ErrorIs(t, err, runnertest.ErrScripted, "attempt %d", i+1)
					assert.False(t, runner.IsPermanent(err), "attempt %d is permanent", i+1)
				case "permanent":
					assert.ErrorIs(t, err, runnertest.ErrScripted, "attempt %d", i+1)
					assert.True(t, runner.IsPermanent(err), "attempt %d: want permanent", i+1)
				case "skip":
					assert.ErrorIs(t, err, runner.ErrSkipped, "attempt %d", i+1)
				case "panic":
					assert.Equal(t, "runnertest: scripted panic in a", panicked, "attempt %d panic", i+1)
				}
				if want != "panic" {
					assert.Nil(t, panicked, "attempt %d panicked", i+1)
				}
			}
			recs := r.Records()
			require.Len(t, recs, len(tt.want))
			assert.Equal(t, len(tt.want), r.Attempts("a"), "Attempts")
			for i, rec := range recs {
				assert.Equal(t, "a", rec.Component)
				assert.Equal(t, 1, rec.Hop, "Record.Hop")
				assert.Equal(t, i+1, rec.Attempt, "Record.Attempt")
				assert.Less(t, rec.Start, rec.End, "Record start before end")
				assert.False(t, rec.EndTime.Before(rec.StartTime), "Record times")
				// A panic is recorded as a failure, so that the checks do
				// not take it for a success.
				assert.Equal(t, tt.want[i] == "ok", rec.Err == nil, "attempt %d Record.Err = %v", i+1, rec.Err)
			}
		})
	}
}

func TestRunnerHangAndDelay(t *testing.T) {
	r := runnertest.New().
		Script("hang", runnertest.Script{Hang: true}).
		Script("slow", runnertest.Script{Delay: time.Hour}).
		Script("quick", runnertest.Script{Delay: time.Millisecond, FailAlways: true})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make([]error, 2)
	started := make(chan struct{}, 2)
	r.OnStart = func(runner.Task) { started <- struct{}{} }
	for i, n := range []string{"hang", "slow"} {
		wg.Go(func() { errs[i] = r.Run(ctx, task(n, 1)) })
	}
	<-started
	<-started
	assert.Equal(t, 2, r.Peak(), "Peak while both run")
	cancel()
	wg.Wait()
	assert.ErrorIs(t, errs[0], context.Canceled, "hang returns ctx.Err()")
	assert.ErrorIs(t, errs[1], context.Canceled, "a delay is cut short by ctx")
	err := r.Run(context.Background(), task("quick", 1))
	assert.ErrorIs(t, err, runnertest.ErrScripted, "a delay, then the scripted failure")
	assert.Equal(t, 2, r.Peak(), "Peak")
}

func TestClock(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t.Run("after", func(t *testing.T) {
		c := runnertest.NewClock(t0)
		assert.Equal(t, t0, c.Now())
		ch := c.After(10 * time.Second)
		assert.Equal(t, 1, c.Pending())
		c.Advance(9 * time.Second)
		select {
		case <-ch:
			t.Fatal("After(10s) fired after 9s")
		default:
		}
		c.Advance(time.Second)
		assert.Equal(t, t0.Add(10*time.Second), <-ch, "After(10s) sends the time it fired at")
		assert.Zero(t, c.Pending())
		assert.Equal(t, t0.Add(10*time.Second), c.Now())
		assert.Equal(t, c.Now(), <-c.After(0), "After(0) fires at once")
	})
	t.Run("one advance fires every timer due", func(t *testing.T) {
		c := runnertest.NewClock(t0)
		ctx, cancel := c.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		ch1, ch3, ch9 := c.After(time.Second), c.After(3*time.Second), c.After(9*time.Second)
		c.Advance(5 * time.Second)
		assert.Equal(t, t0.Add(time.Second), <-ch1, "After(1s) reports its own due time")
		assert.Equal(t, t0.Add(3*time.Second), <-ch3, "After(3s) reports its own due time")
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded, "WithTimeout(2s) after 5s")
		assert.Equal(t, 1, c.Pending(), "After(9s) still pending")
		select {
		case <-ch9:
			t.Fatal("After(9s) fired after 5s")
		default:
		}
	})
	t.Run("with timeout", func(t *testing.T) {
		c := runnertest.NewClock(t0)
		ctx, cancel := c.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		dl, ok := ctx.Deadline()
		assert.True(t, ok, "Deadline set")
		assert.Equal(t, t0.Add(time.Minute), dl, "Deadline")
		assert.NoError(t, ctx.Err(), "Err before the deadline")
		c.Advance(time.Minute)
		<-ctx.Done()
		assert.Equal(t, context.DeadlineExceeded, ctx.Err(), "Err after the deadline")
	})
	t.Run("cancel removes the timer", func(t *testing.T) {
		c := runnertest.NewClock(t0)
		ctx, cancel := c.WithTimeout(context.Background(), time.Minute)
		require.Equal(t, 1, c.Pending())
		cancel()
		assert.Zero(t, c.Pending(), "Pending after cancel")
		assert.ErrorIs(t, ctx.Err(), context.Canceled, "Err after cancel")
	})
	t.Run("parent cancelled", func(t *testing.T) {
		c := runnertest.NewClock(t0)
		parent, cancelParent := context.WithCancel(context.Background())
		ctx, cancel := c.WithTimeout(parent, time.Minute)
		defer cancel()
		cancelParent()
		<-ctx.Done()
		assert.ErrorIs(t, ctx.Err(), context.Canceled)
	})
	t.Run("wait for timers", func(t *testing.T) {
		c := runnertest.NewClock(t0)
		assert.False(t, c.WaitForTimers(1, 10*time.Millisecond), "WaitForTimers with none armed")
		go func() {
			time.Sleep(5 * time.Millisecond)
			c.After(time.Second)
		}()
		assert.True(t, c.WaitForTimers(1, 10*time.Second), "WaitForTimers once one is armed")
	})
}

// graph: a, b depends on a, c depends on a and b.
func graph(t *testing.T) *dag.Graph {
	g, err := dag.New([]dag.Node{{Name: "a"}, {Name: "b", Deps: []string{"a"}}, {Name: "c", Deps: []string{"a", "b"}}})
	require.NoError(t, err)
	return g
}

func rec(component string, attempt, start, end int, err error) runnertest.Record {
	return runnertest.Record{Component: component, Attempt: attempt, Start: start, End: end, Err: err}
}

func TestCheckOrder(t *testing.T) {
	failed := errors.New("failed")
	tests := []struct {
		name string
		recs []runnertest.Record
		want string // "" for no error
	}{
		{"in order", []runnertest.Record{rec("a", 1, 1, 2, nil), rec("b", 1, 3, 4, nil), rec("c", 1, 5, 6, nil)}, ""},
		{"retried dependency", []runnertest.Record{rec("a", 1, 1, 2, failed), rec("a", 2, 3, 4, nil), rec("b", 1, 5, 6, nil)}, ""},
		{"skipped dependency lets dependents run", []runnertest.Record{rec("a", 1, 1, 2, runner.Skip("done")), rec("b", 1, 3, 4, nil)}, ""},
		{"started before its dependency ended", []runnertest.Record{rec("a", 1, 1, 3, nil), rec("b", 1, 2, 4, nil)},
			"b attempt 1 started (seq 2) before its dependency a succeeded (seq 3)"},
		{"dependency failed", []runnertest.Record{rec("a", 1, 1, 2, failed), rec("b", 1, 3, 4, nil)},
			"b attempt 1 started (seq 3) before its dependency a succeeded (seq 0)"},
		{"dependency still running", []runnertest.Record{rec("a", 1, 1, 0, nil), rec("b", 1, 2, 3, nil)},
			"b attempt 1 started (seq 2) before its dependency a succeeded (seq 0)"},
		{"unknown component", []runnertest.Record{rec("x", 1, 1, 2, nil)}, "x ran but is not in the graph"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runnertest.CheckOrder(graph(t), 0, tt.recs)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tt.want)
		})
	}
	t.Run("other hops are ignored", func(t *testing.T) {
		recs := []runnertest.Record{rec("a", 1, 1, 3, nil), rec("b", 1, 2, 4, nil)}
		recs[0].Hop, recs[1].Hop = 1, 1
		assert.NoError(t, runnertest.CheckOrder(graph(t), 0, recs))
	})
}

func TestCheckParallelism(t *testing.T) {
	recs := []runnertest.Record{rec("a", 1, 1, 4, nil), rec("b", 1, 2, 5, nil), rec("c", 1, 3, 6, nil), rec("d", 1, 7, 8, nil)}
	assert.NoError(t, runnertest.CheckParallelism(recs, 3, nil), "3 at once, limit 3")
	assert.EqualError(t, runnertest.CheckParallelism(recs, 2, nil), "3 attempts ran at once, limit 2")
	notC := func(r runnertest.Record) bool { return r.Component != "c" }
	assert.NoError(t, runnertest.CheckParallelism(recs, 2, notC), "2 at once without c")
	// Back to back is not overlap.
	assert.NoError(t, runnertest.CheckParallelism([]runnertest.Record{rec("a", 1, 1, 2, nil), rec("b", 1, 3, 4, nil)}, 1, nil))
	// A record still running overlaps everything after it.
	running := []runnertest.Record{rec("a", 1, 1, 0, nil), rec("b", 1, 5, 6, nil)}
	assert.EqualError(t, runnertest.CheckParallelism(running, 1, nil), "2 attempts ran at once, limit 1")
}

func TestCheckSucceededOnce(t *testing.T) {
	failed := errors.New("failed")
	assert.NoError(t, runnertest.CheckSucceededOnce(0, []runnertest.Record{rec("a", 1, 1, 2, failed), rec("a", 2, 3, 4, nil), rec("b", 1, 5, 6, nil)}))
	err := runnertest.CheckSucceededOnce(0, []runnertest.Record{
		rec("b", 1, 1, 2, nil), rec("b", 2, 3, 4, nil), rec("a", 1, 5, 6, runner.Skip("x")), rec("a", 2, 7, 8, nil),
	})
	assert.EqualError(t, err, "a succeeded 2 times\nb succeeded 2 times", "errors sorted by component")
}
