package simulate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// Approve records by's approval of the gated step in the state.File
// store at dir, under the store's lock, and returns the saved status.
func Approve(ctx context.Context, dir, step, by string, now time.Time) (*record.Status, error) {
	store, err := state.OpenFile(dir)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	host, _ := os.Hostname()
	st, err := state.Approve(ctx, store, store, step, by, now, state.WithHolder(fmt.Sprintf("%s/%d approve", host, os.Getpid())), state.WithTTL(30*time.Second))
	if errors.Is(err, state.ErrNoStatus) {
		return nil, errors.New("simulate: approve: " + dir + " holds no run; run the upgrade first")
	}
	return st, err
}

// Gates is the option that gates each hop of p named in hops (a hop's
// target version, as --gate gives them): runner.WithGates, which records
// them in the status so that a resumed run keeps them. It refuses a name
// that is no hop of p, and a component or phase (HOP/COMPONENT: their
// gates are the catalog's), in the terms of the --gate flag.
func Gates(p *runner.Plan, hops []string) (runner.Option, error) {
	var names []string
	for _, h := range p.Hops {
		names = append(names, runner.StepName(h, "", ""))
	}
	for _, name := range hops {
		if strings.Contains(name, "/") {
			return nil, fmt.Errorf("--gate %s: --gate takes hops (their target versions: %s); a component's or a phase's gate is declared in the catalog (gate: on the ComponentVersion, or on one of its phases)",
				name, strings.Join(names, ", "))
		}
		if !slices.Contains(names, name) {
			return nil, fmt.Errorf("--gate %s: the plan has no hop to %s; its hops are %s", name, name, strings.Join(names, ", "))
		}
	}
	return runner.WithGates(hops...), nil
}
