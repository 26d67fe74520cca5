package components_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// node is a live system's one component: NeedsUpgrade reports the
// upgrade needed until Upgrade ran, as a real handler would.
type node struct {
	mu       sync.Mutex
	upgraded bool
	log      []string
	// failPost fails the first n PostUpgrade calls.
	failPost int
}

func (n *node) note(s string) {
	n.mu.Lock()
	n.log = append(n.log, s)
	n.mu.Unlock()
}

func (n *node) calls() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.log...)
}

func (n *node) NeedsUpgrade(context.Context, runner.Task) (bool, error) {
	n.note(components.StepNeedsUpgrade)
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.upgraded, nil
}

func (n *node) PreUpgrade(context.Context, runner.Task) error {
	n.note(components.StepPreUpgrade)
	return nil
}

func (n *node) Run(context.Context, runner.Task) error {
	n.note(components.StepUpgrade)
	n.mu.Lock()
	n.upgraded = true
	n.mu.Unlock()
	return nil
}

func (n *node) PostUpgrade(context.Context, runner.Task) error {
	n.note(components.StepPostUpgrade)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.failPost > 0 {
		n.failPost--
		return errors.New("uncordon: node not ready")
	}
	return nil
}

// inlinePlan is a one-hop plan of one inline component "kubelet" run by
// handler "node", with the given retries.
func inlinePlan(t *testing.T, attempts int) *runner.Plan {
	t.Helper()
	v1, v2 := release.MustParseVersion("v1.0"), release.MustParseVersion("v2.0")
	to := &release.ComponentVersion{Name: "kubelet", Version: v2, Type: release.TypeInline, Handler: "node",
		Retries: &release.Retries{Attempts: attempts}}
	from := &release.ComponentVersion{Name: "kubelet", Version: v1, Type: release.TypeInline, Handler: "node"}
	g, err := dag.New([]dag.Node{{Name: "kubelet", From: from, To: to}})
	require.NoError(t, err)
	h := path.Hop{From: v1, To: v2}
	return &runner.Plan{Route: &path.Route{From: v1, To: v2, Hops: []path.Hop{h}}, Hops: []*runner.HopPlan{{Hop: h, Graph: g}}}
}

func routerOf(n *node) *components.Router {
	return components.NewRouter().Register(release.TypeInline, components.NewInline().Register("node", n))
}

// The defect: a failed PostUpgrade was retried from NeedsUpgrade, which
// saw the system at its target and turned the attempt into Skip; the
// uncordon never ran again and the run succeeded. The retry continues at
// PostUpgrade instead.
func TestPostUpgradeFailureRetriedAtPostUpgrade(t *testing.T) {
	n := &node{failPost: 1}
	st, err := runner.New(routerOf(n)).Execute(context.Background(), inlinePlan(t, 2), nil)
	require.NoError(t, err)
	cs, _ := st.Component(0, "kubelet")
	assert.Equal(t, record.Succeeded, cs.Phase, "kubelet phase (not Skipped)")
	assert.Equal(t, 2, cs.Attempts, "attempts")
	assert.Equal(t, components.StepPostUpgrade, cs.Step, "recorded step")
	assert.Equal(t, []string{"needs-upgrade", "pre-upgrade", "upgrade", "post-upgrade", "post-upgrade"}, n.calls(), "phases run")
}

// The same defect on a resumed run: the run failed in PostUpgrade (no
// retries left); Execute with its status runs PostUpgrade again.
func TestPostUpgradeFailureResumedAtPostUpgrade(t *testing.T) {
	n := &node{failPost: 1}
	p := inlinePlan(t, 1)
	e := runner.New(routerOf(n))
	st1, err := e.Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	cs, _ := st1.Component(0, "kubelet")
	require.Equal(t, record.Failed, cs.Phase)
	require.Equal(t, components.StepPostUpgrade, cs.Step, "the failed step is in the record")

	st2, err := e.Execute(context.Background(), p, st1)
	require.NoError(t, err)
	cs, _ = st2.Component(0, "kubelet")
	assert.Equal(t, record.Succeeded, cs.Phase, "kubelet phase after resume (not Skipped)")
	assert.Equal(t, []string{"needs-upgrade", "pre-upgrade", "upgrade", "post-upgrade", "post-upgrade"}, n.calls(), "phases run")
}

// checkpoints keeps a copy of every checkpointed status.
type checkpoints struct {
	mu  sync.Mutex
	all []*record.Status
}

func (c *checkpoints) Checkpoint(_ context.Context, s *record.Status) error {
	c.mu.Lock()
	c.all = append(c.all, s.DeepCopy())
	c.mu.Unlock()
	return nil
}

func (c *checkpoints) last() *record.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.all[len(c.all)-1]
}

