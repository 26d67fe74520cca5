package state_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
)

// runTTL is the lease TTL of the Run tests, on their fake clock.
const runTTL = 30 * time.Second

// watchedLock is a Memory's lock that keeps the lease its last Acquire
// handed out, announces each Refresh on refreshed, fails them while
// refuse is set (Releases while refuseRelease is), and counts the
// Releases: a test acts with the run's lease, and sees what Run did with
// the lock.
type watchedLock struct {
	*state.Memory
	refreshed     chan struct{}
	refuse        atomic.Bool
	refuseRelease atomic.Bool

	mu       sync.Mutex
	lease    state.Lease
	releases int
}

func (l *watchedLock) Acquire(ctx context.Context, holder string, ttl time.Duration) (state.Lease, error) {
	lease, err := l.Memory.Acquire(ctx, holder, ttl)
	if err == nil {
		l.mu.Lock()
		l.lease = lease
		l.mu.Unlock()
	}
	return lease, err
}

func (l *watchedLock) Refresh(ctx context.Context, lease state.Lease) (state.Lease, error) {
	defer func() { l.refreshed <- struct{}{} }()
	if l.refuse.Load() {
		return state.Lease{}, errors.New("connection refused")
	}
	return l.Memory.Refresh(ctx, lease)
}

func (l *watchedLock) Release(ctx context.Context, lease state.Lease) error {
	l.mu.Lock()
	l.releases++
	l.mu.Unlock()
	if l.refuseRelease.Load() {
		return errors.New("connection refused")
	}
	return l.Memory.Release(ctx, lease)
}

func (l *watchedLock) last() (state.Lease, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lease, l.releases
}

// runEnv is one Run test's world: a Memory store on a fake clock, its
// lock watched, a recording runner, and the Run's log.
type runEnv struct {
	clock *runnertest.Clock
	mem   *state.Memory
	lock  *watchedLock
	rec   *runnertest.Runner
	log   bytes.Buffer
}

func newRunEnv() *runEnv {
	clock := runnertest.NewClock(epoch)
	mem := state.NewMemory(state.WithClock(clock))
	return &runEnv{clock: clock, mem: mem, lock: &watchedLock{Memory: mem, refreshed: make(chan struct{}, 100)}, rec: runnertest.New()}
}

// run is state.Run of examplePlan (etcd, then control-plane) on e, as
// holder "run".
func (e *runEnv) run(ctx context.Context, opts ...state.Option) (*record.Status, error) {
	logger := slog.New(slog.NewTextHandler(&e.log, nil))
	opts = append([]state.Option{state.WithClock(e.clock), state.WithHolder("run"), state.WithTTL(runTTL), state.WithLogger(logger)}, opts...)
	return state.Run(ctx, e.mem, e.lock, runner.New(e.rec), examplePlan(), opts...)
}

// ran lists the attempts the runner saw, as "component attempt".
func (e *runEnv) ran() []string {
	var out []string
	for _, r := range e.rec.Records() {
		out = append(out, r.Component+" "+string(rune('0'+r.Attempt)))
	}
	return out
}

// crashed leaves in e's store what a holder killed while control-plane
// ran leaves: etcd Succeeded, control-plane Running in its first attempt,
// and the dead holder's lease, which then expires.
func crashed(t *testing.T, e *runEnv) {
	ctx := t.Context()
	dead, err := e.mem.Acquire(ctx, "dead", runTTL)
	require.NoError(t, err)
	st := runner.NewStatus(examplePlan())
	st.Phase, st.Hops[0].Phase = record.Running, record.Running
	for i := range st.Hops[0].Components {
		c := &st.Hops[0].Components[i]
		c.Attempts, c.StartedAt = 1, epoch
		switch c.Name {
		case "etcd":
			c.Phase, c.FinishedAt = record.Succeeded, epoch
		case "control-plane":
			c.Phase = record.Running
		}
	}
	st.Progress.Done = 1
	require.NoError(t, e.mem.Save(ctx, dead.Token, st))
	e.clock.Advance(runTTL + state.Skew(runTTL) + time.Second)
}

