package crashtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// phased is the crash program's runner when components run through the
// library's phases (Config.PhaseLog): a components.Router with an Inline
// of one handler per handler name of the plan, and an Exec for command
// phases. It logs the attempt as upgrade does, then hands the task to the
// Router.
//
// A handler of components without declared phases is a components.Phases
// whose phases each log "hop component phase" (appended, fsynced), then
// take Delay. NeedsUpgrade reports the upgrade needed unless the live
// system (Config.Live) holds the component, which Upgrade writes once it
// took its Delay: a real system is at its target after Upgrade, so an
// attempt that ran NeedsUpgrade again after that would be Skipped.
//
// A handler of components with declared phases is a components.Steps of
// the steps their handler phases name, each logging and pausing as above.
// Command phases are run by components.Exec; their command logs its line
// itself (the catalog's command sees the log as .Values.log and the hop's
// index as .Values.hops[.Hop]).
func phased(cfg Config, plan *runner.Plan, mu *sync.Mutex) (runner.Runner, error) {
	hops := map[string]any{}
	steps := map[string][]string{} // declared-phase handlers: their steps
	inline := map[string]bool{}    // handlers without declared phases
	for i, h := range plan.Hops {
		hops[h.Name()] = strconv.Itoa(i)
		for n := range h.Graph.Len() {
			cv := h.Graph.Node(n).To
			switch {
			case cv == nil || cv.Handler == "":
			case len(cv.Phases) > 0:
				for _, p := range cv.Phases {
					if p.Handler != "" && !slices.Contains(steps[cv.Handler], p.Handler) {
						steps[cv.Handler] = append(steps[cv.Handler], p.Handler)
					}
				}
			default:
				inline[cv.Handler] = true
			}
		}
	}
	in := components.NewInline()
	for _, name := range slices.Sorted(maps.Keys(inline)) {
		if _, both := steps[name]; both {
			return nil, fmt.Errorf("crashtest: handler %s runs components with and without declared phases", name)
		}
		in.Register(name, handlerPhases(cfg, mu))
	}
	for _, name := range slices.Sorted(maps.Keys(steps)) {
		ss := steps[name]
		s := components.Steps{}
		for _, step := range ss {
			s[step] = func(ctx context.Context, t runner.Task) error { return phase(ctx, cfg, mu, t, step) }
		}
		in.Register(name, s)
	}
	r := components.NewRouter().
		Register(release.TypeInline, in).
		Register(release.TypeExec, components.NewExec(components.WithExecValues(map[string]any{"log": cfg.PhaseLog, "hops": hops})))
	var errs []error
	for _, h := range plan.Hops {
		for n := range h.Graph.Len() {
			if cv := h.Graph.Node(n).To; cv != nil {
				errs = append(errs, r.Validate(cv))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		if err := appendLine(mu, cfg.Log, fmt.Sprintf("%d %s %d", t.HopIndex, t.Component, t.Attempt)); err != nil {
			return runner.Permanent(err)
		}
		return r.Run(ctx, t)
	}), nil
}

// handlerPhases is an inline handler with the four phases.
func handlerPhases(cfg Config, mu *sync.Mutex) components.Phases {
	return components.Phases{
		NeedsUpgrade: func(ctx context.Context, t runner.Task) (bool, error) {
			if err := phase(ctx, cfg, mu, t, components.StepNeedsUpgrade); err != nil {
				return false, err
			}
			at, err := upgraded(mu, cfg.Live, t)
			return !at, err
		},
		PreUpgrade: func(ctx context.Context, t runner.Task) error {
			return phase(ctx, cfg, mu, t, components.StepPreUpgrade)
		},
		Upgrade: func(ctx context.Context, t runner.Task) error {
			if err := phase(ctx, cfg, mu, t, components.StepUpgrade); err != nil {
				return err
			}
			return appendLine(mu, cfg.Live, liveLine(t))
		},
		PostUpgrade: func(ctx context.Context, t runner.Task) error {
			return phase(ctx, cfg, mu, t, components.StepPostUpgrade)
		},
	}
}

// phase logs "hop component name" to the phase log, then takes Delay.
func phase(ctx context.Context, cfg Config, mu *sync.Mutex, t runner.Task, name string) error {
	if err := appendLine(mu, cfg.PhaseLog, fmt.Sprintf("%d %s %s", t.HopIndex, t.Component, name)); err != nil {
		return runner.Permanent(err)
	}
	return pause(ctx, cfg.Delay)
}

func liveLine(t runner.Task) string { return fmt.Sprintf("%d %s", t.HopIndex, t.Component) }

// upgraded reports whether the live system holds t's component at t's
// hop's target: its Upgrade phase completed.
func upgraded(mu *sync.Mutex, live string, t runner.Task) (bool, error) {
	mu.Lock()
	defer mu.Unlock()
	f, err := os.Open(live)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	want := liveLine(t)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sc.Text() == want {
			return true, nil
		}
	}
	return false, sc.Err()
}
