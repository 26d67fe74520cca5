package crashtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// ExecConfig is the exec crash test's child: a coordinator that runs one
// exec component, Script under sh -c, from the File store in Dir.
type ExecConfig struct {
	Dir    string
	Script string
	TTL    time.Duration
	// Guard runs the command under components.WithGuard, its lock file in
	// Dir, and has components.WaitGuards stop what a killed predecessor's
	// command left running before resuming, as hopdag run does: nothing
	// of the command's process group outlives into the next attempt, not
	// only its first process.
	Guard bool
}

// acquire takes the lock, waiting for a killed holder's lease to expire
// (and the clock-skew allowance after it), as a restarted coordinator
// does.
func acquire(ctx context.Context, store *state.File, ttl time.Duration) (state.Lease, error) {
	for {
		lease, err := store.Acquire(ctx, fmt.Sprintf("crashtest/%d", os.Getpid()), ttl)
		var locked *state.LockedError
		if !errors.As(err, &locked) {
			return lease, err
		}
		time.Sleep(max(time.Until(locked.Expires.Add(state.Skew(ttl))), time.Millisecond))
	}
}

// ExecUpgrade runs (or resumes) the exec component's upgrade.
func ExecUpgrade(ctx context.Context, cfg ExecConfig) (err error) {
	store, err := state.OpenFile(cfg.Dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	lease, err := acquire(ctx, store, cfg.TTL)
	if err != nil {
		return err
	}
	runCtx, keeper := state.Keep(ctx, store, lease)
	defer keeper.Stop()
	prev, err := store.Load(runCtx)
	if err != nil {
		return err
	}
	var opts []components.ExecOption
	if cfg.Guard {
		lock := filepath.Join(cfg.Dir, "commands.lock")
		if err := components.WaitGuards(runCtx, lock, time.Minute, nil); err != nil {
			return err
		}
		opts = append(opts, components.WithGuard(lock))
	}
	exec := runner.New(components.NewExec(opts...), runner.WithCheckpointer(state.Checkpointer(store, lease)))
	if _, err := exec.Execute(runCtx, execPlan(cfg), prev); err != nil {
		return err
	}
	keeper.Stop()
	return store.Release(ctx, keeper.Lease())
}

func execPlan(cfg ExecConfig) *runner.Plan {
	v0, v1 := release.MustParseVersion("v1.0.0"), release.MustParseVersion("v1.1.0")
	to := &release.ComponentVersion{Name: "step", Version: v1, Type: release.TypeExec,
		Command: &release.Command{Args: []string{"sh", "-c", cfg.Script}, Env: map[string]string{"DIR": cfg.Dir}}}
	g, err := dag.New([]dag.Node{{Name: "step", From: &release.ComponentVersion{Name: "step", Version: v0}, To: to}})
	if err != nil {
		panic(err)
	}
	ph := path.Hop{From: release.MustParseVersion("v1.0"), To: release.MustParseVersion("v1.1")}
	return &runner.Plan{Route: &path.Route{From: ph.From, To: ph.To, Hops: []path.Hop{ph}}, Hops: []*runner.HopPlan{{Hop: ph, Graph: g}}}
}
