package runner_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// rollbackWait bounds every wait of these tests for something the
// executor should do at once: past it the test fails rather than hangs.
const rollbackWait = 10 * time.Second

// A hop whose components all succeed but whose required post-check fails
// is rolled back like a hop with a failed component: every component,
// dependents before their dependencies; the hop and the run end
// RolledBack, and Execute's error names the check.
func TestRollbackAfterPostCheckFails(t *testing.T) {
	errNotReady := errors.New("not ready")
	tests := []struct {
		name   string
		policy runner.FailurePolicy
		rule   bool // the hop's rule says onFailure: rollback
	}{
		{"Rollback policy", runner.Rollback, false},
		{"RollbackRun policy", runner.RollbackRun, false},
		{"rule onFailure rollback", runner.ContinueIndependent, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := graphOf(t, c("a"), c("b", "a"), c("c", "a"), c("d", "b", "c"))
			p := planOf(hop{g: g, post: []release.Check{{Name: "ready", Required: true}}})
			if tt.rule {
				p.Hops[0].Rule.OnFailure = release.OnFailureRollback
			}
			u := newUndoer()
			var checked []string // what had run when the check ran
			check := func(context.Context, runner.CheckTask) error {
				u.mu.Lock()
				defer u.mu.Unlock()
				for name, n := range u.ran {
					if n > 0 {
						checked = append(checked, name)
					}
				}
				return errNotReady
			}
			st, err := runner.New(u, runner.WithFailurePolicy(tt.policy), runner.WithCheck("ready", check)).
				Execute(context.Background(), p, nil)

			require.ErrorIs(t, err, runner.ErrRunFailed)
			require.ErrorIs(t, err, errNotReady)
			assert.NotErrorIs(t, err, runner.ErrRollbackFailed, "the rollback finished")
			var ce *runner.CheckError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, runner.CheckError{Hop: 0, Check: "ready", Stage: "post", Err: errNotReady}, *ce)
			assert.Contains(t, err.Error(), "runner: run failed: hop 1: required post-check ready failed: not ready", "the package is named once")

			slices.Sort(checked)
			assert.Equal(t, []string{"a", "b", "c", "d"}, checked, "components that had run when the post-check ran")
			assert.Equal(t, record.RolledBack, st.Phase, "Status.Phase (message %q)", st.Message)
			assert.Equal(t, record.RolledBack, st.Hops[0].Phase, "hop 1 phase (message %q)", st.Hops[0].Message)
			assert.Equal(t, "rolled back: a@v1.0.0, b@v1.0.0, c@v1.0.0, d@v1.0.0", st.Hops[0].Message, "hop 1 message")
			assert.Equal(t, []record.CheckStatus{{Name: "ready", Stage: "post", Required: true, Phase: record.Failed, Error: "not ready"}}, st.Hops[0].Checks)
			require.NotNil(t, st.LastFailure)
			assert.Equal(t, "ready", st.LastFailure.Check, "LastFailure.Check")

			want := map[string]record.Phase{"a": record.RolledBack, "b": record.RolledBack, "c": record.RolledBack, "d": record.RolledBack}
			assert.Equal(t, want, phases(st, 0), "phases")
			assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1}, u.undone, "rollbacks that returned nil")
			// Dependents first: every edge of the graph, reversed.
			for i := range g.Len() {
				for _, d := range g.Dependents(i) {
					dep, dependent := g.Node(i).Name, g.Node(d).Name
					assert.Less(t, u.end[dependent], u.start[dep], "rollback of %s ended at %d, that of %s (which it depends on) started at %d: want the dependent first",
						dependent, u.end[dependent], dep, u.start[dep])
				}
			}
		})
	}
}

// rendezvous is a Runner and Rollbacker: d's upgrade fails once b and c
// have succeeded; b's and c's rollbacks each wait until the other's has
// started (up to rollbackWait, then fail), and a's records when it started.
type rendezvous struct {
	bcRan    sync.WaitGroup // b and c upgraded
	started  map[string]chan struct{}
	mu       sync.Mutex
	seq      int
	begin    map[string]int // rollback calls, by seq
	finish   map[string]int
	waitedOK map[string]bool // the other's rollback had started
}

func newRendezvous() *rendezvous {
	r := &rendezvous{started: map[string]chan struct{}{"b": make(chan struct{}), "c": make(chan struct{})},
		begin: map[string]int{}, finish: map[string]int{}, waitedOK: map[string]bool{}}
	r.bcRan.Add(2)
	return r
}

func (r *rendezvous) Run(_ context.Context, t runner.Task) error {
	switch t.Component {
	case "b", "c":
		r.bcRan.Done()
	case "d":
		done := make(chan struct{})
		go func() { r.bcRan.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(rollbackWait):
			return runner.Permanent(errors.New("d: b and c did not run"))
		}
		return runner.Permanent(errors.New("d: scripted failure"))
	}
	return nil
}

func (r *rendezvous) Rollback(_ context.Context, t runner.Task) error {
	r.mu.Lock()
	r.seq++
	r.begin[t.Component] = r.seq
	r.mu.Unlock()
	var err error
	if other := map[string]string{"b": "c", "c": "b"}[t.Component]; other != "" {
		close(r.started[t.Component])
		select {
		case <-r.started[other]:
		case <-time.After(rollbackWait):
			err = fmt.Errorf("%s: the rollback of %s did not start within %v while this one ran", t.Component, other, rollbackWait)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	r.finish[t.Component] = r.seq
	if t.Component == "b" || t.Component == "c" {
		r.waitedOK[t.Component] = err == nil
	}
	return err
}

// The rollback runs in parallel where the reversed graph allows: b and c,
// which both depend on a, are rolled back at the same time (each waits
// for the other's to start), and a only after both.
func TestRollbackRunsInParallel(t *testing.T) {
	for _, maxParallel := range []int{2, 4} {
		t.Run(fmt.Sprintf("MaxParallel %d", maxParallel), func(t *testing.T) {
			r := newRendezvous()
			p := plan1(t, c("a"), c("b", "a"), c("c", "a"), c("d"))
			st, err := runner.New(r, runner.WithFailurePolicy(runner.Rollback), runner.WithMaxParallel(maxParallel)).
				Execute(context.Background(), p, nil)

			require.ErrorIs(t, err, runner.ErrRunFailed)
			assert.NotErrorIs(t, err, runner.ErrRollbackFailed, "the rollback finished")
			assert.Equal(t, record.RolledBack, st.Phase, "Status.Phase (message %q)", st.Message)
			want := map[string]record.Phase{"a": record.RolledBack, "b": record.RolledBack, "c": record.RolledBack, "d": record.RolledBack}
			assert.Equal(t, want, phases(st, 0), "phases")
			r.mu.Lock()
			defer r.mu.Unlock()
			assert.Equal(t, map[string]bool{"b": true, "c": true}, r.waitedOK, "each of b's and c's rollbacks saw the other's start while it ran")
			for _, dependent := range []string{"b", "c"} {
				assert.Less(t, r.finish[dependent], r.begin["a"], "rollback of %s ended at %d, that of a started at %d: want a after it", dependent, r.finish[dependent], r.begin["a"])
			}
		})
	}
}
