package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hopdag/hopdag/simulate"
)

// rootLong is hopdag --help's text above the command list.
const rootLong = `hopdag: declarative, multi-hop, DAG-driven component upgrades.

DIR is a catalog directory; "-" is the embedded sample catalog; oci://REF or
oci-layout://PATH[:TAG] is a catalog bundle (with --verify-key CERT). S is a
state directory, etcd://host:port/prefix or kube://namespace/name.
Data (plans, tables, JSON, YAML) goes to stdout; progress, logs, warnings
and errors go to stderr.

Exit status: 0 ok (run: also a run that stopped at its --until step, as
asked), 1 invalid input or failed run, 2 usage, 3 not finished (run: waiting
for approval; status: still running, waiting for approval, or stopped by
--until), 4 gone (status: it says running, but its coordinator's lease
expired: it died or was killed), 130 interrupted.`

// command is one command of hopdag: its arguments, what it does, one
// example, and its body, which returns the exit status.
type command struct {
	// args is what follows the command's name in its usage line.
	args string
	// short is the one line of the command list; summary says more (the
	// command's --help).
	short, summary string
	run            func(c *cli, ctx context.Context) int
	// example is the one example its --help shows.
	example string
	// noDir marks a command that takes no catalog directory.
	noDir bool
}

var commands = map[string]command{
	"validate": {args: "DIR", short: "report every catalog problem with file:line",
		summary: "report every catalog problem with file:line; exit 1 if any", run: (*cli).validate,
		example: "hopdag validate testdata/catalog"},
	"targets": {args: "DIR --from V", short: "versions reachable from V: hop count, next hop (--routes: whole route)",
		summary: "list the versions reachable from --from, one row each: the hop count, the next hop (NEXT) and why the target or its route is deprecated (NOTE); then the versions behind risks. The output grows linearly with the versions; --routes prints each whole route (ROUTE) instead of the next hop, which grows with their square on a long chain", run: (*cli).targets,
		example: "hopdag targets - --from v26.06-rc.2"},
	"plan": {args: "DIR --from V --to W", short: "the dry run: hops, batches, critical paths, checks",
		summary: "show the plan from --from to --to (the dry run of any executor; warns when hopdag run would refuse it: a rollback the components cannot do, and, given the values (--set) or on a catalog that needs none, a template that does not render or an object two components render)", run: (*cli).plan,
		example: "hopdag plan - --from v26.06-rc.2 --to v26.09 -o yaml"},
	"graph": {args: "DIR --from V --to W", short: "a hop's component graph as Mermaid, DOT, JSON or YAML",
		summary: "draw a hop's component graph", run: (*cli).graph,
		example: "hopdag graph - --from v26.06-rc.2 --to v26.09 --hop 1 -o dot"},
	"run": {args: "DIR --from V --to W", short: "run the upgrade (exec and manifest components; --simulate to simulate)",
		summary: "run the upgrade: exec components as commands, manifest and helm components against a cluster (--kubeconfig) or --apply-dir, or --simulate", run: (*cli).run,
		example: "hopdag run my-catalog --from v1.0 --to v1.1 --state /var/lib/hopdag --log-file upgrade.log"},
	"status": {args: "--state S", short: "the status of a run, from another terminal (--watch to follow it)",
		summary: "print the status of a run from its state; exit 0 succeeded, 1 failed, 3 not finished (running, waiting for approval, or stopped by --until), 4 its coordinator is gone\n" + statusExit, run: (*cli).status, noDir: true,
		example: "hopdag status --state /var/lib/hopdag --watch"},
	"abandon": {args: "--state S", short: "abandon a run: it will not resume",
		summary: "abandon a run so that it never resumes (asks first; --yes for scripts)", run: (*cli).abandon, noDir: true,
		example: "hopdag abandon --state /var/lib/hopdag --yes"},
	"rollback": {args: "DIR --from V --to W --state S --reason WHY", short: "roll the upgrade in --state back through its DAGs to where it started",
		summary: "roll the upgrade saved in --state back, whether it succeeded, failed or stopped partway: the components of each hop it changed are rolled back through the hop's DAG, dependents first, last hop first, to the version it started from (asks first; --yes for scripts). Give the catalog, --from and --to of the run, and the flags its components need (--kubeconfig, --set, ...): the rollback runs through the same runners. Exit 0 once rolled back, 1 when the rollback failed (run it again to retry)",
		run:     (*cli).rollback,
		example: "hopdag rollback my-catalog --from v1.0 --to v1.1 --state /var/lib/hopdag --reason \"v1.1 breaks the billing job\""},
	"approve": {args: "--state S STEP", short: "approve a gated step (HOP[/COMPONENT[/PHASE]]) of a run",
		summary: "approve a gated step (HOP[/COMPONENT[/PHASE]]) of the run saved in --state; run again to continue", run: (*cli).approve, noDir: true,
		example: "hopdag approve --state /var/lib/hopdag --by alice v26.09"},
	"version": {short: "the module version and VCS revision of this binary (or --version)",
		summary: "print the module version and VCS revision this binary was built from; (devel) when built from a checkout", run: (*cli).version, noDir: true,
		example: "hopdag version -o json"},
}