// Run's contract, case by case: what runs, what it returns, what the
// store holds after, and what became of the lock.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup prepares the store; during, when set, is called at the
		// start of each attempt of etcd, with the run's ctx's cancel.
		setup  func(t *testing.T, e *runEnv)
		during func(t *testing.T, e *runEnv, cancel context.CancelFunc)
		// hang: etcd's attempt then waits for its ctx to be done.
		hang bool

		wantRan   []string
		wantPhase record.Phase // of the status returned; "" for nil
		wantErr   []error      // each matched by errors.Is
		// wantSaved is the phase the store holds after ("" for none);
		// wantHolder who holds the lock after ("" for free).
		wantSaved  record.Phase
		wantHolder string
		// wantReleases is how often Run called Release.
		wantReleases int
		// wantLog is in the Run's log; "" for no failed release there.
		wantLog string
	}{
		{
			name:    "a fresh run runs everything and frees the lock",
			wantRan: []string{"etcd 1", "control-plane 1"}, wantPhase: record.Succeeded,
			wantSaved: record.Succeeded, wantReleases: 1,
		},
		{
			name: "a lock held by another holder: a LockedError, and nothing ran",
			setup: func(t *testing.T, e *runEnv) {
				_, err := e.mem.Acquire(t.Context(), "other", runTTL)
				require.NoError(t, err)
			},
			wantErr: []error{state.ErrLocked}, wantHolder: "other",
		},
		{
			name:    "resumed after a crash, only what was not done runs",
			setup:   crashed,
			wantRan: []string{"control-plane 2"}, wantPhase: record.Succeeded,
			wantSaved: record.Succeeded, wantReleases: 1,
		},
		{
			name: "a write fenced off by another holder halts the run",
			during: func(t *testing.T, e *runEnv, _ context.CancelFunc) {
				// Another holder takes the lock while etcd runs (the
				// keeper has not refreshed yet: the clock stands still).
				lease, _ := e.lock.last()
				require.NoError(t, e.mem.Release(context.Background(), lease))
				_, err := e.mem.Acquire(context.Background(), "intruder", runTTL)
				require.NoError(t, err)
			},
			wantRan: []string{"etcd 1"}, wantPhase: record.Failed, wantErr: []error{state.ErrFenced},
			// Its release is fenced too: not worth a warning.
			wantSaved: record.Running, wantHolder: "intruder", wantReleases: 1,
		},
		{
			name:    "a release that fails is logged, not returned",
			setup:   func(t *testing.T, e *runEnv) { e.lock.refuseRelease.Store(true) },
			wantRan: []string{"etcd 1", "control-plane 1"}, wantPhase: record.Succeeded,
			wantSaved: record.Succeeded, wantHolder: "run", wantReleases: 1,
			wantLog: "state: releasing the lock failed; it is free once the lease expires",
		},
		{
			name: "a cancelled run still frees the lock",
			during: func(t *testing.T, e *runEnv, cancel context.CancelFunc) {
				cancel()
			},
			hang:    true,
			wantRan: []string{"etcd 1"}, wantPhase: record.Cancelled, wantErr: []error{context.Canceled},
			wantSaved: record.Cancelled, wantReleases: 1,
		},
		{
			name: "a lost lease stops the run, and is not released",
			during: func(t *testing.T, e *runEnv, _ context.CancelFunc) {
				// No refresh succeeds (the backend is out of reach) until
				// the keeper's margin before the lease's expiry.
				e.lock.refuse.Store(true)
				e.clock.Advance(runTTL - state.Margin(runTTL))
			},
			hang:    true,
			wantRan: []string{"etcd 1"}, wantPhase: record.Cancelled, wantErr: []error{state.ErrLost, context.Canceled},
			// Cancelled: written in the margin the keeper leaves; the
			// lease, not released, holds the lock until it expires.
			wantSaved: record.Cancelled, wantHolder: "run",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newRunEnv()
			if tc.setup != nil {
				tc.setup(t, e)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			e.rec.Script("etcd", runnertest.Script{Hang: tc.hang})
			if tc.during != nil {
				e.rec.OnStart = func(task runner.Task) {
					if task.Component == "etcd" {
						tc.during(t, e, cancel)
					}
				}
			}
			st, err := e.run(ctx)

			assert.Equal(t, tc.wantRan, e.ran(), "attempts run")
			if tc.wantPhase == "" {
				assert.Nil(t, st, "status")
			} else if assert.NotNil(t, st, "status") {
				assert.Equal(t, tc.wantPhase, st.Phase, "status phase")
			}
			if len(tc.wantErr) == 0 {
				assert.NoError(t, err)
			}
			for _, want := range tc.wantErr {
				assert.ErrorIs(t, err, want)
			}
			if slices.Contains(tc.wantErr, state.ErrFenced) && st != nil {
				assert.Equal(t, record.CodeCheckpointFailed, st.Code, "a fenced checkpoint's code")
			}

			saved, lerr := e.mem.Load(context.Background())
			require.NoError(t, lerr)
			if tc.wantSaved == "" {
				assert.Nil(t, saved, "saved status")
			} else if assert.NotNil(t, saved, "saved status") {
				assert.Equal(t, tc.wantSaved, saved.Phase, "saved phase")
			}
			_, releases := e.lock.last()
			assert.Equal(t, tc.wantReleases, releases, "Release calls")
			next, aerr := e.mem.Acquire(context.Background(), "next", runTTL)
			if tc.wantHolder == "" {
				assert.NoError(t, aerr, "the lock is free after Run")
				assert.NotZero(t, next.Token)
			} else {
				var locked *state.LockedError
				if assert.ErrorAs(t, aerr, &locked, "the lock is held after Run") {
					assert.Equal(t, tc.wantHolder, locked.Holder, "holder after Run")
				}
			}
			if tc.wantLog == "" {
				assert.NotContains(t, e.log.String(), "releasing the lock failed", "Run's log")
			} else {
				assert.Contains(t, e.log.String(), tc.wantLog, "Run's log")
			}
		})
	}
}

