// Package crashtest is the program the crash test kills: an upgrade of the
// sample catalog with the File store as checkpointer and a simulated
// runner that logs every attempt. The test binary runs it in a child
// process (see crash_test.go).
package crashtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

// The route the program upgrades along: three hops, 19 component
// upgrades.
const (
	From = "v26.06-rc.2"
	To   = "v26.09"
)

// Config says where the program works.
type Config struct {
	// Catalog is the catalog directory.
	Catalog string
	// Dir is the File store's directory.
	Dir string
	// Log is the attempt log: one line per attempt, "hop component
	// attempt", appended and fsynced before the attempt does anything.
	Log string
	// Delay is how long each attempt takes.
	Delay time.Duration
	// Components, when not 0, replaces the catalog's plan by one hop of
	// that many components on a layered DAG (statetest.Layered).
	Components int
	// TTL is the lease's; a restart waits for a killed holder's lease to
	// expire, so a short one keeps restarts quick.
	TTL time.Duration
	// Fail, when set, names a component whose upgrade fails on the last
	// hop: the run is rolled back (runner.RollbackRun), each rollback
	// logged to RollbackLog (rollback.go).
	Fail        string
	RollbackLog string
	// Steps, when set, are steps every component enters in turn
	// (Task.Enter), from the one its record names, each logged to
	// StepLog before it takes Delay (steps.go).
	Steps   []string
	StepLog string
	// PhaseLog, when set, makes the components run through the library's
	// own phase machinery, a components.Router (phases.go): inline
	// handlers are components.Phases, or components.Steps for components
	// with declared lifecycle phases, and command phases run through
	// components.Exec. Each phase logs "hop component phase" to PhaseLog
	// before it takes Delay. Live is the live system: the components
	// whose Upgrade phase completed, one "hop component" a line.
	PhaseLog string
	Live     string
	// From and To, when set, replace the route's ends (From, To).
	From, To string
}

// Plan is the plan the program runs.
func (cfg Config) Plan() (*runner.Plan, error) {
	if cfg.Components > 0 {
		return statetest.Layered(nil, cfg.Components), nil
	}
	c, err := release.LoadDir(cfg.Catalog)
	if err != nil {
		return nil, err
	}
	from, to := From, To
	if cfg.From != "" {
		from, to = cfg.From, cfg.To
	}
	return runner.NewPlan(c, path.State{"": release.MustParseVersion(from)}, path.State{"": release.MustParseVersion(to)})
}

// Upgrade runs (or resumes) the upgrade. It writes "ready" to ready once
// it holds the lock and has loaded the status, before any component runs.
func Upgrade(ctx context.Context, cfg Config, ready io.Writer) (err error) {
	plan, err := cfg.Plan()
	if err != nil {
		return err
	}
	store, err := state.OpenFile(cfg.Dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	log, err := os.OpenFile(cfg.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, log.Close()) }()

	var mu sync.Mutex
	upgrade := runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		mu.Lock()
		_, err := fmt.Fprintf(log, "%d %s %d\n", t.HopIndex, t.Component, t.Attempt)
		if err == nil {
			err = log.Sync()
		}
		mu.Unlock()
		if err != nil {
			return runner.Permanent(err)
		}
		return pause(ctx, cfg.Delay)
	})
	var rn runner.Runner = upgrade
	var opts []runner.Option
	if len(cfg.Steps) > 0 {
		rn = stepper(cfg, upgrade, &mu)
	}
	if cfg.PhaseLog != "" {
		if rn, err = phased(cfg, plan, &mu); err != nil {
			return err
		}
	}
	if cfg.Fail != "" {
		rn = undoer(cfg, plan, upgrade, &mu)
		opts = append(opts, runner.WithFailurePolicy(runner.RollbackRun))
	}
	ok := func(context.Context, runner.CheckTask) error { return nil }
	for _, h := range plan.Hops {
		for _, c := range append(h.PreChecks, h.PostChecks...) {
			opts = append(opts, runner.WithCheck(c.Name, ok))
		}
	}
	st, err := state.Run(ctx, store, waitingLock{store}, runner.New(rn, opts...), plan, holder(), state.WithTTL(cfg.TTL),
		state.WithSession(func(ctx context.Context, s *state.Session) (*record.Status, error) {
			if _, err := fmt.Fprintln(ready, "ready"); err != nil {
				return nil, err
			}
			return s.Execute(ctx, s.Prev)
		}))
	if err != nil && (cfg.Fail == "" || st == nil || st.Phase != record.RolledBack) {
		return err
	}
	return nil
}
