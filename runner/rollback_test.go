package runner_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// undoer runs and rolls back components, recording both, failing the
// forward run of the components in fail and the rollback of those in
// failRollback.
type undoer struct {
	mu           sync.Mutex
	seq          int
	ran          map[string]int    // forward runs
	undone       map[string]int    // rollbacks that returned nil
	start, end   map[string]int    // of the last rollback call, by seq
	fail         map[string]bool   // forward run fails
	failRollback map[string]bool   // rollback fails
	onRollback   func(name string) // called as a rollback starts
}

func newUndoer(fail ...string) *undoer {
	u := &undoer{ran: map[string]int{}, undone: map[string]int{}, start: map[string]int{}, end: map[string]int{},
		fail: map[string]bool{}, failRollback: map[string]bool{}}
	for _, f := range fail {
		u.fail[f] = true
	}
	return u
}

func (u *undoer) Run(_ context.Context, t runner.Task) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ran[t.Component]++
	if u.fail[t.Component] {
		return runner.Permanent(fmt.Errorf("%s: scripted failure", t.Component))
	}
	return nil
}

func (u *undoer) Rollback(_ context.Context, t runner.Task) error {
	if u.onRollback != nil {
		u.onRollback(t.Component)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.seq++
	u.start[t.Component] = u.seq
	u.seq++
	u.end[t.Component] = u.seq
	if u.failRollback[t.Component] {
		return errors.New("rollback: scripted failure")
	}
	u.undone[t.Component]++
	return nil
}

func irreversible(why string) func(*release.ComponentVersion) {
	return func(cv *release.ComponentVersion) { cv.Irreversible = why }
}

// A failed hop is rolled back, dependents first; what never ran is not.
func TestRollbackHop(t *testing.T) {
	p := plan1(t, c("a"), c("b", "a"), c("c", "a"), c("d", "b", "c"), c("e"))
	u := newUndoer("d")
	st, err := runner.New(u, runner.WithFailurePolicy(runner.Rollback)).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	assert.NotErrorIs(t, err, runner.ErrRollbackFailed)
	assert.Equal(t, record.RolledBack, st.Phase, "run phase")
	assert.Equal(t, record.RolledBack, st.Hops[0].Phase, "hop phase")
	assert.Equal(t, map[string]record.Phase{"a": record.RolledBack, "b": record.RolledBack, "c": record.RolledBack, "d": record.RolledBack, "e": record.RolledBack}, phases(st, 0))
	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1}, u.undone)
	for _, dep := range [][2]string{{"d", "b"}, {"d", "c"}, {"b", "a"}, {"c", "a"}} {
		assert.Less(t, u.end[dep[0]], u.start[dep[1]], "%s rolled back before %s", dep[0], dep[1])
	}
	assert.Equal(t, "rolled back to v1.0.0", compStatus(t, st, 0, "a").Reason)

	_, err = runner.New(u).Execute(context.Background(), p, st)
	assert.ErrorIs(t, err, runner.ErrRolledBack, "a rolled-back status is final")
}

// An irreversible component stops the rollback there: it and what it
// depends on stay at the target, the rest rolls back, and the status
// says who is where.
func TestRollbackIrreversible(t *testing.T) {
	p := plan1(t, c("etcd"), c("migrate", "etcd").with(irreversible("etcd data migration")), c("api", "migrate"), c("ui"), c("bad", "api"))
	u := newUndoer("bad")
	st, err := runner.New(u, runner.WithFailurePolicy(runner.Rollback)).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRollbackFailed)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, record.RollbackFailed, st.Phase)
	assert.Equal(t, map[string]record.Phase{"etcd": record.Succeeded, "migrate": record.RollbackFailed, "api": record.RolledBack, "ui": record.RolledBack, "bad": record.RolledBack}, phases(st, 0))
	assert.Equal(t, record.CodeIrreversible, compStatus(t, st, 0, "migrate").Code)
	assert.Equal(t, record.CodeRollbackBlocked, compStatus(t, st, 0, "etcd").Code)
	assert.Equal(t, "between versions: rolled back: api@v1.0.0, bad@v1.0.0, ui@v1.0.0; at the target: etcd@v1.1.0 (not rolled back: migrate, which depends on it, stays at v1.1.0), migrate@v1.1.0 (irreversible: etcd data migration)", st.Hops[0].Message)
	assert.Zero(t, u.undone["etcd"]+u.undone["migrate"], "etcd and migrate not rolled back")
}