// A run that lasts longer than its lease's TTL keeps the lock: the keeper
// refreshes the lease every third of the TTL, so the run's writes after
// the first lease's expiry are taken, and the lock is released at the
// end.
func TestRunRefreshesLease(t *testing.T) {
	e := newRunEnv()
	e.rec.OnStart = func(task runner.Task) {
		if task.Component != "etcd" {
			return
		}
		for i := range 5 {
			// As in TestKeeperRefreshes: after each refresh, the keeper
			// has set its next two timers once 3 (then 4) are pending.
			e.clock.Advance(runTTL / 3)
			<-e.lock.refreshed
			require.True(t, e.clock.WaitForTimers(min(3+i, 4), wait), "keeper set no timers after refresh %d", i+1)
		}
	}
	var first, last state.Lease
	st, err := e.run(t.Context(), state.WithSession(func(ctx context.Context, s *state.Session) (*record.Status, error) {
		first = s.Lease()
		st, err := s.Execute(ctx, s.Prev)
		last = s.Lease()
		return st, err
	}))
	require.NoError(t, err)
	assert.Equal(t, record.Succeeded, st.Phase)
	assert.Equal(t, []string{"etcd 1", "control-plane 1"}, e.ran())
	assert.Equal(t, first.Token, last.Token, "a refresh keeps the token")
	assert.Equal(t, first.Expires.Add(5*runTTL/3), last.Expires, "the lease's expiry after five refreshes, a third of the TTL apart")
	assert.True(t, e.clock.Now().After(first.Expires), "the run outlasted its first lease")
	saved, err := e.mem.Load(t.Context())
	require.NoError(t, err)
	assert.Equal(t, record.Succeeded, saved.Phase, "saved after the first lease's expiry")
	_, releases := e.lock.last()
	assert.Equal(t, 1, releases, "Release calls")
}

