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
	"github.com/hopdag/hopdag/record"
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

// waitingLock is the File's lock, whose Acquire waits for a killed
// holder's lease to expire (and the clock-skew allowance after it), as a
// restarted coordinator does.
type waitingLock struct{ *state.File }

func (l waitingLock) Acquire(ctx context.Context, holder string, ttl time.Duration) (state.Lease, error) {
	for {
		lease, err := l.File.Acquire(ctx, holder, ttl)
		locked, ok := errors.AsType[*state.LockedError](err)
		if !ok {
			return lease, err
		}
		select {
		case <-ctx.Done():
			return state.Lease{}, context.Cause(ctx)
		case <-time.After(max(time.Until(locked.Expires.Add(state.Skew(ttl))), time.Millisecond)):
		}
	}
}

// holder names this process on the lock.
func holder() state.Option { return state.WithHolder(fmt.Sprintf("crashtest/%d", os.Getpid())) }

// ExecUpgrade runs (or resumes) the exec component's upgrade.
func ExecUpgrade(ctx context.Context, cfg ExecConfig) (err error) {
	store, err := state.OpenFile(cfg.Dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	var opts []components.ExecOption
	guard := filepath.Join(cfg.Dir, "commands.lock")
	if cfg.Guard {
		opts = append(opts, components.WithGuard(guard))
	}
	exec := runner.New(components.NewExec(opts...))
	_, err = state.Run(ctx, store, waitingLock{store}, exec, execPlan(cfg), holder(), state.WithTTL(cfg.TTL),
		state.WithSession(func(ctx context.Context, s *state.Session) (*record.Status, error) {
			if cfg.Guard {
				// What a killed predecessor's command left running stops
				// before the command runs again.
				if err := components.WaitGuards(ctx, guard, time.Minute, nil); err != nil {
					return nil, err
				}
			}
			return s.Execute(ctx, s.Prev)
		}))
	return err
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
