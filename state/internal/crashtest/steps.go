package crashtest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hopdag/hopdag/runner"
)

// stepper is the crash program's runner when components have steps: it
// logs the attempt as upgrade does, then enters each step from the one
// the record names, logging "hop component step" (appended, fsynced)
// before the step takes Delay.
func stepper(cfg Config, upgrade runner.RunnerFunc, mu *sync.Mutex) runner.Runner {
	return runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		from := max(slices.Index(cfg.Steps, t.Step), 0)
		for _, s := range cfg.Steps[from:] {
			if err := t.Enter(ctx, s); err != nil {
				return err
			}
			if err := appendLine(mu, cfg.StepLog, fmt.Sprintf("%d %s %s", t.HopIndex, t.Component, s)); err != nil {
				return runner.Permanent(err)
			}
			if err := pause(ctx, cfg.Delay); err != nil {
				return err
			}
		}
		return nil
	})
}

func appendLine(mu *sync.Mutex, path, line string) error {
	mu.Lock()
	defer mu.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// pause waits d, or until ctx is done (its error): a step's work.
func pause(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