// WithSession sees the loaded status and decides what runs: here it
// starts over instead of resuming (Prev is the crashed run's), and
// records the outcome under the lease before the lock is released.
// WithCheckpoints' wrapper sees every checkpoint, each a commit of what
// changed.
func TestRunSession(t *testing.T) {
	e := newRunEnv()
	crashed(t, e)
	var prevPhase record.Phase
	var checkpoints, changes int
	st, err := e.run(t.Context(),
		state.WithCheckpoints(func(cp runner.Checkpointer) runner.Checkpointer {
			return countingCheckpointer{cp: cp.(runner.ChangeCheckpointer), n: &checkpoints, changes: &changes}
		}),
		state.WithSession(func(ctx context.Context, s *state.Session) (*record.Status, error) {
			prevPhase = s.Prev.Phase
			st, err := s.Execute(ctx, nil)
			if err == nil {
				st.Message = "recorded by the session"
				err = s.Store.Save(ctx, s.Lease().Token, st)
			}
			return st, err
		}))
	require.NoError(t, err)
	assert.Equal(t, record.Running, prevPhase, "the phase of the status the session was given")
	assert.Equal(t, []string{"etcd 1", "control-plane 1"}, e.ran(), "started over: everything ran")
	assert.Equal(t, checkpoints, changes, "every checkpoint went through CheckpointChanges")
	assert.NotZero(t, checkpoints)
	saved, err := e.mem.Load(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "recorded by the session", saved.Message)
	assert.Equal(t, record.Succeeded, st.Phase)
}

// countingCheckpointer counts the checkpoints it passes on.
type countingCheckpointer struct {
	cp         runner.ChangeCheckpointer
	n, changes *int
}

func (c countingCheckpointer) Checkpoint(ctx context.Context, s *record.Status) error {
	*c.n++
	return c.cp.Checkpoint(ctx, s)
}

func (c countingCheckpointer) CheckpointChanges(ctx context.Context, s *record.Status, changed []record.Ref) error {
	*c.n++
	*c.changes++
	return c.cp.CheckpointChanges(ctx, s, changed)
}

// Run refuses nil arguments, saying which.
func TestRunNil(t *testing.T) {
	mem := state.NewMemory()
	_, err := state.Run(t.Context(), mem, mem, nil, examplePlan())
	assert.ErrorContains(t, err, "state: run: the store, the lock, the executor and the plan must not be nil")
	_, err = state.Approve(t.Context(), nil, mem, "v1.1", "alice", epoch)
	assert.ErrorContains(t, err, "state: approve v1.1: the store and the lock must not be nil")
}

// Approve records an approval under the lock, and refuses what it cannot
// approve, saving nothing.
func TestApprove(t *testing.T) {
	gated := func(t *testing.T, e *runEnv) {
		_, err := state.Run(t.Context(), e.mem, e.lock, runner.New(e.rec, runner.WithGates("v1.1")), examplePlan(), state.WithClock(e.clock))
		require.ErrorIs(t, err, runner.ErrWaitingForApproval)
	}
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, e *runEnv)
		step    string
		wantErr error
	}{
		{"a waiting step", gated, "v1.1", nil},
		{"no status", nil, "v1.1", state.ErrNoStatus},
		{"a step that does not wait", gated, "v1.0", record.ErrNotWaiting},
		{"while another holder holds the lock", func(t *testing.T, e *runEnv) {
			gated(t, e)
			_, err := e.mem.Acquire(t.Context(), "other", runTTL)
			require.NoError(t, err)
		}, "v1.1", state.ErrLocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newRunEnv()
			if tc.setup != nil {
				tc.setup(t, e)
			}
			before, err := e.mem.Load(t.Context())
			require.NoError(t, err)
			at := epoch.Add(time.Hour)
			st, err := state.Approve(t.Context(), e.mem, e.lock, tc.step, "alice", at, state.WithClock(e.clock), state.WithHolder("approver"))
			saved, lerr := e.mem.Load(t.Context())
			require.NoError(t, lerr)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
				assert.Nil(t, st)
				assert.Equal(t, before, saved, "nothing saved")
				return
			}
			require.NoError(t, err)
			want := []record.Approval{{Step: tc.step, By: "alice", At: at}}
			assert.Equal(t, want, st.Approvals, "the status returned")
			assert.Equal(t, want, saved.Approvals, "the status saved")
			_, err = e.mem.Acquire(t.Context(), "next", runTTL)
			assert.NoError(t, err, "the lock is free after Approve")
		})
	}
}
