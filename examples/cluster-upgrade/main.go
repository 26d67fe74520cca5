// Command cluster-upgrade is hopdag's demo: it loads the sample catalog
// (embedded; --catalog DIR for another), resolves v26.06-rc.2 -> v26.09
// over the UpgradePath rules (three hops), prints the plan, and runs it with
// simulated inline and manifest runners whose durations are the components'
// expectedDurations scaled down (--speed), showing progress and a final
// status table.
//
//	go run ./examples/cluster-upgrade
//	go run ./examples/cluster-upgrade --fail etcd --state /tmp/upgrade   # fails: dependents skipped
//	go run ./examples/cluster-upgrade --state /tmp/upgrade              # resumes, re-runs nothing that succeeded
//
// Step-wise: --until stops after a step, --gate holds a hop until approved:
//
//	go run ./examples/cluster-upgrade --state /tmp/u --until v26.06-rc.3   # stops after the first hop
//	go run ./examples/cluster-upgrade --state /tmp/u --gate v26.09         # waits before the last hop
//	go run ./examples/cluster-upgrade --state /tmp/u --gate v26.09 --approve v26.09  # approves, finishes
//
// --on-failure rollback undoes a failed hop, dependents first
// (rollback-run: the whole run, hop by hop):
//
//	go run ./examples/cluster-upgrade --fail kubernetes-worker --on-failure rollback
//
// Exit status: 0 when the upgrade succeeded or stopped at --until, 1 when
// it failed or the input is invalid, 2 for bad flags, 3 when it waits for
// an approval.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/hopdag/hopdag"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/simulate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// approver is who approves by default: $USER, else "operator".
func approver() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "operator"
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cluster-upgrade", flag.ContinueOnError)
	fs.SetOutput(stderr)
	catalog := fs.String("catalog", "", "catalog directory (default: the embedded sample catalog)")
	from := fs.String("from", "v26.06-rc.2", "version the cluster runs")
	to := fs.String("to", "v26.09", "version to upgrade to")
	mode := fs.String("mode", "eager", "scheduling: eager or batch")
	fail := fs.String("fail", "", "comma-separated components that fail on purpose")
	state := fs.String("state", "", "state directory (a state.File store): the status is saved there as the run goes, and a run resumes from it")
	speed := fs.Float64("speed", simulate.DefaultSpeed, "simulated seconds per real second")
	accept := fs.String("accept", "", "comma-separated risks to accept")
	until := fs.String("until", "", "stop after this step, HOP[/COMPONENT[/PHASE]]; the next run continues")
	gates := fs.String("gate", "", "comma-separated hops (target versions) that wait for approval (hopdag approve)")
	approve := fs.String("approve", "", "with --state: comma-separated steps waiting for approval to approve (as --by) before the run continues, as hopdag approve does")
	by := fs.String("by", approver(), "who approves (--approve)")
	onFailure := fs.String("on-failure", "", "rollback: undo a failed hop; rollback-run: undo the whole run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	m, err := simulate.ParseMode(*mode)
	if err != nil {
		fmt.Fprintln(stderr, "cluster-upgrade:", err)
		return 2
	}
	policy, err := simulate.ParsePolicy(*onFailure)
	if err != nil {
		fmt.Fprintln(stderr, "cluster-upgrade:", err)
		return 2
	}
	var c *release.Catalog
	if *catalog == "" {
		c, err = release.Load(hopdag.SampleCatalog())
	} else {
		c, err = release.LoadDir(*catalog)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fv, err := path.ParseState(*from)
	if err != nil {
		fmt.Fprintln(stderr, "cluster-upgrade: --from:", err)
		return 1
	}
	tv, err := path.ParseState(*to)
	if err != nil {
		fmt.Fprintln(stderr, "cluster-upgrade: --to:", err)
		return 1
	}
	st, err := simulate.Run(ctx, simulate.Upgrade{
		Catalog: c, From: fv, To: tv, Accept: simulate.List(*accept), StateDir: *state, Until: *until, Gates: simulate.List(*gates),
		Approve: simulate.List(*approve), ApproveBy: *by,
		Text:   strings.NewReplacer("approve it (Status.Approve) and run again", "approve it: run again with --approve STEP").Replace,
		Config: simulate.Config{Speed: *speed, Fail: simulate.List(*fail), Mode: m, Policy: policy, Terminal: simulate.IsTerminal(stdout)},
	}, stdout)
	switch {
	case errors.Is(err, runner.ErrUntilReached):
		fmt.Fprintln(stdout, "\n"+st.Message)
		return 0
	case errors.Is(err, runner.ErrWaitingForApproval):
		// The command that approves, rather than the Go API the
		// runner's message names.
		fmt.Fprintf(stderr, "\nwaiting for approval of %s; approve and continue with:\n  go run ./examples/cluster-upgrade %s --approve %s\n",
			strings.Join(st.Waiting, ", "), strings.Join(args, " "), strings.Join(st.Waiting, ","))
		return 3
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if st.Phase != record.Succeeded {
		return 1
	}
	return 0
}
