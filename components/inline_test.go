package components_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// phased implements every phase; each records itself and fails when its
// name is in fail.
type phased struct {
	log   *phaseLog
	need  bool
	fail  map[string]error
	block string // phase that blocks until ctx is done
}

func (p *phased) step(ctx context.Context, name string, t runner.Task) error {
	p.log.add("%s %s", name, t.Component)
	if p.block == name {
		<-ctx.Done()
		return ctx.Err()
	}
	return p.fail[name]
}

func (p *phased) NeedsUpgrade(ctx context.Context, t runner.Task) (bool, error) {
	return p.need, p.step(ctx, "needs-upgrade", t)
}
func (p *phased) PreUpgrade(ctx context.Context, t runner.Task) error {
	return p.step(ctx, "pre-upgrade", t)
}
func (p *phased) Upgrade(ctx context.Context, t runner.Task) error { return p.step(ctx, "upgrade", t) }
func (p *phased) PostUpgrade(ctx context.Context, t runner.Task) error {
	return p.step(ctx, "post-upgrade", t)
}
func (p *phased) Run(ctx context.Context, t runner.Task) error { return p.step(ctx, "run", t) }

// onlyPre implements Run and PreUpgrade.
type onlyPre struct{ log *phaseLog }

func (o onlyPre) Run(_ context.Context, t runner.Task) error {
	o.log.add("run %s", t.Component)
	return nil
}
func (o onlyPre) PreUpgrade(_ context.Context, t runner.Task) error {
	o.log.add("pre-upgrade %s", t.Component)
	return nil
}

func TestInlinePhases(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name    string
		handler func(*phaseLog) runner.Runner
		want    []string
		skip    bool
		op      string // the *Error's Op when the run fails
	}{
		{
			name:    "all phases in order, Upgrade instead of Run",
			handler: func(l *phaseLog) runner.Runner { return &phased{log: l, need: true} },
			want:    []string{"needs-upgrade etcd", "pre-upgrade etcd", "upgrade etcd", "post-upgrade etcd"},
		},
		{
			name:    "already at target skips the rest",
			handler: func(l *phaseLog) runner.Runner { return &phased{log: l, need: false} },
			want:    []string{"needs-upgrade etcd"},
			skip:    true,
		},
		{
			name:    "Run is the upgrade step without Upgrader",
			handler: func(l *phaseLog) runner.Runner { return onlyPre{l} },
			want:    []string{"pre-upgrade etcd", "run etcd"},
		},
		{
			name: "a plain runner",
			handler: func(l *phaseLog) runner.Runner {
				return runner.RunnerFunc(func(_ context.Context, t runner.Task) error { l.add("run %s", t.Component); return nil })
			},
			want: []string{"run etcd"},
		},
		{
			name: "NeedsUpgrade fails",
			handler: func(l *phaseLog) runner.Runner {
				return &phased{log: l, need: true, fail: map[string]error{"needs-upgrade": errBoom}}
			},
			want: []string{"needs-upgrade etcd"},
			op:   "needs-upgrade",
		},
		{
			name: "PreUpgrade fails, nothing after it runs",
			handler: func(l *phaseLog) runner.Runner {
				return &phased{log: l, need: true, fail: map[string]error{"pre-upgrade": errBoom}}
			},
			want: []string{"needs-upgrade etcd", "pre-upgrade etcd"},
			op:   "pre-upgrade",
		},
		{
			name: "Upgrade fails",
			handler: func(l *phaseLog) runner.Runner {
				return &phased{log: l, need: true, fail: map[string]error{"upgrade": errBoom}}
			},
			want: []string{"needs-upgrade etcd", "pre-upgrade etcd", "upgrade etcd"},
			op:   "upgrade",
		},
		{
			name: "PostUpgrade fails",
			handler: func(l *phaseLog) runner.Runner {
				return &phased{log: l, need: true, fail: map[string]error{"post-upgrade": errBoom}}
			},
			want: []string{"needs-upgrade etcd", "pre-upgrade etcd", "upgrade etcd", "post-upgrade etcd"},
			op:   "post-upgrade",
		},
		{
			name: "Phases adapter, nil phases left out",
			handler: func(l *phaseLog) runner.Runner {
				return components.Phases{
					PreUpgrade: func(_ context.Context, t runner.Task) error { l.add("pre-upgrade %s", t.Component); return nil },
					Upgrade:    func(_ context.Context, t runner.Task) error { l.add("upgrade %s", t.Component); return nil },
				}
			},
			want: []string{"pre-upgrade etcd", "upgrade etcd"},
		},
		{
			name: "Phases adapter at target",
			handler: func(l *phaseLog) runner.Runner {
				return &components.Phases{
					NeedsUpgrade: func(context.Context, runner.Task) (bool, error) { l.add("needs-upgrade"); return false, nil },
					Upgrade:      func(context.Context, runner.Task) error { l.add("upgrade"); return nil },
				}
			},
			want: []string{"needs-upgrade"},
			skip: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &phaseLog{}
			in := components.NewInline().Register("etcd", tt.handler(log))
			err := in.Run(context.Background(), task(nil, inlineCV("etcd", "v3.5.21", "etcd"), hop("v1.0", "v1.1")))
			assert.Equal(t, tt.want, log.lines())
			switch {
			case tt.skip:
				require.ErrorIs(t, err, runner.ErrSkipped)
				assert.EqualError(t, err, "runner: skipped: "+components.ReasonAtTarget)
			case tt.op != "":
				require.ErrorIs(t, err, errBoom)
				ce, ok := errors.AsType[*components.Error](err)
				require.True(t, ok, "errors.As(%v, *Error)", err)
				assert.Equal(t, components.Error{Component: "etcd", Version: "v3.5.21", Op: tt.op, Err: errBoom}, *ce)
				assert.EqualError(t, err, "components: etcd v3.5.21: "+tt.op+": boom")
			default:
				assert.NoError(t, err)
			}
		})
	}
}