// Completed hops stay completed by default; RollbackRun rolls them back
// too, last first.
func TestRollbackRun(t *testing.T) {
	p := planOf(hop{g: graphOf(t, c("a"))}, hop{g: graphOf(t, c("a"), c("b", "a"))})
	u := newUndoer("b")
	st, err := runner.New(u, runner.WithFailurePolicy(runner.Rollback)).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, []record.Phase{record.Succeeded, record.RolledBack}, []record.Phase{st.Hops[0].Phase, st.Hops[1].Phase})

	u = newUndoer("b")
	st, err = runner.New(u, runner.WithFailurePolicy(runner.RollbackRun)).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, record.RolledBack, st.Phase)
	assert.Equal(t, []record.Phase{record.RolledBack, record.RolledBack}, []record.Phase{st.Hops[0].Phase, st.Hops[1].Phase})
	assert.Equal(t, map[string]int{"a": 2, "b": 1}, u.undone, "a rolled back on both hops")
}

// A rule's onFailure: rollback rolls its hop back whatever the run's
// policy.
func TestRollbackPerRule(t *testing.T) {
	p := plan1(t, c("a"), c("b", "a"))
	p.Hops[0].Rule.OnFailure = release.OnFailureRollback
	u := newUndoer("b")
	st, _ := runner.New(u).Execute(context.Background(), p, nil)
	assert.Equal(t, record.RolledBack, st.Phase)
}

// The plan refuses Rollback when a runner cannot roll back, naming the
// component; an irreversible component needs no ability.
func TestRollbackRefusedAtPlanTime(t *testing.T) {
	p := plan1(t, c("a"), c("m").with(irreversible("migration")))
	plain := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
	_, err := runner.New(plain, runner.WithFailurePolicy(runner.Rollback)).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrInvalidPlan)
	require.ErrorIs(t, err, runner.ErrCannotRollBack)
	assert.Contains(t, err.Error(), "component a: runner: cannot roll back: the runner (runner.RunnerFunc) has no Rollback method")
	assert.NotContains(t, err.Error(), "component m")
	_, err = runner.New(plain).Execute(context.Background(), p, nil)
	assert.NoError(t, err, "without Rollback nothing is refused")
}

// A crash during the rollback: the run resumed from the store finishes
// the rollback and never rolls back again what was rolled back.
func TestRollbackResumesAfterCrash(t *testing.T) {
	p := plan1(t, c("a"), c("b", "a"), c("c", "b"), c("x"))
	var cps snapshots
	var crashed *record.Status
	u := newUndoer("c")
	u.onRollback = func(name string) {
		if name == "b" {
			crashed = cps.last()
		}
	}
	_, err := runner.New(u, runner.WithFailurePolicy(runner.Rollback), runner.WithCheckpointer(&cps), runner.WithMaxParallel(1)).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	require.NotNil(t, crashed)
	require.Equal(t, record.RollingBack, crashed.Hops[0].Phase)
	require.Equal(t, record.RollingBack, compStatus(t, crashed, 0, "b").Phase)
	require.Equal(t, record.RolledBack, compStatus(t, crashed, 0, "c").Phase)

	second := newUndoer()
	st, err := runner.New(second, runner.WithFailurePolicy(runner.Rollback)).Execute(context.Background(), p, crashed)
	require.ErrorIs(t, err, runner.ErrRunFailed, "the run did not upgrade")
	require.NotErrorIs(t, err, runner.ErrRollbackFailed)
	assert.Equal(t, record.RolledBack, st.Phase)
	assert.Zero(t, second.ran["a"]+second.ran["b"]+second.ran["c"]+second.ran["x"], "nothing runs forward")
	assert.Zero(t, second.undone["c"], "c was rolled back before the crash")
	assert.Equal(t, 1, second.undone["b"], "b's interrupted rollback runs again")
	assert.Equal(t, 1, second.undone["a"])
}

// randomRollbackPlan is a one-hop plan of 2 to 1+maxN components c00,
// c01, ... on a random DAG (each depends on an earlier one with chance
// 1/3), a sixth of them irreversible; names in order.
func randomRollbackPlan(t *testing.T, rnd *rand.Rand, maxN int) ([]string, *runner.Plan) {
	n := 2 + rnd.IntN(maxN)
	var nodes []comp
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("c%02d", i)
		var deps []string
		for j := range i {
			if rnd.IntN(3) == 0 {
				deps = append(deps, names[j])
			}
		}
		nd := c(names[i], deps...)
		if rnd.IntN(6) == 0 {
			nd = nd.with(irreversible("one way"))
		}
		nodes = append(nodes, nd)
	}
	return names, plan1(t, nodes...)
}

