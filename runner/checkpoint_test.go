package runner_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// Running is checkpointed before the runner is invoked: inside the runner,
// the last checkpoint already shows the attempt Running.
func TestCheckpointWriteAhead(t *testing.T) {
	p := plan1(t, c("a"), c("b", "a"), c("c", "b"), c("d").with(retries(2, 0, 0)))
	snaps := &snapshots{}
	fake := runnertest.New().Script("d", runnertest.Script{FailFirst: 1})
	var mu sync.Mutex
	var problems []string
	fake.OnStart = func(task runner.Task) {
		last := snaps.last()
		cs := compStatus(t, last, 0, task.Component)
		if cs.Phase != record.Running || cs.Attempts != task.Attempt {
			mu.Lock()
			problems = append(problems, task.Component)
			mu.Unlock()
			t.Errorf("%s attempt %d started; last checkpoint shows %s attempt %d, want Running attempt %d",
				task.Component, task.Attempt, cs.Phase, cs.Attempts, task.Attempt)
		}
	}
	st, err := runner.New(fake, runner.WithCheckpointer(snaps)).Execute(context.Background(), p, nil)
	require.NoError(t, err)
	assert.Empty(t, problems, "attempts started without a Running checkpoint")
	assert.Equal(t, st, snaps.last(), "the last checkpoint is the final status")

	all := snaps.list()
	assert.Equal(t, record.Running, all[0].Phase, "first checkpoint: the run started")
	for _, cs := range all[0].Hops[0].Components {
		assert.Equal(t, record.Pending, cs.Phase, "first checkpoint: %s", cs.Name)
	}
	// Every component's record moves forward one transition at a time,
	// and every transition is checkpointed.
	for _, name := range []string{"a", "b", "c", "d"} {
		type state struct {
			phase    record.Phase
			attempts int
		}
		var seen []state
		for _, s := range all {
			cs := compStatus(t, s, 0, name)
			x := state{cs.Phase, cs.Attempts}
			if len(seen) == 0 || seen[len(seen)-1] != x {
				seen = append(seen, x)
			}
		}
		want := []state{{record.Pending, 0}, {record.Running, 1}, {record.Succeeded, 1}}
		if name == "d" {
			want = []state{{record.Pending, 0}, {record.Running, 1}, {record.Running, 2}, {record.Succeeded, 2}}
		}
		assert.Equal(t, want, seen, "checkpointed states of %s", name)
	}
	// The failed attempt of d is checkpointed with its error before the retry.
	var sawRetry bool
	for _, s := range all {
		if cs := compStatus(t, s, 0, "d"); cs.Phase == record.Running && cs.Attempts == 1 && cs.Error != "" {
			sawRetry = true
		}
	}
	assert.True(t, sawRetry, "no checkpoint of d's failed first attempt")
}

