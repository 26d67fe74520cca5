package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// DefaultSpeed is how many simulated seconds pass per real second: the
// sample route v26.06-rc.2 -> v26.09 (about 25 simulated minutes on its
// critical paths) then takes about ten seconds.
const DefaultSpeed = 150

// Config says how to simulate.
type Config struct {
	// Speed is simulated time per real time (DefaultSpeed when 0).
	Speed float64
	// Fail names components that fail (permanently) on every hop.
	Fail []string
	// Mode, MaxParallel and Policy configure the executor. A Policy of
	// ContinueIndependent (the zero value) is the status's on a resume.
	Mode        runner.Mode
	MaxParallel int
	Policy      runner.FailurePolicy
	// Values are the manifest template values (a registry mirror by default).
	Values map[string]any
	// Out receives progress lines; Terminal adds a progress bar.
	Out      io.Writer
	Terminal bool
}

// ErrScripted is the failure of a component named in Config.Fail.
var ErrScripted = errors.New("simulate: scripted failure")

// Executor returns an executor with simulated inline, manifest, exec and
// helm runners (inline ones for every handler the catalog names), a
// simulated check for every check it names, and the progress observer.
// extra options come last and win.
func Executor(c *release.Catalog, cfg Config, extra ...runner.Option) *runner.Executor {
	speed := cfg.Speed
	if speed <= 0 {
		speed = DefaultSpeed
	}
	clock := scaledClock{speed}
	values := cfg.Values
	if values == nil {
		values = map[string]any{"registry": "registry.local:5000/openfuyao"}
	}
	recorder := components.NewRecorder()
	inline := components.NewInline()
	handlers := map[string]bool{}
	checks := map[string]bool{}
	for i := range c.Components {
		if h := c.Components[i].Handler; h != "" {
			handlers[h] = true
		}
	}
	for i := range c.Paths {
		for _, r := range c.Paths[i].Rules {
			for _, ch := range slices.Concat(r.PreChecks, r.PostChecks) {
				checks[ch.Name] = true
			}
		}
	}
	work := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
	for _, h := range slices.Sorted(maps.Keys(handlers)) {
		inline.Register(h, work)
	}
	router := components.NewRouter().
		Register(release.TypeInline, slow{clock, inline}).
		Register(release.TypeManifest, slow{clock, components.NewManifest(recorder, components.WithValues(values))}).
		Register(release.TypeExec, slow{clock, idle{}}).
		Register(release.TypeHelm, slow{clock, idle{}})
	fail := cfg.Fail
	sim := validatingRunner{router: router, clock: clock, run: runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		if slices.Contains(fail, t.Component) {
			if err := clock.sleep(ctx, t.To.ExpectedDuration.Duration/2); err != nil {
				return err
			}
			// The runner names the component and its version: the error does
			// not say them again.
			return runner.Permanent(fmt.Errorf("%w (--fail)", ErrScripted))
		}
		return router.Run(ctx, t)
	})}
	opts := []runner.Option{
		runner.WithClock(clock), runner.WithMode(cfg.Mode), runner.WithMaxParallel(cfg.MaxParallel),
		runner.WithGroupLimit("workers", 2),
	}
	if cfg.Policy != runner.ContinueIndependent {
		// The default is not passed: a resumed run keeps its status's.
		opts = append(opts, runner.WithFailurePolicy(cfg.Policy))
	}
	for _, name := range slices.Sorted(maps.Keys(checks)) {
		opts = append(opts, runner.WithCheck(name, func(ctx context.Context, _ runner.CheckTask) error {
			return clock.sleep(ctx, 5*time.Second)
		}))
	}
	if cfg.Out != nil {
		opts = append(opts, runner.WithObserver(NewProgress(cfg.Out, cfg.Terminal)))
	}
	return runner.New(sim, append(opts, extra...)...)
}

// validatingRunner runs through run and validates through the router, so
// plan-time checks see the real registrations.
type validatingRunner struct {
	router *components.Router
	run    runner.Runner
	clock  scaledClock
}

func (v validatingRunner) Run(ctx context.Context, t runner.Task) error { return v.run.Run(ctx, t) }
func (v validatingRunner) Validate(cv *release.ComponentVersion) error {
	return v.router.Validate(cv)
}

// Rollback simulates undoing a component: a quarter of its expected
// duration.
func (v validatingRunner) Rollback(ctx context.Context, t runner.Task) error {
	return v.clock.sleep(ctx, t.To.ExpectedDuration.Duration/4)
}

// slow spends the component's scaled expectedDuration, then runs the real
// runner (which keeps its plan-time Validate).
type slow struct {
	clock scaledClock
	next  interface {
		runner.Runner
		runner.Validator
	}
}

func (s slow) Run(ctx context.Context, t runner.Task) error {
	if err := s.clock.sleep(ctx, t.To.ExpectedDuration.Duration); err != nil {
		return err
	}
	return s.next.Run(ctx, t)
}

func (s slow) Validate(cv *release.ComponentVersion) error { return s.next.Validate(cv) }

// idle is the simulated work of a command or a Helm release: nothing, once
// slow has spent the component's time. It accepts every component the
// catalog loader accepted: a command's templates need values (--set) that
// a simulation has no use for, and a chart is not fetched.
type idle struct{}

func (idle) Run(context.Context, runner.Task) error   { return nil }
func (idle) Validate(*release.ComponentVersion) error { return nil }

// scaledClock runs simulated time speed times faster than real time: the
// executor's timeouts and backoffs shrink with the simulated work.
type scaledClock struct{ speed float64 }

func (s scaledClock) real(d time.Duration) time.Duration { return time.Duration(float64(d) / s.speed) }
func (s scaledClock) Now() time.Time                     { return time.Now() }
func (s scaledClock) After(d time.Duration) <-chan time.Time {
	return time.After(s.real(d))
}

// WithTimeout scales d too, but never below minTimeout of real time: the
// manifest runner renders and records for real, which no speed shortens.
func (s scaledClock) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, max(s.real(d), minTimeout))
}

const minTimeout = 2 * time.Second

func (s scaledClock) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(s.real(d))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