// Property: on random DAGs with random failures and irreversible
// components, the rollback order is valid for the reversed graph
// restricted to what ran, and every component that ran is rolled back
// exactly once, or is irreversible, or is blocked behind a component that
// stays (named in its reason).
func TestRollbackProperty(t *testing.T) {
	for seed := range uint64(200) {
		rnd := rand.New(rand.NewPCG(seed, 17))
		names, p := randomRollbackPlan(t, rnd, 14)
		n := len(names)
		g := p.Hops[0].Graph
		u := newUndoer(names[rnd.IntN(n)])
		for _, name := range names {
			if rnd.IntN(10) == 0 {
				u.failRollback[name] = true
			}
		}
		policy := runner.Rollback
		if rnd.IntN(2) == 0 {
			policy = runner.RollbackRun
		}
		st, err := runner.New(u, runner.WithFailurePolicy(policy), runner.WithMaxParallel(rnd.IntN(4))).Execute(context.Background(), p, nil)
		require.ErrorIs(t, err, runner.ErrRunFailed, "seed %d", seed)
		require.Contains(t, []record.Phase{record.RolledBack, record.RollbackFailed}, st.Phase, "seed %d", seed)
		for i := range n {
			name := names[i]
			cs := compStatus(t, st, 0, name)
			ran := u.ran[name] > 0
			irr := g.Node(i).To.Irreversible != ""
			switch {
			case !ran:
				assert.Zero(t, u.start[name], "seed %d: %s never ran and is not rolled back", seed, name)
			case irr:
				// Named irreversible, or blocked first by a dependent that stays.
				assert.Contains(t, []record.Code{record.CodeIrreversible, record.CodeRollbackBlocked}, cs.Code, "seed %d: %s is irreversible", seed, name)
				assert.Zero(t, u.start[name], "seed %d: irreversible %s is not rolled back", seed, name)
			case cs.Code == record.CodeRollbackBlocked:
				assert.Zero(t, u.start[name], "seed %d: blocked %s is not rolled back", seed, name)
				stays := slices.ContainsFunc(g.Descendants(i), func(d int) bool {
					dc := compStatus(t, st, 0, names[d])
					return dc.Phase == record.RollbackFailed
				})
				assert.True(t, stays, "seed %d: %s is blocked by a dependent that stays (%s)", seed, name, cs.Reason)
			case u.failRollback[name]:
				assert.Equal(t, record.RollbackFailed, cs.Phase, "seed %d: %s", seed, name)
			default:
				assert.Equal(t, 1, u.undone[name], "seed %d: %s rolled back exactly once", seed, name)
				assert.Equal(t, record.RolledBack, cs.Phase, "seed %d: %s", seed, name)
				for _, d := range g.Dependents(i) {
					if u.start[names[d]] > 0 {
						assert.Less(t, u.end[names[d]], u.start[name], "seed %d: dependent %s rolled back before %s", seed, names[d], name)
					}
				}
			}
		}
	}
}

// A component held at a phase's gate when a sibling fails was started: it
// is rolled back too, and the rolled-back run waits for no approval.
func TestRollbackHeldComponent(t *testing.T) {
	p := plan1(t, c("api").with(lifecycle("rollout", "drain", "rollout")), c("bad"))
	r := &heldUndoer{undoer: newUndoer("bad"), held: make(chan struct{})}
	st, err := runner.New(r, runner.WithFailurePolicy(runner.Rollback)).Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, record.RolledBack, st.Phase)
	assert.Equal(t, record.RolledBack, compStatus(t, st, 0, "api").Phase)
	assert.Empty(t, st.Waiting)
	assert.Equal(t, 1, r.undone["api"])
}

// heldUndoer enters the declared phases, then runs as undoer does; bad
// runs once api is held at its gate.
type heldUndoer struct {
	*undoer
	held chan struct{}
}

func (h *heldUndoer) Run(ctx context.Context, t runner.Task) error {
	if t.Component == "bad" {
		<-h.held
	}
	for _, p := range t.To.Phases {
		if err := t.Enter(ctx, p.Name); err != nil {
			if errors.Is(err, runner.ErrWaitingForApproval) {
				close(h.held)
			}
			return err
		}
	}
	return h.undoer.Run(ctx, t)
}