// A crash inside each phase: the status the store holds at that moment,
// resumed by a new executor, continues at that phase; the phases before
// it do not run again (NeedsUpgrade included, once past it).
func TestInlineResumeAtPhase(t *testing.T) {
	for _, crashIn := range []string{"needs-upgrade", "pre-upgrade", "upgrade", "post-upgrade"} {
		t.Run(crashIn, func(t *testing.T) {
			p := inlinePlan(t, 1)
			var cps checkpoints
			var crashed *record.Status
			first := &crashAt{node: &node{}, at: crashIn, snap: func() { crashed = cps.last() }}
			router := components.NewRouter().Register(release.TypeInline, components.NewInline().Register("node", first))
			_, err := runner.New(router, runner.WithCheckpointer(&cps)).Execute(context.Background(), p, nil)
			require.NoError(t, err)
			require.NotNil(t, crashed, "crash point reached")
			cs, _ := crashed.Component(0, "kubelet")
			require.Equal(t, crashIn, cs.Step, "the store names the phase in progress")

			// The new process sees the live system as the crash left it.
			second := &node{upgraded: crashIn == "post-upgrade"}
			st, err := runner.New(routerOf(second)).Execute(context.Background(), p, crashed)
			require.NoError(t, err)
			cs, _ = st.Component(0, "kubelet")
			assert.Equal(t, record.Succeeded, cs.Phase, "phase after resume")
			all := []string{"needs-upgrade", "pre-upgrade", "upgrade", "post-upgrade"}
			for i, s := range all {
				if s == crashIn {
					assert.Equal(t, all[i:], second.calls(), "phases run after resuming in %s", crashIn)
				}
			}
		})
	}
}

// crashAt is node with a snapshot of the store taken as phase at starts.
type crashAt struct {
	*node
	at   string
	snap func()
}

func (c *crashAt) NeedsUpgrade(ctx context.Context, t runner.Task) (bool, error) {
	c.hit(components.StepNeedsUpgrade)
	return c.node.NeedsUpgrade(ctx, t)
}
func (c *crashAt) PreUpgrade(ctx context.Context, t runner.Task) error {
	c.hit(components.StepPreUpgrade)
	return c.node.PreUpgrade(ctx, t)
}
func (c *crashAt) Run(ctx context.Context, t runner.Task) error {
	c.hit(components.StepUpgrade)
	return c.node.Run(ctx, t)
}
func (c *crashAt) PostUpgrade(ctx context.Context, t runner.Task) error {
	c.hit(components.StepPostUpgrade)
	return c.node.PostUpgrade(ctx, t)
}

func (c *crashAt) hit(step string) {
	if step == c.at {
		c.snap()
	}
}

// declaredPlan is a one-hop plan of component "api" with declared
// phases drain, upgrade (a command), test and rollout.
func declaredPlan(t *testing.T) *runner.Plan {
	t.Helper()
	p := inlinePlan(t, 1)
	to := p.Hops[0].Graph.Node(0).To
	to.Handler = "api"
	to.Phases = []release.LifecyclePhase{
		{Name: "drain", Handler: "drain"},
		{Name: "upgrade", Command: &release.Command{Args: []string{"true"}}},
		{Name: "test", Handler: "test"},
		{Name: "rollout", Handler: "rollout"},
	}
	return p
}

// stepLog is a Steps handler that logs each step and calls at(step)
// first.
func stepLog(log *[]string, mu *sync.Mutex, at func(string)) components.Steps {
	s := components.Steps{}
	for _, name := range []string{"drain", "test", "rollout"} {
		s[name] = func(context.Context, runner.Task) error {
			at(name)
			mu.Lock()
			*log = append(*log, name)
			mu.Unlock()
			return nil
		}
	}
	return s
}

// Declared phases run in order; a crash in each of them resumes at that
// phase.
func TestDeclaredPhasesResumeAtPhase(t *testing.T) {
	for _, crashIn := range []string{"drain", "test", "rollout"} {
		t.Run(crashIn, func(t *testing.T) {
			p := declaredPlan(t)
			var (
				mu      sync.Mutex
				log     []string
				cps     checkpoints
				crashed *record.Status
			)
			router := func(at func(string)) *components.Router {
				return components.NewRouter().
					Register(release.TypeInline, components.NewInline().Register("api", stepLog(&log, &mu, at))).
					Register(release.TypeExec, components.NewExec())
			}
			first := router(func(s string) {
				if s == crashIn {
					crashed = cps.last()
				}
			})
			_, err := runner.New(first, runner.WithCheckpointer(&cps)).Execute(context.Background(), p, nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"drain", "test", "rollout"}, log)
			require.NotNil(t, crashed)
			cs, _ := crashed.Component(0, "kubelet")
			require.Equal(t, crashIn, cs.Step)

			log = nil
			st, err := runner.New(router(func(string) {})).Execute(context.Background(), p, crashed)
			require.NoError(t, err)
			assert.Equal(t, record.Succeeded, st.Phase)
			all := []string{"drain", "test", "rollout"}
			for i, s := range all {
				if s == crashIn {
					assert.Equal(t, all[i:], log, "phases run after resuming in %s", crashIn)
				}
			}
		})
	}
}

// The plan refuses declared phases nothing can run, naming them.
func TestDeclaredPhasesValidate(t *testing.T) {
	cv := &release.ComponentVersion{Name: "api", Version: release.MustParseVersion("v2.0"), Type: release.TypeInline, Handler: "api",
		Lifecycle: release.Lifecycle{Phases: []release.LifecyclePhase{
			{Name: "drain", Handler: "drain"}, {Name: "missing", Handler: "nope"},
			{Name: "cmd", Command: &release.Command{Args: []string{"x"}}},
			{Name: "objs", Manifests: []release.Manifest{{Template: "kind: ConfigMap"}}},
		}}}
	r := components.NewRouter().Register(release.TypeInline, components.NewInline().Register("api", components.Steps{"drain": nil}))
	err := r.Validate(cv)
	require.Error(t, err)
	for _, want := range []string{"phase missing: handler api has no step nope", "phase cmd: ", `phase objs: components: no runner registered for component type "manifest"`} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "phase drain")
}