// commandNames are the commands in the order of hopdag --help.
var commandNames = []string{"validate", "targets", "plan", "graph", "run", "status", "abandon", "rollback", "approve", "version"}

// newCLI returns the cli of the command name with its flags defined in
// c.fs, which the command's cobra.Command parses.
func newCLI(e env, name string, cmd command) *cli {
	c := &cli{env: e, name: name, kube: builtinKube()}
	c.fs = pflag.NewFlagSet("hopdag "+name, pflag.ContinueOnError)
	c.fs.SortFlags = false
	if !cmd.noDir {
		// The catalog may be a bundle; the others take none (c.bundle nil).
		c.bundle = addBundleFlags(c.fs)
	}
	switch c.name {
	case "targets", "plan", "graph", "run", "rollback":
		c.from = c.fs.String("from", "", "version the system runs (required); on a catalog of several tracks, the state: TRACK=VERSION,... e.g. platform=13.01.0,kubernetes=v1.33.0")
		c.accept = c.fs.String("accept", "", "comma-separated risks to accept")
		c.addRouteFlags()
	}
	switch c.name {
	case "plan", "graph", "run", "rollback":
		c.to = c.fs.String("to", "", "version to upgrade to (required); on a catalog of several tracks, TRACK=VERSION,... (the tracks it names)")
	}
	switch c.name {
	case "validate":
		c.addOutput("text", "output format: text, json or yaml")
	case "targets":
		c.routes = c.fs.Bool("routes", false, "print each target's whole route (ROUTE) instead of its next hop (NEXT); on a long chain the output grows with the square of the versions")
		c.addOutput("text", "output format: text, json or yaml")
	case "plan":
		c.addOutput("text", "output format: text, json or yaml")
		c.planFlags()
	case "graph":
		c.addOutput("mermaid", "output format: mermaid, dot, json or yaml")
		c.hop = c.fs.Int("hop", 1, "which hop to draw, from 1")
	case "run":
		c.addOutput("text", "output format of the final status on stdout: text, json or yaml (progress goes to stderr)")
		c.simulate = c.fs.Bool("simulate", false, "simulate the runners instead of running commands and applying manifests")
		c.state = c.fs.String("state", "", "where the status lives: a directory, etcd://host:port/prefix or kube://namespace/name; a run resumes from it")
		c.speed = c.fs.Float64("speed", simulate.DefaultSpeed, "with --simulate: simulated seconds per real second")
		c.fail = c.fs.String("fail", "", "with --simulate: comma-separated components that fail on purpose")
		c.mode = c.fs.String("mode", "eager", "scheduling: eager or batch")
		c.runFlags()
		c.runStepFlags()
	case "rollback":
		c.addOutput("text", "output format of the final status on stdout: text, json or yaml (progress goes to stderr)")
		c.simulate = c.fs.Bool("simulate", false, "simulate the runners (the run in --state was simulated too)")
		c.state = c.fs.String("state", "", "where the status of the upgrade to roll back lives: a directory, etcd://host:port/prefix or kube://namespace/name (required)")
		c.speed = c.fs.Float64("speed", simulate.DefaultSpeed, "with --simulate: simulated seconds per real second")
		c.mode = c.fs.String("mode", "eager", "scheduling: eager or batch")
		c.rollbackFlags()
		c.runFlags()
	case "status":
		c.statusFlags()
	case "abandon":
		c.abandonFlags()
	case "approve":
		c.approveFlags()
	case "version":
		c.addOutput("text", "output format: text, json or yaml")
	case "rollout plan":
		c.rolloutPlanFlags()
	}
	return c
}

// addOutput defines -o/--output with its default and help.
func (c *cli) addOutput(def, usage string) {
	c.output = c.fs.StringP("output", "o", def, usage)
}

// runWith runs the command line args and returns its exit status.
func runWith(ctx context.Context, e env, args []string) int {
	code := exitOK
	root := newRoot(e, args, &code)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %s\n%s", cmd.CommandPath(), oneLine(cmd, err), usageHint(cmd.CommandPath()))
		return exitUsage
	}
	return code
}

// oneLine is cobra's or pflag's usage error in one line, naming the flag as
// typed and, for a Go-style -flag, the --flag it means; for an unknown
// command, the commands it may mean.
func oneLine(cmd *cobra.Command, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown command "); ok {
		name, _, _ = strings.Cut(name, " for ")
		msg = "unknown command " + name
		if s := cmd.SuggestionsFor(strings.Trim(name, `"`)); len(s) > 0 {
			msg += " (did you mean " + strings.Join(s, " or ") + "?)"
		}
		return msg
	}
	// pflag reads -from as the shorthands f, r, o, m.
	if _, rest, ok := strings.Cut(msg, "' in -"); ok && strings.HasPrefix(msg, "unknown shorthand flag: ") {
		name, _, _ := strings.Cut(rest, "=")
		if cmd.Flags().Lookup(name) != nil {
			return fmt.Sprintf("unknown flag -%s: long flags take two dashes, --%s", name, name)
		}
		return "unknown flag -" + rest
	}
	return strings.ReplaceAll(msg, "\n", " ")
}