// hopUndoer is undoer keyed by hop and component: a component runs in
// several hops of a plan.
type hopUndoer struct {
	mu           sync.Mutex
	seq          int
	ran, undone  map[string]int
	start, end   map[string]int
	fail         string // "hop/name" whose forward run fails
	failRollback map[string]bool
}

func hopKey(h int, name string) string { return fmt.Sprintf("%d/%s", h, name) }

func (u *hopUndoer) Run(_ context.Context, t runner.Task) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	k := hopKey(t.HopIndex, t.Component)
	u.ran[k]++
	if k == u.fail {
		return runner.Permanent(fmt.Errorf("%s: scripted failure", k))
	}
	return nil
}

func (u *hopUndoer) Rollback(_ context.Context, t runner.Task) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	k := hopKey(t.HopIndex, t.Component)
	u.seq++
	u.start[k] = u.seq
	u.seq++
	u.end[k] = u.seq
	if u.failRollback[k] {
		return errors.New("rollback: scripted failure")
	}
	u.undone[k]++
	return nil
}

// Property, across hops: on plans of 2 to 4 hops of random DAGs, a
// component failing in a random hop f, with random irreversible
// components and failing rollbacks: with Rollback only hop f is rolled
// back (completed hops stay completed); with RollbackRun the hops before
// it are too, last first, each only once the hop after it is RolledBack,
// and every rollback of a hop ends before any of the hop before it
// starts. Within a hop, the single-hop property holds: dependents first,
// each component that ran rolled back exactly once, or named
// irreversible, blocked or failed. Hops after f never run.
func TestRollbackPropertyHops(t *testing.T) {
	for seed := range uint64(150) {
		rnd := rand.New(rand.NewPCG(seed, 29))
		nh := 2 + rnd.IntN(3)
		var hops []hop
		var names [][]string
		for range nh {
			n := 1 + rnd.IntN(8)
			var nodes []comp
			hn := make([]string, n)
			for i := range n {
				hn[i] = fmt.Sprintf("c%02d", i)
				var deps []string
				for j := range i {
					if rnd.IntN(3) == 0 {
						deps = append(deps, hn[j])
					}
				}
				nd := c(hn[i], deps...)
				if rnd.IntN(8) == 0 {
					nd = nd.with(irreversible("one way"))
				}
				nodes = append(nodes, nd)
			}
			hops = append(hops, hop{g: graphOf(t, nodes...)})
			names = append(names, hn)
		}
		p := planOf(hops...)
		f := rnd.IntN(nh)
		u := &hopUndoer{ran: map[string]int{}, undone: map[string]int{}, start: map[string]int{}, end: map[string]int{},
			fail: hopKey(f, names[f][rnd.IntN(len(names[f]))]), failRollback: map[string]bool{}}
		for h := range nh {
			for _, name := range names[h] {
				if rnd.IntN(12) == 0 {
					u.failRollback[hopKey(h, name)] = true
				}
			}
		}
		policy := runner.Rollback
		if rnd.IntN(2) == 0 {
			policy = runner.RollbackRun
		}
		st, err := runner.New(u, runner.WithFailurePolicy(policy), runner.WithMaxParallel(rnd.IntN(4))).Execute(context.Background(), p, nil)
		require.ErrorIs(t, err, runner.ErrRunFailed, "seed %d", seed)
		msg := fmt.Sprintf("seed %d, %d hops, failing %s, policy %v", seed, nh, u.fail, policy)
		rolledBack := func(h int) bool { return st.Hops[h].Phase == record.RolledBack }
		for h := range nh {
			g := hops[h].g
			// Whether hop h is rolled back at all.
			undo := h == f || (policy == runner.RollbackRun && h < f && rolledBack(h+1) && hopUndoneAfter(h+1, f, rolledBack))
			for i, name := range names[h] {
				k := hopKey(h, name)
				cs := compStatus(t, st, h, name)
				switch {
				case h > f:
					assert.Zero(t, u.ran[k], "%s: %s runs after the failed hop", msg, k)
				case !undo:
					assert.Zero(t, u.start[k], "%s: %s is in a hop that is not rolled back", msg, k)
					if h < f {
						assert.Equal(t, record.Succeeded, cs.Phase, "%s: %s of a completed hop stays", msg, k)
					}
				case u.ran[k] == 0:
					assert.Zero(t, u.start[k], "%s: %s never ran and is not rolled back", msg, k)
				case g.Node(i).To.Irreversible != "":
					assert.Contains(t, []record.Code{record.CodeIrreversible, record.CodeRollbackBlocked}, cs.Code, "%s: %s is irreversible", msg, k)
					assert.Zero(t, u.start[k], "%s: irreversible %s is not rolled back", msg, k)
				case cs.Code == record.CodeRollbackBlocked:
					assert.Zero(t, u.start[k], "%s: blocked %s is not rolled back", msg, k)
				case u.failRollback[k]:
					assert.Equal(t, record.RollbackFailed, cs.Phase, "%s: %s", msg, k)
				default:
					assert.Equal(t, 1, u.undone[k], "%s: %s rolled back exactly once", msg, k)
					assert.Equal(t, record.RolledBack, cs.Phase, "%s: %s", msg, k)
					for _, d := range g.Dependents(i) {
						if dk := hopKey(h, names[h][d]); u.start[dk] > 0 {
							assert.Less(t, u.end[dk], u.start[k], "%s: dependent %s rolled back before %s", msg, dk, k)
						}
					}
				}
				// Hop order: this hop's rollbacks start after every
				// rollback of the later hops ended.
				if u.start[k] > 0 {
					for later := h + 1; later <= f; later++ {
						for _, ln := range names[later] {
							if lk := hopKey(later, ln); u.end[lk] > 0 {
								assert.Less(t, u.end[lk], u.start[k], "%s: %s (hop %d) rolled back before %s", msg, lk, later, k)
							}
						}
					}
				}
			}
		}
	}
}

