package simulate

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/report"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// Upgrade is one simulated upgrade: what to run and where to keep its status.
type Upgrade struct {
	Catalog *release.Catalog
	// From and To are the states of the upgrade (path.ParseState: a
	// version, "v26.09", or one version per track).
	From, To path.State
	// Accept names the risks the caller accepts.
	Accept []string
	// StateDir, when set, is the directory of a state.File store: the run
	// takes its lock, resumes from the status saved there, and saves every
	// transition under its lease.
	StateDir string
	Config   Config
	// Source says which catalog bundle Catalog came from; it is recorded
	// in the plan and the status (empty for a directory).
	Source record.CatalogSource
	// Until, when set, stops the run after that step (runner.WithUntil).
	Until string
	// Gates are hops (target versions) to put a gate on (approve.go).
	Gates []string
	// Approve are the steps waiting for approval in the status in
	// StateDir that the run approves, as ApproveBy, before it resumes (as
	// state.Approve, which hopdag approve calls).
	Approve   []string
	ApproveBy string
	// Text, when set, puts the status's message in the caller's terms in
	// the table (a command names its flags where the runner names its Go
	// API).
	Text func(string) string
}

// Run prints the plan, executes it (resuming from StateDir), prints the
// status table to out, and returns the final status.
func Run(ctx context.Context, u Upgrade, out io.Writer) (*record.Status, error) {
	u.Config.Out = out
	planFor := func(e *runner.Executor) (*runner.Plan, error) {
		var popts []runner.PlanOption
		if e != nil {
			popts = append(popts, runner.ForExecutor(e))
		}
		return runner.NewPlan(u.Catalog, u.From, u.To, append(popts, runner.PathOptions(path.AcceptRisks(u.Accept...)))...)
	}
	// The plan's hops first, to check the gates against.
	plan, err := planFor(nil)
	if err != nil {
		return nil, err
	}
	gates, err := Gates(plan, u.Gates)
	if err != nil {
		return nil, err
	}
	e := Executor(u.Catalog, u.Config, runner.WithUntil(u.Until), gates)
	if plan, err = planFor(e); err != nil {
		return nil, err
	}
	plan.Catalog = u.Source
	// show prints the plan and what run returns.
	show := func(resume string, run func() (*record.Status, error)) (*record.Status, error) {
		fmt.Fprint(out, plan.String(), resume, "\n")
		st, err := run()
		if st != nil {
			shown := st
			if u.Text != nil {
				shown = st.DeepCopy()
				shown.Message = u.Text(st.Message)
			}
			fmt.Fprintln(out)
			report.Table(out, shown, report.PlanOrder(plan))
		}
		return st, err
	}
	if u.StateDir == "" {
		if len(u.Approve) > 0 {
			return nil, fmt.Errorf("simulate: approving %s needs the state a gated run left (StateDir)", strings.Join(u.Approve, ", "))
		}
		return show("", func() (*record.Status, error) { return e.Execute(ctx, plan, nil) })
	}
	// With a store: its lock held, resumed from the status saved there,
	// every transition saved under the lease.
	store, err := state.OpenFile(u.StateDir)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	host, _ := os.Hostname()
	for _, step := range u.Approve {
		if _, err := state.Approve(ctx, store, store, step, u.ApproveBy, time.Now().UTC(),
			state.WithHolder(fmt.Sprintf("%s/%d", host, os.Getpid())), state.WithTTL(time.Minute)); err != nil {
			return nil, err
		}
	}
	return state.Run(ctx, store, store, e, plan, state.WithHolder(fmt.Sprintf("%s/%d", host, os.Getpid())), state.WithTTL(time.Minute),
		state.WithSession(func(ctx context.Context, s *state.Session) (*record.Status, error) {
			resume := ""
			if s.Prev != nil {
				resume = fmt.Sprintf("resuming from %s (%s, %d/%d done)\n", u.StateDir, s.Prev.Phase, s.Prev.Progress.Done, s.Prev.Progress.Total)
			}
			return show(resume, func() (*record.Status, error) { return s.Execute(ctx, s.Prev) })
		}))
}

// ParsePolicy reads an --on-failure flag: "" (continue independent
// branches), rollback (undo the failed hop) or rollback-run (undo the
// whole run).
func ParsePolicy(s string) (runner.FailurePolicy, error) {
	switch s {
	case "":
		return runner.ContinueIndependent, nil
	case "rollback":
		return runner.Rollback, nil
	case "rollback-run":
		return runner.RollbackRun, nil
	}
	return runner.FailurePolicy{}, fmt.Errorf("--on-failure must be rollback or rollback-run, got %q", s)
}

// ParseMode reads a --mode flag: eager or batch.
func ParseMode(s string) (runner.Mode, error) {
	switch s {
	case "eager":
		return runner.Eager, nil
	case "batch":
		return runner.Batch, nil
	}
	return 0, fmt.Errorf("--mode must be eager or batch, got %q", s)
}

// List splits a comma-separated flag value, dropping empty items.
func List(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// IsTerminal reports whether w is a terminal (for the progress bar).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