// newRoot builds the command tree of one invocation: each command's
// cobra.Command parses the flags its cli defines (newCLI); its exit status
// lands in *code.
func newRoot(e env, args []string, code *int) *cobra.Command {
	root := &cobra.Command{
		Use:           "hopdag",
		Short:         "declarative, multi-hop, DAG-driven component upgrades",
		Long:          rootLong,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Suggestions go in the one-line error (oneLine).
		DisableSuggestions:         true,
		SuggestionsMinimumDistance: 2,
		Version:                    versionOf(buildInfo()).text(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// hopdag alone: the help, on stderr as it answers no question.
			cmd.SetOut(e.stderr)
			cmd.Help()
			*code = exitUsage
			return nil
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetIn(e.stdin)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	root.CompletionOptions.HiddenDefaultCmd = false
	for _, name := range commandNames {
		root.AddCommand(newCommand(e, name, commands[name], args, code))
	}
	root.AddCommand(newBundleCommand(e, code))
	root.AddCommand(newRolloutCommand(e, args, code))
	addCompletion(root)
	return root
}

// buildInfo is the binary's build information, nil without.
func buildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}

// newCommand is the cobra.Command of the command name.
func newCommand(e env, name string, spec command, args []string, code *int) *cobra.Command {
	c := newCLI(e, name, spec)
	c.args = args
	use := name[strings.LastIndex(name, " ")+1:] // rollout plan: plan
	if spec.args != "" {
		use += " " + spec.args
	}
	cmd := &cobra.Command{
		Use:     use,
		Short:   spec.short,
		Long:    "hopdag " + name + ": " + spec.summary,
		Example: "  " + spec.example,
		// The commands check their arguments themselves, with the usage
		// errors of each (after --log-format, which says how they print).
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			*code = c.start(cmd.Context(), spec, args)
			return nil
		},
	}
	cmd.Flags().AddFlagSet(c.fs)
	c.complete(cmd)
	return cmd
}

// start checks the positional arguments and the flags every catalog
// command needs, and runs the command under the interrupt guard.
func (c *cli) start(ctx context.Context, spec command, args []string) int {
	if ctx == nil {
		ctx = context.Background()
	}
	c.pos = args
	c.setLogFormat()
	if spec.noDir {
		return c.guard(ctx, spec)
	}
	if len(args) != 1 {
		return c.usageError("want exactly one catalog directory (or - for the sample catalog)")
	}
	c.dir = args[0]
	for _, f := range []struct {
		name string
		v    *string
	}{{"from", c.from}, {"to", c.to}} {
		if f.v != nil && *f.v == "" {
			return c.usageError("--" + f.name + " is required")
		}
	}
	if err := c.bundle.checkDir(c.dir); err != nil {
		return c.usageError(err.Error())
	}
	return c.guard(ctx, spec)
}

// outputIn checks -o against the formats the command prints.
func (c *cli) outputIn(formats ...string) int {
	if slices.Contains(formats, *c.output) {
		return exitOK
	}
	return c.usageError(fmt.Sprintf("-o %s: want %s", *c.output, orList(formats)))
}

// orList is "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// lines is stderr as the progress display, the heartbeat, the lines of
// commands and the text log share it: they write from their own
// goroutines (an observer's, a command's output copier), so through one
// lock unless stderr is an *os.File (each write one system call), and,
// once the progress bar is drawn on a terminal, above it (aboveBar). Set
// up on the command's goroutine before the run starts (setLogFormat).
func (c *cli) lines() io.Writer {
	if c.sharedErr == nil {
		var w io.Writer = c.stderr
		if _, ok := c.stderr.(*os.File); !ok && c.stderr != nil {
			w = &serialWriter{w: c.stderr}
		}
		c.sharedErr = &aboveBar{w: w, bar: &c.bar}
	}
	return c.sharedErr
}

// aboveBar is a writer of stderr's lines: written to w as they come, or,
// once a progress bar is on the terminal's last line (c.bar, set by
// progressObservers), through the Progress that draws it, which writes
// them above the bar rather than after it.
type aboveBar struct {
	w   io.Writer
	bar *atomic.Pointer[simulate.Progress]
}

func (a *aboveBar) Write(p []byte) (int, error) {
	if bar := a.bar.Load(); bar != nil {
		return bar.Write(p)
	}
	return a.w.Write(p)
}

// serialWriter writes to w under mu.
type serialWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *serialWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