// Through the executor, a handler already at target leaves the component
// Skipped with reason "already at target", and its dependents run.
func TestInlineSkipInExecutor(t *testing.T) {
	comp := func(name, version string, deps ...string) release.ComponentVersion {
		cv := *inlineCV(name, version, name)
		cv.Dependencies = deps
		return cv
	}
	rel := func(v, etcd, api string) release.Release {
		return release.Release{Version: release.MustParseVersion(v), Components: []release.ComponentRef{
			{Name: "etcd", Version: release.MustParseVersion(etcd)}, {Name: "apiserver", Version: release.MustParseVersion(api)},
		}}
	}
	c, err := release.NewCatalog(
		[]release.Release{rel("v1.0", "v3.5.0", "v1.33.0"), rel("v1.1", "v3.6.0", "v1.34.0")},
		[]release.ComponentVersion{comp("etcd", "v3.5.0"), comp("etcd", "v3.6.0"), comp("apiserver", "v1.33.0", "etcd"), comp("apiserver", "v1.34.0", "etcd")},
		[]release.UpgradePath{{Rules: []release.Rule{{From: release.MustParseConstraint("v1.0"), To: release.MustParseVersion("v1.1")}}}},
	)
	require.NoError(t, err)
	log := &phaseLog{}
	in := components.NewInline().
		Register("etcd", &phased{log: log, need: false}).
		Register("apiserver", &phased{log: log, need: true})
	exec := runner.New(components.NewRouter().Register(release.TypeInline, in))
	p, err := runner.NewPlan(c, path.MustParseState("v1.0"), path.MustParseState("v1.1"), runner.ForExecutor(exec))
	require.NoError(t, err)
	status, err := exec.Execute(context.Background(), p, nil)
	require.NoError(t, err)
	etcd, ok := status.Component(0, "etcd")
	require.True(t, ok)
	assert.Equal(t, record.Skipped, etcd.Phase)
	assert.Equal(t, "already at target", etcd.Reason)
	api, _ := status.Component(0, "apiserver")
	assert.Equal(t, record.Succeeded, api.Phase)
	assert.Equal(t, []string{"needs-upgrade etcd", "needs-upgrade apiserver", "pre-upgrade apiserver", "upgrade apiserver", "post-upgrade apiserver"}, log.lines())
}

