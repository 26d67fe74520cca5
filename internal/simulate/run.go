package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// Upgrade is one simulated upgrade: what to run and where to keep its status.
type Upgrade struct {
	Catalog  *release.Catalog
	From, To release.Version
	// Accept names the risks the caller accepts.
	Accept []string
	// StatePath, when set, is the JSON status file written on every
	// transition; if it exists, the run resumes from it.
	StatePath string
	Config    Config
}

// Run prints the plan, executes it (resuming from StatePath), prints the
// status table to out, and returns the final status.
func Run(ctx context.Context, u Upgrade, out io.Writer) (*runner.Status, error) {
	u.Config.Out = out
	e, _ := Executor(u.Catalog, u.Config)
	plan, err := runner.NewPlan(u.Catalog, u.From, u.To, runner.ForExecutor(e), runner.PathOptions(path.AcceptRisks(u.Accept...)))
	if err != nil {
		return nil, err
	}
	fmt.Fprint(out, plan.String())
	var prev *runner.Status
	if u.StatePath != "" {
		prev, err = loadStatus(u.StatePath)
		if err != nil {
			return nil, err
		}
		if prev != nil {
			fmt.Fprintf(out, "resuming from %s (%s, %d/%d done)\n", u.StatePath, prev.Phase, prev.Progress.Done, prev.Progress.Total)
		}
		e, _ = Executor(u.Catalog, u.Config, runner.WithCheckpointer(fileCheckpointer(u.StatePath)))
	}
	fmt.Fprintln(out)
	st, err := e.Execute(ctx, plan, prev)
	if st != nil {
		fmt.Fprintln(out)
		StatusTable(out, st)
	}
	return st, err
}

func loadStatus(p string) (*runner.Status, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s runner.Status
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("simulate: status file %s is not a valid status: %w (delete it to start over)", p, err)
	}
	return &s, nil
}

// fileCheckpointer writes the status as JSON: temp file, fsync, rename.
func fileCheckpointer(p string) runner.Checkpointer {
	return runner.CheckpointFunc(func(_ context.Context, s *runner.Status) error {
		data, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return err
		}
		tmp, err := os.CreateTemp(filepath.Dir(p), ".status-*")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		if _, err := tmp.Write(data); err != nil {
			tmp.Close()
			return err
		}
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
		if err := tmp.Close(); err != nil {
			return err
		}
		return os.Rename(tmp.Name(), p)
	})
}