func TestCheckpointFailure(t *testing.T) {
	errDisk := errors.New("disk full")
	tests := []struct {
		name       string
		failWhen   func(s *record.Status) bool
		wantPhases map[string]record.Phase
		wantCalls  []string
	}{
		{
			name:       "at the start",
			failWhen:   func(*record.Status) bool { return true },
			wantPhases: map[string]record.Phase{"a": record.Pending, "b": record.Pending, "c": record.Pending},
		},
		{
			name: "recording a start",
			failWhen: func(s *record.Status) bool {
				cs, _ := s.Component(0, "b")
				return cs.Phase == record.Running
			},
			wantPhases: map[string]record.Phase{"a": record.Succeeded, "b": record.Cancelled, "c": record.Cancelled},
			wantCalls:  []string{"a"},
		},
		{
			name:       "the final record",
			failWhen:   func(s *record.Status) bool { return s.Phase == record.Succeeded },
			wantPhases: map[string]record.Phase{"a": record.Succeeded, "b": record.Succeeded, "c": record.Succeeded},
			wantCalls:  []string{"a", "b", "c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed := 0
			snaps := &snapshots{fail: func(_ int, s *record.Status) error {
				if failed > 0 {
					// Only the final checkpoint comes after a failure.
					if s.Phase != record.Failed || s.Code != record.CodeCheckpointFailed {
						t.Errorf("Checkpoint called after it failed with a status %s %s, want only the final one (Failed CHECKPOINT_FAILED)", s.Phase, s.Code)
					}
					failed++
					return errDisk
				}
				if tt.failWhen(s) {
					failed++
					return errDisk
				}
				return nil
			}}
			fake := runnertest.New()
			st, err := runner.New(fake, runner.WithCheckpointer(snaps), runner.WithMaxParallel(1)).
				Execute(context.Background(), plan1(t, c("a"), c("b", "a"), c("c", "b")), nil)
			require.ErrorIs(t, err, errDisk, "Execute error wraps the checkpointer's")
			assert.Contains(t, err.Error(), "checkpoint failed")
			assert.Equal(t, record.Failed, st.Phase, "Status.Phase")
			assert.Equal(t, record.CodeCheckpointFailed, st.Code, "Status.Code")
			assert.Equal(t, "disk full", st.Message, "Status.Message")
			assert.Equal(t, tt.wantPhases, phases(st, 0), "phases")
			var calls []string
			for _, r := range fake.Records() {
				calls = append(calls, r.Component)
			}
			assert.Equal(t, tt.wantCalls, calls, "runner calls")
			if tt.wantPhases["b"] == record.Cancelled {
				b := compStatus(t, st, 0, "b")
				assert.Equal(t, record.CodeCheckpointFailed, b.Code, "b: its start could not be recorded")
				assert.Zero(t, b.Attempts, "b attempts: it never ran")
			}
		})
	}
}

func TestCheckpointFunc(t *testing.T) {
	n := 0
	cp := runner.CheckpointFunc(func(_ context.Context, s *record.Status) error {
		n++
		return nil
	})
	_, err := runner.New(runnertest.New(), runner.WithCheckpointer(cp)).Execute(context.Background(), plan1(t, c("a")), nil)
	require.NoError(t, err)
	// Start, hop start, a's round of Running, a's round of Succeeded, hop
	// end, run end.
	assert.Equal(t, 6, n, "checkpoints of a one-component run")
}

// changeRecorder is a ChangeCheckpointer that records what it was told.
type changeRecorder struct{ calls [][]record.Ref }

func (r *changeRecorder) Checkpoint(context.Context, *record.Status) error { return nil }

func (r *changeRecorder) CheckpointChanges(_ context.Context, _ *record.Status, changed []record.Ref) error {
	r.calls = append(r.calls, append([]record.Ref{}, changed...))
	return nil
}

// A plain Checkpointer (a CheckpointFunc, as a wrapper that counts or
// logs is) finds in its ctx, through runner.Changes, what a
// ChangeCheckpointer is told in the same run; not for another status (a
// copy) nor for a ctx Execute did not pass. Before, a wrapper hid what
// changed, and the checkpointer it wrapped saved the whole status every
// round.
func TestCheckpointChangesInContext(t *testing.T) {
	p := plan1(t, c("a"), c("b", "a"), c("c", "a"), c("d"))
	want := &changeRecorder{}
	_, err := runner.New(runnertest.New(), runner.WithMaxParallel(1), runner.WithCheckpointer(want)).Execute(context.Background(), p, nil)
	require.NoError(t, err)

	var got [][]record.Ref
	var problems []string
	cp := runner.CheckpointFunc(func(ctx context.Context, s *record.Status) error {
		changed, ok := runner.Changes(ctx, s)
		if !ok {
			problems = append(problems, "Changes(ctx, s): not ok")
		}
		got = append(got, append([]record.Ref{}, changed...))
		if _, ok := runner.Changes(ctx, s.DeepCopy()); ok {
			problems = append(problems, "Changes(ctx, a copy of s): ok")
		}
		if _, ok := runner.Changes(context.Background(), s); ok {
			problems = append(problems, "Changes(a ctx Execute did not pass, s): ok")
		}
		return nil
	})
	_, err = runner.New(runnertest.New(), runner.WithMaxParallel(1), runner.WithCheckpointer(cp)).Execute(context.Background(), p, nil)
	require.NoError(t, err)
	assert.Empty(t, problems)
	assert.Equal(t, want.calls, got, "runner.Changes in each Checkpoint, against what CheckpointChanges was told")
}
