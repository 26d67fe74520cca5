package simulate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// Approve records by's approval of the gated step in the state.File
// store at dir, under the store's lock, and returns the saved status.
func Approve(ctx context.Context, dir, step, by string, now time.Time) (*runner.Status, error) {
	store, err := state.OpenFile(dir)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	host, _ := os.Hostname()
	lease, err := store.Acquire(ctx, fmt.Sprintf("%s/%d approve", host, os.Getpid()), 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer func() { _ = store.Release(context.WithoutCancel(ctx), lease) }()
	st, err := store.Load(ctx)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, errors.New("simulate: approve: " + dir + " holds no run; run the upgrade first")
	}
	if err := st.Approve(step, by, now); err != nil {
		return nil, err
	}
	if err := store.Save(ctx, lease.Token, st); err != nil {
		return nil, err
	}
	return st, nil
}

// Gate puts a gate on each hop of p named in hops (a hop's target
// version); it refuses a name that is no hop of p.
func Gate(p *runner.Plan, hops []string) error {
	for _, name := range hops {
		found := false
		for _, h := range p.Hops {
			if runner.StepName(h, "", "") == name {
				h.Rule.Gate, found = &release.Gate{Reason: "the demo's gate: approve it with hopdag approve"}, true
			}
		}
		if !found {
			return fmt.Errorf("simulate: --gate %s: the plan has no hop to %s", name, name)
		}
	}
	return nil
}
