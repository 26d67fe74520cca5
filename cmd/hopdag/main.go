// Command hopdag validates catalogs, lists upgrade targets, shows plans and
// their graphs, and runs simulated upgrades.
//
//	hopdag validate DIR
//	hopdag targets  DIR --from V
//	hopdag plan     DIR --from V --to W [-o text|json|yaml] [--accept RISK,...]
//	hopdag graph    DIR --from V --to W [--hop N] [-o mermaid|dot]
//	hopdag run      DIR --from V --to W --simulate [--state DIR] [--speed N] [--fail C,...] [--mode eager|batch] [--until STEP] [--gate HOP,...]
//	hopdag approve  --state DIR [--by WHO] STEP
//
// DIR is a catalog directory; "-" means the embedded sample catalog.
//
// Exit status: 0 ok; 1 invalid input (a catalog problem, no route, an
// unknown version) or a failed run; 2 usage (unknown command, bad flags);
// 3 a run waiting for approval.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"

	"github.com/hopdag/hopdag"
	"github.com/hopdag/hopdag/internal/simulate"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// Exit codes.
const (
	exitOK      = 0
	exitInvalid = 1
	exitUsage   = 2
)

const usage = `hopdag: declarative, multi-hop, DAG-driven component upgrades.

Usage:
  hopdag validate DIR                          report every catalog problem with file:line
  hopdag targets  DIR --from V                 versions reachable from V, with hop counts
  hopdag plan     DIR --from V --to W          the dry run: hops, batches, critical paths, checks
  hopdag graph    DIR --from V --to W          a hop's component graph as Mermaid or DOT
  hopdag run      DIR --from V --to W --simulate   run the plan with simulated runners
  hopdag approve  --state DIR STEP             approve a gated step of the run saved in DIR

DIR is a catalog directory; "-" is the embedded sample catalog.
Run "hopdag COMMAND -h" for a command's flags.

Exit status: 0 ok, 1 invalid input or failed run, 2 usage.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

type command struct {
	summary string
	run     func(c *cli, ctx context.Context) int
}

var commands = map[string]command{
	"validate": {"report every catalog problem with file:line; exit 1 if any", (*cli).validate},
	"targets":  {"list the versions reachable from --from, with hop counts", (*cli).targets},
	"plan":     {"show the plan from --from to --to (the dry run)", (*cli).plan},
	"graph":    {"draw a hop's component graph", (*cli).graph},
	"run":      {"run the plan with simulated runners (--simulate)", (*cli).run},
	"approve":  {"approve a gated step (HOP[/COMPONENT[/PHASE]]) of the run saved in --state", (*cli).approve},
}

// cli holds one invocation's flags and streams.
type cli struct {
	name           string
	fs             *flag.FlagSet
	stdout, stderr io.Writer
	dir            string
	from, to       *string
	output         *string
	accept         *string
	hop            *int
	simulate       *bool
	state          *string
	speed          *float64
	fail, mode     *string
	steps          stepFlags // approve.go
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "hopdag: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	c := &cli{name: args[0], stdout: stdout, stderr: stderr}
	c.fs = flag.NewFlagSet("hopdag "+args[0], flag.ContinueOnError)
	c.fs.SetOutput(stderr)
	c.fs.Usage = func() {
		fmt.Fprintf(stderr, "hopdag %s DIR: %s\n\nFlags:\n", c.name, cmd.summary)
		c.fs.PrintDefaults()
	}
	switch c.name {
	case "targets", "plan", "graph", "run":
		c.from = c.fs.String("from", "", "version the system runs (required)")
		c.accept = c.fs.String("accept", "", "comma-separated risks to accept")
	}
	switch c.name {
	case "plan", "graph", "run":
		c.to = c.fs.String("to", "", "version to upgrade to (required)")
	}
	switch c.name {
	case "plan":
		c.output = c.fs.String("o", "text", "output format: text, json or yaml")
	case "graph":
		c.output = c.fs.String("o", "mermaid", "output format: mermaid or dot")
		c.hop = c.fs.Int("hop", 1, "which hop to draw, from 1")
	case "run":
		c.simulate = c.fs.Bool("simulate", false, "simulate the runners (required: real runners are wired by embedding the library)")
		c.state = c.fs.String("state", "", "state directory (a state.File store): the status is saved there as the run goes, and a run resumes from it")
		c.speed = c.fs.Float64("speed", simulate.DefaultSpeed, "simulated seconds per real second")
		c.fail = c.fs.String("fail", "", "comma-separated components that fail on purpose")
		c.mode = c.fs.String("mode", "eager", "scheduling: eager or batch")
		c.runStepFlags()
	case "approve":
		c.approveFlags()
	}
	// DIR may come before or after the flags.
	rest := args[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		c.dir, rest = rest[0], rest[1:]
	}
	if err := c.fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if c.dir == "" && c.fs.NArg() > 0 {
		c.dir = c.fs.Arg(0)
		if err := c.fs.Parse(c.fs.Args()[1:]); err != nil {
			return exitUsage
		}
	}
	if c.dir == "" || c.fs.NArg() > 0 {
		return c.usageError("want exactly one catalog directory (or - for the sample catalog)")
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"from", c.from}, {"to", c.to}} {
		if f.v != nil && *f.v == "" {
			return c.usageError("--" + f.name + " is required")
		}
	}
	return cmd.run(c, ctx)
}

func (c *cli) usageError(msg string) int {
	fmt.Fprintf(c.stderr, "hopdag %s: %s\n", c.name, msg)
	c.fs.Usage()
	return exitUsage
}

func (c *cli) fail1(err error) int {
	fmt.Fprintf(c.stderr, "hopdag %s: %v\n", c.name, err)
	return exitInvalid
}

func (c *cli) catalog() (*release.Catalog, error) {
	if c.dir == "-" {
		return release.Load(hopdag.SampleCatalog())
	}
	return release.LoadDir(c.dir)
}

func (c *cli) versions() (from, to release.Version, err error) {
	if from, err = release.ParseVersion(*c.from); err != nil {
		return
	}
	if c.to != nil {
		to, err = release.ParseVersion(*c.to)
	}
	return
}

func (c *cli) pathOptions() []path.Option {
	return []path.Option{path.AcceptRisks(simulate.List(*c.accept)...)}
}

func (c *cli) validate(context.Context) int {
	cat, err := c.catalog()
	var le *release.LoadError
	if errors.As(err, &le) {
		for _, p := range le.Problems {
			fmt.Fprintln(c.stdout, p.Error())
		}
		fmt.Fprintf(c.stderr, "hopdag validate: %d %s\n", len(le.Problems), plural(len(le.Problems), "problem"))
		return exitInvalid
	}
	if err != nil {
		return c.fail1(err)
	}
	rules := 0
	for _, p := range cat.Paths {
		rules += len(p.Rules)
	}
	fmt.Fprintf(c.stdout, "%s: ok: %d releases, %d component versions, %d upgrade rules\n", c.dir, len(cat.Releases), len(cat.Components), rules)
	return exitOK
}

func (c *cli) targets(context.Context) int {
	cat, err := c.catalog()
	if err != nil {
		return c.fail1(err)
	}
	from, _, err := c.versions()
	if err != nil {
		return c.fail1(err)
	}
	ts, err := path.Targets(cat, from, c.pathOptions()...)
	if err != nil {
		return c.fail1(err)
	}
	if len(ts) == 0 {
		fmt.Fprintf(c.stdout, "no version is reachable from %s\n", from)
		return exitOK
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tHOPS\tROUTE")
	for _, t := range ts {
		hops := []string{from.Original()}
		for _, h := range t.Route.Hops {
			hops = append(hops, h.To.Original())
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", t.Version, t.Hops, strings.Join(hops, " -> "))
	}
	tw.Flush()
	return exitOK
}

func (c *cli) newPlan() (*runner.Plan, error) {
	cat, err := c.catalog()
	if err != nil {
		return nil, err
	}
	from, to, err := c.versions()
	if err != nil {
		return nil, err
	}
	return runner.NewPlan(cat, from, to, runner.PathOptions(c.pathOptions()...))
}

func (c *cli) plan(context.Context) int {
	switch *c.output {
	case "text", "json", "yaml":
	default:
		return c.usageError(fmt.Sprintf("-o must be text, json or yaml, got %q", *c.output))
	}
	p, err := c.newPlan()
	if err != nil {
		return c.fail1(err)
	}
	switch *c.output {
	case "json":
		data, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return c.fail1(err)
		}
		fmt.Fprintln(c.stdout, string(data))
	case "yaml":
		enc := yaml.NewEncoder(c.stdout)
		enc.SetIndent(2)
		if err := enc.Encode(p); err != nil {
			return c.fail1(err)
		}
		enc.Close()
	default:
		fmt.Fprint(c.stdout, p.String())
	}
	return exitOK
}

func (c *cli) graph(context.Context) int {
	if *c.output != "mermaid" && *c.output != "dot" {
		return c.usageError(fmt.Sprintf("-o must be mermaid or dot, got %q", *c.output))
	}
	p, err := c.newPlan()
	if err != nil {
		return c.fail1(err)
	}
	if *c.hop < 1 || *c.hop > len(p.Hops) {
		return c.fail1(fmt.Errorf("--hop %d: the plan has %d %s", *c.hop, len(p.Hops), plural(len(p.Hops), "hop")))
	}
	g := p.Hops[*c.hop-1].Graph
	if *c.output == "dot" {
		fmt.Fprint(c.stdout, g.DOT())
	} else {
		fmt.Fprint(c.stdout, g.Mermaid())
	}
	return exitOK
}

func (c *cli) run(ctx context.Context) int {
	if !*c.simulate {
		return c.usageError("only simulated runs are built in: pass --simulate (real runners are wired by embedding the library, see README)")
	}
	mode, err := simulate.ParseMode(*c.mode)
	if err != nil {
		return c.usageError(err.Error())
	}
	cat, err := c.catalog()
	if err != nil {
		return c.fail1(err)
	}
	from, to, err := c.versions()
	if err != nil {
		return c.fail1(err)
	}
	st, err := simulate.Run(ctx, simulate.Upgrade{
		Catalog: cat, From: from, To: to, Accept: simulate.List(*c.accept), StateDir: *c.state, Until: c.until(), Gates: c.gates(),
		Config: simulate.Config{Speed: *c.speed, Fail: simulate.List(*c.fail), Mode: mode, Terminal: simulate.IsTerminal(c.stdout)},
	}, c.stdout)
	if code, ok := c.held(st, err); ok {
		return code
	}
	if err != nil {
		return c.fail1(err)
	}
	if st.Phase != runner.Succeeded {
		return exitInvalid
	}
	return exitOK
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