// hopUndoneAfter reports whether every hop from h to f was rolled back
// (RollbackRun goes on to the hop before only then).
func hopUndoneAfter(h, f int, rolledBack func(int) bool) bool {
	for k := h; k <= f; k++ {
		if !rolledBack(k) {
			return false
		}
	}
	return true
}

// A component held at its gate (or behind one) when its hop fails never
// started: the rollback leaves it Cancelled, not waiting for an approval
// that the final, rolled-back status can never use, whether the rollback
// comes from the policy (whose stop cancels it) or from the hop's rule.
func TestRollbackLeavesNothingWaiting(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy runner.FailurePolicy
		rule   bool // the hop's rule says onFailure: rollback
	}{
		{"Rollback policy", runner.Rollback, false},
		{"RollbackRun policy", runner.RollbackRun, false},
		{"rule onFailure rollback", runner.ContinueIndependent, true},
		{"required pre-check fails", runner.Rollback, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pre := tc.name == "required pre-check fails"
			h := hop{g: graphOf(t, c("x"), c("y"), c("z", "y"))}
			if pre {
				h.pre = []release.Check{{Name: "healthy", Required: true}}
			}
			p := planOf(h)
			if tc.rule {
				p.Hops[0].Rule.OnFailure = release.OnFailureRollback
			}
			u := newUndoer("x")
			opts := []runner.Option{runner.WithFailurePolicy(tc.policy), runner.WithGates("v2.0/y"),
				runner.WithCheck("healthy", func(context.Context, runner.CheckTask) error { return errors.New("not healthy") })}
			st, err := runner.New(u, opts...).Execute(context.Background(), p, nil)
			require.ErrorIs(t, err, runner.ErrRunFailed)
			assert.NotErrorIs(t, err, runner.ErrWaitingForApproval)
			assert.Equal(t, record.RolledBack, st.Phase, st.Message)
			assert.Empty(t, st.Waiting)
			want := map[string]record.Phase{"x": record.RolledBack, "y": record.Cancelled, "z": record.Cancelled}
			if pre {
				want["x"] = record.Cancelled
			}
			assert.Equal(t, want, phases(st, 0))
			for _, name := range []string{"y", "z"} {
				cs := compStatus(t, st, 0, name)
				assert.Equal(t, record.CodeCancelled, cs.Code, name)
				assert.Regexp(t, `^not started: (.*(x|healthy) failed|hop v1\.0 -> v2\.0 was rolled back$)`, cs.Reason, name)
			}
			assert.Zero(t, u.ran["y"]+u.ran["z"]+u.undone["y"]+u.undone["z"], "y and z neither ran nor rolled back")
			assert.Error(t, st.Approve("v2.0/y", "ops", time.Now()), "nothing waits in a rolled-back run")
		})
	}
}