func TestInlineCancellation(t *testing.T) {
	log := &phaseLog{}
	h := &phased{log: log, need: true, block: "pre-upgrade"}
	in := components.NewInline().Register("etcd", h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx, task(nil, inlineCV("etcd", "v3.5.21", "etcd"), nil)) }()
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.NotContains(t, log.lines(), "upgrade etcd", "nothing runs after a cancelled phase")

	// A context that is already done runs no phase at all.
	log2 := &phaseLog{}
	in2 := components.NewInline().Register("etcd", &phased{log: log2, need: true})
	ctx2, cancel2 := context.WithTimeout(context.Background(), 0)
	defer cancel2()
	err = in2.Run(ctx2, task(nil, inlineCV("etcd", "v3.5.21", "etcd"), nil))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.EqualError(t, err, "components: etcd v3.5.21: run: context deadline exceeded")
	assert.Empty(t, log2.lines())
}

// handlerValidator refuses components without a dataDir param.
type handlerValidator struct{ runner.RunnerFunc }

func (handlerValidator) Validate(cv *release.ComponentVersion) error {
	if cv.Params["dataDir"] == "" {
		return errors.New("params.dataDir is required")
	}
	return nil
}

func TestInlineValidateAndUnknown(t *testing.T) {
	in := components.NewInline().Register("etcd", handlerValidator{noop}).Register("containerd", noop)
	assert.Equal(t, []string{"containerd", "etcd"}, in.Handlers())

	withDir := inlineCV("etcd", "v3.5.21", "etcd")
	withDir.Params = map[string]string{"dataDir": "/var/lib/etcd"}
	tests := []struct {
		name string
		cv   *release.ComponentVersion
		msg  string
	}{
		{"known handler", inlineCV("containerd", "v1.7.27", "containerd"), ""},
		{"handler's own validation passes", withDir, ""},
		{"handler's own validation refuses", inlineCV("etcd", "v3.5.21", "etcd"), "components: etcd v3.5.21: validate: params.dataDir is required"},
		{"unknown handler", inlineCV("kubelet", "v1.34.1", "kubelet"), `components: kubelet v1.34.1: validate: no inline handler registered as "kubelet" (registered: containerd, etcd)`},
		{"no handler", inlineCV("kubelet", "v1.34.1", ""), `components: kubelet v1.34.1: validate: inline component names no handler (registered: containerd, etcd)`},
		{"nil", nil, "components: validate: nil component version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := in.Validate(tt.cv)
			if tt.msg == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tt.msg)
		})
	}

	err := in.Run(context.Background(), task(nil, inlineCV("kubelet", "v1.34.1", "kubelet"), nil))
	require.ErrorIs(t, err, components.ErrUnknownHandler)
	assert.True(t, runner.IsPermanent(err), "an unknown handler is not retried")
	assert.True(t, runner.IsPermanent(in.Run(context.Background(), runner.Task{Component: "x"})), "a task without To")

	assert.Panics(t, func() { components.NewInline().Register("", noop) })
	assert.Panics(t, func() { components.NewInline().Register("a", nil) })
	assert.PanicsWithValue(t, `components: inline handler "a" registered twice`, func() { components.NewInline().Register("a", noop).Register("a", noop) })
}

// Phases is a runner on its own: Run runs every phase, as Inline does.
func TestPhasesRun(t *testing.T) {
	log := &phaseLog{}
	p := components.Phases{
		NeedsUpgrade: func(context.Context, runner.Task) (bool, error) { log.add("needs-upgrade"); return true, nil },
		Upgrade:      func(context.Context, runner.Task) error { log.add("upgrade"); return nil },
		PostUpgrade:  func(context.Context, runner.Task) error { return errors.New("verify failed") },
	}
	r := components.NewRouter().Register("node", p)
	cv := inlineCV("worker", "v1.34.1", "")
	cv.Type = "node"
	err := r.Run(context.Background(), task(nil, cv, nil))
	assert.EqualError(t, err, "components: worker v1.34.1: post-upgrade: verify failed")
	assert.Equal(t, []string{"needs-upgrade", "upgrade"}, log.lines())
	assert.True(t, runner.IsPermanent(components.Phases{}.Run(context.Background(), runner.Task{Component: "x"})))
	assert.NoError(t, components.Phases{}.Run(context.Background(), task(nil, cv, nil)), "no phases: nothing to do")
}
