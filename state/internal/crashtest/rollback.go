package crashtest

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/hopdag/hopdag/runner"
)

// rollbackRunner is the crash program's runner when it rolls back: the
// upgrade fails for Config.Fail on the last hop, and each rollback is
// logged ("hop component", appended and fsynced) before it takes Delay.
type rollbackRunner struct {
	runner.RunnerFunc
	undo func(ctx context.Context, t runner.Task) error
}

func (r rollbackRunner) Rollback(ctx context.Context, t runner.Task) error { return r.undo(ctx, t) }

func undoer(cfg Config, plan *runner.Plan, upgrade runner.RunnerFunc, mu *sync.Mutex) runner.Runner {
	last := len(plan.Hops) - 1
	run := func(ctx context.Context, t runner.Task) error {
		if err := upgrade(ctx, t); err != nil {
			return err
		}
		if t.HopIndex == last && t.Component == cfg.Fail {
			return runner.Permanent(fmt.Errorf("crashtest: %s fails on purpose", t.Component))
		}
		return nil
	}
	undo := func(ctx context.Context, t runner.Task) error {
		mu.Lock()
		f, err := os.OpenFile(cfg.RollbackLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			_, err = fmt.Fprintf(f, "%d %s\n", t.HopIndex, t.Component)
			if err == nil {
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		mu.Unlock()
		if err != nil {
			return runner.Permanent(err)
		}
		return pause(ctx, cfg.Delay)
	}
	return rollbackRunner{RunnerFunc: run, undo: undo}
}
