// Command hopdag validates catalogs, lists upgrade targets, shows plans and
// their graphs, runs upgrades (for real, or simulated), and inspects or
// abandons a run from its state.
//
//	hopdag validate DIR
//	hopdag targets  DIR --from V [--routes] [--accept RISK,...] [--channel C] [--prereleases]
//	hopdag plan     DIR --from V --to W [-o text|json|yaml] [--accept RISK,...] [--channel C] [--prereleases] [--kubeconfig K]
//	hopdag graph    DIR --from V --to W [--hop N] [-o mermaid|dot|json]
//	hopdag run      DIR --from V --to W [--state S] [--apply-dir D] [--log-file F] [--simulate ...]
//	hopdag status   --state S [-o table|json|yaml] [--watch]
//	hopdag abandon  --state S [--yes] [--force]
//	hopdag approve  --state S [--by WHO] [--log-file F] STEP
//	hopdag completion bash|zsh
//	hopdag version [-o text|json|yaml]      (or hopdag --version)
//
// DIR is a catalog directory; "-" means the embedded sample catalog; a
// bundle reference (oci://REF, oci-layout://PATH[:TAG]) pulls it. See
// "hopdag bundle" (bundle.go) for push, pull, export and copy. S is a
// state directory, etcd://host:port/prefix or kube://namespace/name. V and W are versions, or
// states across tracks: --from platform=13.01.0,kubernetes=v1.33.0 --to
// platform=27.03.0.
//
// Exit status: 0 ok; 1 invalid input (a catalog problem, no route, an
// unknown version), a failed run, or a run that is not running and did not
// succeed (status); 2 usage (unknown command, bad flags); 3 the run is
// not finished: stopped at a gate waiting for approval (run), or still
// running, waiting for approval or stopped by --until (status); 4 the
// status says running but no coordinator holds its
// lease any more: it died or was killed (status); 130 interrupted (SIGINT
// or SIGTERM: the run stopped cleanly, or was killed by a second signal).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"

	"github.com/hopdag/hopdag"
	"github.com/hopdag/hopdag/bundle"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/simulate"
)

// Exit codes.
const (
	exitOK      = 0
	exitInvalid = 1
	exitUsage   = 2
	// exitRunning: hopdag status of a run that has not finished.
	exitRunning = 3
	// exitInterrupted: SIGINT or SIGTERM stopped the command (128+SIGINT,
	// as shells report a Ctrl-C).
	exitInterrupted = 130
)

const usage = `hopdag: declarative, multi-hop, DAG-driven component upgrades.

Usage:
  hopdag validate DIR                          report every catalog problem with file:line
  hopdag targets  DIR --from V                 versions reachable from V: hop count, next hop (--routes: whole route)
  hopdag plan     DIR --from V --to W          the dry run: hops, batches, critical paths, checks
  hopdag graph    DIR --from V --to W          a hop's component graph as Mermaid, DOT or JSON
  hopdag run      DIR --from V --to W          run the upgrade (exec and manifest components; --simulate to simulate)
  hopdag status   --state S                    the status of a run, from another terminal (--watch to follow it)
  hopdag abandon  --state S                    abandon a run: it will not resume
  hopdag approve  --state S STEP               approve a gated step (HOP[/COMPONENT[/PHASE]]) of a run
  hopdag completion bash|zsh                   a shell completion script
  hopdag version                               the module version and VCS revision of this binary (or --version)

  hopdag bundle   push|pull|export|copy|keygen   catalogs as OCI artifacts (hopdag bundle -h)

DIR is a catalog directory; "-" is the embedded sample catalog; oci://REF or
oci-layout://PATH[:TAG] is a catalog bundle (with --verify-key CERT). S is a
state directory, etcd://host:port/prefix or kube://namespace/name.
Run "hopdag COMMAND -h" for a command's flags and an example.

Exit status: 0 ok (run: also a run that stopped at its --until step, as
asked), 1 invalid input or failed run, 2 usage, 3 not finished (run: waiting
for approval; status: still running, waiting for approval, or stopped by
--until), 4 gone (status: it says running, but its coordinator's lease
expired: it died or was killed), 130 interrupted.
`

func main() {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	os.Exit(runWith(context.Background(), env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, signals: signals, exit: os.Exit}, os.Args[1:]))
}

type command struct {
	summary string
	run     func(c *cli, ctx context.Context) int
	// example is the one example its -h shows.
	example string
	// noDir marks a command that takes no catalog directory.
	noDir bool
}

var commands = map[string]command{
	"validate": {summary: "report every catalog problem with file:line; exit 1 if any", run: (*cli).validate,
		example: "hopdag validate testdata/catalog"},
	"targets": {summary: "list the versions reachable from --from, one row each: the hop count, the next hop (NEXT) and why the target or its route is deprecated (NOTE); then the versions behind risks. The output grows linearly with the versions; --routes prints each whole route (ROUTE) instead of the next hop, which grows with their square on a long chain", run: (*cli).targets,
		example: "hopdag targets - --from v26.06-rc.2"},
	"plan": {summary: "show the plan from --from to --to (the dry run of any executor; warns when hopdag run would refuse it: inline components, a rollback the components cannot do, and, given the values (--set) or on a catalog that needs none, a template that does not render or an object two components render)", run: (*cli).plan,
		example: "hopdag plan - --from v26.06-rc.2 --to v26.09 -o yaml"},
	"graph": {summary: "draw a hop's component graph", run: (*cli).graph,
		example: "hopdag graph - --from v26.06-rc.2 --to v26.09 --hop 1 -o dot"},
	"run": {summary: "run the upgrade: exec components as commands, manifest and helm components against a cluster (--kubeconfig) or --apply-dir, or --simulate", run: (*cli).run,
		example: "hopdag run my-catalog --from v1.0 --to v1.1 --state /var/lib/hopdag --log-file upgrade.log"},
	"status": {summary: "print the status of a run from its state; exit 0 succeeded, 1 failed, 3 not finished (running, waiting for approval, or stopped by --until), 4 its coordinator is gone", run: (*cli).status, noDir: true,
		example: "hopdag status --state /var/lib/hopdag --watch"},
	"abandon": {summary: "abandon a run so that it never resumes (asks first; --yes for scripts)", run: (*cli).abandon, noDir: true,
		example: "hopdag abandon --state /var/lib/hopdag --yes"},
	"approve": {summary: "approve a gated step (HOP[/COMPONENT[/PHASE]]) of the run saved in --state; run again to continue", run: (*cli).approve, noDir: true,
		example: "hopdag approve --state /var/lib/hopdag --by alice v26.09"},
	"completion": {summary: "print a bash or zsh completion script", run: (*cli).completion, noDir: true,
		example: `eval "$(hopdag completion bash)"   # or: hopdag completion zsh > "${fpath[1]}/_hopdag"`},
	"version": {summary: "print the module version and VCS revision this binary was built from; (devel) when built from a checkout", run: (*cli).version, noDir: true,
		example: "hopdag version -o json"},
}

// env is what a command reads and writes besides its arguments.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// signals delivers SIGINT and SIGTERM (nil: none arrive).
	signals <-chan os.Signal
	// exit ends the process at once (a second interrupt); nil in tests
	// that send none.
	exit func(code int)
}

// cli holds one invocation's flags and streams.
type cli struct {
	env
	name       string
	args       []string
	fs         *flag.FlagSet
	dir        string
	from, to   *string
	output     *string
	accept     *string
	routes     *bool // targets: print whole routes
	hop        *int
	simulate   *bool
	state      *string
	speed      *float64
	fail, mode *string
	// The flags of run, status, abandon and completion (run.go, status.go,
	// abandon.go, completion.go).
	rf   *runFlags
	sf   *statusFlags
	af   *abandonFlags
	kf   *kubeFlags
	pf   *planFlags
	kube kubeWiring
	// commands is the command table (for completion).
	commands map[string]command
	bundle   *bundleFlags // bundle.go; nil for a command without a catalog
	rtf      routeFlags   // route.go
	steps    stepFlags    // approve.go
	set      setFlag      // --set of run and plan (values.go)
	// log is the logger of --log-format, json whether it is json
	// (logformat.go); set before the command runs.
	log  *slog.Logger
	json bool
	// executing is set once run hands the plan to the executor: from
	// then on an interrupt stops running components (interrupt.go).
	executing atomic.Bool
}

// run is runWith without input or signals, as tests call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWith(ctx, env{stdin: strings.NewReader(""), stdout: stdout, stderr: stderr}, args)
}

func runWith(ctx context.Context, e env, args []string) int {
	stderr := e.stderr
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" {
		args = append([]string{"version"}, args[1:]...)
	}
	if args[0] == "bundle" {
		return runBundle(ctx, args[1:], e.stdout, stderr)
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "hopdag: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	c := newCLI(e, args[0], cmd)
	c.args, c.commands = args, commands
	if cmd.noDir {
		if err := c.fs.Parse(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return exitOK
			}
			return exitUsage
		}
		c.setLogFormat()
		return c.guard(ctx, cmd)
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
	c.setLogFormat()
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
	if err := c.bundle.checkDir(c.dir); err != nil {
		return c.usageError(err.Error())
	}
	return c.guard(ctx, cmd)
}

// newCLI returns the cli of the command name with its flags defined.
func newCLI(e env, name string, cmd command) *cli {
	stderr := e.stderr
	c := &cli{env: e, name: name, kube: builtinKube()}
	c.fs = flag.NewFlagSet("hopdag "+name, flag.ContinueOnError)
	c.fs.SetOutput(stderr)
	if !cmd.noDir {
		// The catalog may be a bundle; the others take none (c.bundle nil).
		c.bundle = addBundleFlags(c.fs)
	}
	c.fs.Usage = func() {
		what := " DIR"
		if cmd.noDir {
			what = ""
		}
		fmt.Fprintf(stderr, "hopdag %s%s: %s\n\nExample:\n  %s\n\nFlags:\n", c.name, what, cmd.summary, cmd.example)
		c.fs.PrintDefaults()
	}
	switch c.name {
	case "targets", "plan", "graph", "run":
		c.from = c.fs.String("from", "", "version the system runs (required); on a catalog of several tracks, the state: TRACK=VERSION,... e.g. platform=13.01.0,kubernetes=v1.33.0")
		c.accept = c.fs.String("accept", "", "comma-separated risks to accept")
		c.addRouteFlags()
	}
	if c.name == "targets" {
		c.routes = c.fs.Bool("routes", false, "print each target's whole route (ROUTE) instead of its next hop (NEXT); on a long chain the output grows with the square of the versions")
	}
	switch c.name {
	case "plan", "graph", "run":
		c.to = c.fs.String("to", "", "version to upgrade to (required); on a catalog of several tracks, TRACK=VERSION,... (the tracks it names)")
	}
	switch c.name {
	case "plan":
		c.output = c.fs.String("o", "text", "output format: text, json or yaml")
		c.planFlags()
	case "graph":
		c.output = c.fs.String("o", "mermaid", "output format: mermaid, dot or json")
		c.hop = c.fs.Int("hop", 1, "which hop to draw, from 1")
	case "run":
		c.simulate = c.fs.Bool("simulate", false, "simulate the runners instead of running commands and applying manifests")
		c.state = c.fs.String("state", "", "where the status lives: a directory, etcd://host:port/prefix or kube://namespace/name; a run resumes from it")
		c.speed = c.fs.Float64("speed", simulate.DefaultSpeed, "with --simulate: simulated seconds per real second")
		c.fail = c.fs.String("fail", "", "with --simulate: comma-separated components that fail on purpose")
		c.mode = c.fs.String("mode", "eager", "scheduling: eager or batch")
		c.runFlags()
		c.runStepFlags()
	case "status":
		c.statusFlags()
	case "abandon":
		c.abandonFlags()
	case "approve":
		c.approveFlags()
	case "version":
		c.output = c.fs.String("o", "text", "output format: text, json or yaml")
	}
	return c
}

func (c *cli) usageError(msg string) int {
	if c.json {
		c.log.Error(msg)
		return exitUsage
	}
	fmt.Fprintf(c.stderr, "hopdag %s: %s\n", c.name, msg)
	c.fs.Usage()
	return exitUsage
}

func (c *cli) fail1(err error) int {
	if u, ok := errors.AsType[*usageProblem](err); ok {
		return c.usageError(u.msg)
	}
	c.errorf("%s\n", message(err))
	return exitInvalid
}

func (c *cli) catalog() (*release.Catalog, error) {
	if bundle.IsReference(c.dir) {
		return c.bundle.catalog(c.dir, c.stderr)
	}
	if c.dir == "-" {
		return release.Load(hopdag.SampleCatalog())
	}
	return release.LoadDir(c.dir)
}

func (c *cli) pathOptions() []path.Option {
	return append([]path.Option{path.AcceptRisks(simulate.List(*c.accept)...)}, c.routeOptions()...)
}

func (c *cli) validate(context.Context) int {
	cat, err := c.catalog()
	var le *release.LoadError
	if errors.As(err, &le) {
		for _, p := range le.Problems {
			fmt.Fprintln(c.stdout, p.Error())
		}
		fmt.Fprintf(c.stderr, "hopdag validate: %d %s\n", le.Total(), plural(le.Total(), "problem"))
		return exitInvalid
	}
	if err != nil {
		return c.fail1(err)
	}
	rules := 0
	for _, p := range cat.Paths {
		rules += len(p.Rules)
	}
	// Warnings (what the catalog says that does nothing) come first, each
	// with its file:line, as problems do; they do not fail validate.
	ws := cat.Warnings()
	for _, w := range ws {
		fmt.Fprintln(c.stdout, "warning: "+w.Error())
	}
	fmt.Fprintf(c.stdout, "%s: ok: %d %s, %d %s, %d %s", c.dir, len(cat.Releases), plural(len(cat.Releases), "release"),
		len(cat.Components), plural(len(cat.Components), "component version"), rules, plural(rules, "upgrade rule"))
	if len(ws) > 0 {
		fmt.Fprintf(c.stdout, " (%d %s)", len(ws), plural(len(ws), "warning"))
	}
	fmt.Fprintln(c.stdout)
	return exitOK
}

// targets lists every state the system at --from can move to (a version
// of its one track, or of each track of a state, the other tracks moving
// as needed), then those behind risks (riskyTargets); across tracks, with
// a TRACK column.
func (c *cli) targets(context.Context) int {
	cat, err := c.catalog()
	if err != nil {
		return c.fail1(err)
	}
	if err := c.checkAccept(cat); err != nil {
		return c.fail1(err)
	}
	from, _, err := c.states()
	if err != nil {
		return c.fail1(err)
	}
	list := func(opts []path.Option) ([]target, error) {
		ts, err := path.Targets(cat, from, opts...)
		if err != nil {
			return nil, err
		}
		out := make([]target, len(ts))
		for i, t := range ts {
			out[i] = target{track: t.Track, version: t.Version, hops: t.Hops, deprecated: t.Deprecated, next: t.Next, last: t.Last, route: t.Route}
		}
		return out, nil
	}
	rows, err := list(c.pathOptions())
	// Nothing reachable (from the newest version, say) is an answer.
	if nr, ok := errors.AsType[*path.NoRouteError](err); ok && nr.To.IsZero() && len(nr.ToState) == 0 {
		fmt.Fprintln(c.stdout, strings.TrimPrefix(message(err), "path: "))
		return exitOK
	}
	if err != nil {
		return c.fail1(err)
	}
	tracks := slices.ContainsFunc(rows, func(t target) bool { return t.track != "" })
	c.printTargets(rows, tracks)
	c.riskyTargets(cat, list, rows, tracks)
	return exitOK
}

// target is one row of hopdag targets: a version reachable from --from.
type target struct {
	// track is the track of version for --from a state, "" for one track.
	track      string
	version    release.Version
	hops       int
	deprecated int // deprecated edges and versions on the route
	// next and last are the route's first and last hops, route the whole
	// route (built only for --routes and the risks of a target behind
	// them).
	next, last func() *path.Hop
	route      func() *path.Route
}

// targetLister lists the targets reachable with opts.
type targetLister func(opts []path.Option) ([]target, error)

// printTargets writes the table of targets: with tracks, a TRACK column.
// NEXT is the first hop of each route, so the table grows linearly with the
// targets; with --routes, ROUTE is the whole route instead (on a long chain,
// quadratic), last so that no row is padded to the longest route. NOTE says
// why a target or its route is deprecated.
func (c *cli) printTargets(rows []target, tracks bool) {
	// A row without a note would end in the padding of its last cell;
	// trimWriter writes in small pieces, bufio in large ones.
	out := bufio.NewWriter(c.stdout)
	defer out.Flush()
	tw := tabwriter.NewWriter(&trimWriter{w: out}, 0, 0, 2, ' ', 0)
	col := ""
	if tracks {
		col = "TRACK\t"
	}
	if *c.routes {
		fmt.Fprintf(tw, "%sVERSION\tHOPS\tNOTE\tROUTE\n", col)
	} else {
		fmt.Fprintf(tw, "%sVERSION\tHOPS\tNEXT\tNOTE\n", col)
	}
	for _, t := range rows {
		if tracks {
			fmt.Fprintf(tw, "%s\t", t.track)
		}
		if *c.routes {
			r := t.route()
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", t.version.Original(), t.hops, deprecationNote(t, r.Hops), routeCell(t, r, tracks))
		} else {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", t.version.Original(), t.hops, routeCell(t, nil, tracks), deprecationNote(t, nil))
		}
	}
	tw.Flush()
}

// routeCell is the NEXT cell (the first hop: "[track ]FROM -> TO") or, given
// the whole route r (--routes), the ROUTE cell.
func routeCell(t target, r *path.Route, tracks bool) string {
	if r == nil {
		h := t.next()
		if tracks {
			return h.Track + " " + h.From.Original() + " -> " + h.To.Original()
		}
		return h.From.Original() + " -> " + h.To.Original()
	}
	steps := []string{r.From.Original()}
	if r.FromState != nil {
		steps[0] = r.FromState.String()
	}
	for _, h := range r.Hops {
		if tracks {
			steps = append(steps, h.Track+" "+h.To.Original())
		} else {
			steps = append(steps, h.To.Original())
		}
	}
	return strings.Join(steps, " -> ")
}

// trimWriter drops the spaces that end a line, as it streams to w.
type trimWriter struct {
	w      io.Writer
	spaces int // held back: they end the line, or come before more text
}

func (t *trimWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexAny(p, " \n")
		if i < 0 {
			i = len(p)
		}
		if i > 0 {
			if err := t.text(p[:i]); err != nil {
				return 0, err
			}
		}
		if i == len(p) {
			break
		}
		if p[i] == '\n' {
			t.spaces = 0
			if _, err := t.w.Write(p[i : i+1]); err != nil {
				return 0, err
			}
			p = p[i+1:]
			continue
		}
		j := i
		for j < len(p) && p[j] == ' ' {
			j++
		}
		t.spaces += j - i
		p = p[j:]
	}
	return n, nil
}

// text writes the held-back spaces, then b.
func (t *trimWriter) text(b []byte) error {
	if t.spaces > 0 {
		if _, err := io.WriteString(t.w, strings.Repeat(" ", t.spaces)); err != nil {
			return err
		}
		t.spaces = 0
	}
	_, err := t.w.Write(b)
	return err
}

// deprecationNote says why a target or its route is deprecated; "" for a
// clean target. With the whole route (hops, --routes): each deprecated edge
// and version it passes through. Without: those of the next and last hops,
// and how many more the route passes through.
func deprecationNote(t target, hops []path.Hop) string {
	if t.deprecated == 0 {
		return ""
	}
	whole := hops != nil
	if !whole {
		if n, l := t.next(), t.last(); t.hops == 1 {
			hops = []path.Hop{*l}
		} else {
			hops = []path.Hop{*n, *l}
		}
	}
	var notes []string
	shown := 0
	for i, h := range hops {
		if i == len(hops)-1 && !whole && len(hops) == 2 && t.hops > 2 {
			notes = append(notes, "")
		}
		if h.Deprecated != "" {
			notes = append(notes, fmt.Sprintf("edge %s -> %s deprecated: %q", h.From.Original(), h.To.Original(), h.Deprecated))
			shown++
		}
		if h.ToDeprecated == "" {
			continue
		}
		shown++
		if i == len(hops)-1 {
			notes = append(notes, fmt.Sprintf("deprecated: %q", h.ToDeprecated))
		} else {
			notes = append(notes, fmt.Sprintf("via deprecated %s: %q", h.To.Original(), h.ToDeprecated))
		}
	}
	// The placeholder between the next and the last hop says what the
	// hops between them hold.
	for i, n := range notes {
		if n != "" {
			continue
		}
		if more := t.deprecated - shown; more > 0 {
			notes[i] = fmt.Sprintf("%d more deprecated on the route (--routes shows them)", more)
		} else {
			notes = slices.Delete(notes, i, i+1)
		}
		break
	}
	return strings.Join(notes, "; ")
}

// riskyTargets prints the versions reachable only by accepting risks (the
// ClusterVersion's conditionalUpdates), each with the risks its route
// would take: the targets list gives when it accepts every risk of the
// catalog, less those reachable as the flags stand (rows). One-track and
// state targets both print it; with tracks, a TRACK column.
func (c *cli) riskyTargets(cat *release.Catalog, list targetLister, rows []target, tracks bool) {
	accepted := simulate.List(*c.accept)
	var all []string
	for _, p := range cat.Paths {
		for _, r := range p.Rules {
			for _, risk := range r.Risks {
				if !slices.Contains(all, risk.Name) && !slices.Contains(accepted, risk.Name) {
					all = append(all, risk.Name)
				}
			}
		}
	}
	if len(all) == 0 {
		return
	}
	more, err := list(append(c.pathOptions(), path.AcceptRisks(all...)))
	if err != nil {
		return
	}
	reachable := map[string]bool{}
	for _, t := range rows {
		reachable[t.track+"="+t.version.Canonical()] = true
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	header := false
	for _, t := range more {
		if reachable[t.track+"="+t.version.Canonical()] {
			continue
		}
		var risks []string
		for _, h := range t.route().Hops {
			for _, r := range h.Risks {
				if !slices.Contains(accepted, r.Name) && !slices.Contains(risks, r.Name) {
					risks = append(risks, r.Name)
				}
			}
		}
		if !header {
			fmt.Fprintln(c.stdout, "\nBehind risks (plan them with --accept NAME,...):")
			if tracks {
				fmt.Fprintln(tw, "TRACK\tVERSION\tHOPS\tRISKS")
			} else {
				fmt.Fprintln(tw, "VERSION\tHOPS\tRISKS")
			}
			header = true
		}
		if tracks {
			fmt.Fprintf(tw, "%s\t", t.track)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", t.version, t.hops, strings.Join(risks, ", "))
	}
	tw.Flush()
}

func (c *cli) newPlan() (*runner.Plan, error) {
	cat, err := c.catalog()
	if err != nil {
		return nil, err
	}
	p, err := c.planOf(cat)
	if p != nil {
		p.Catalog = c.bundle.source
	}
	return p, err
}

func (c *cli) plan(ctx context.Context) int {
	switch *c.output {
	case "text", "json", "yaml":
	default:
		return c.usageError(fmt.Sprintf("-o must be text, json or yaml, got %q", *c.output))
	}
	if c.clusterGiven() && *c.output != "text" {
		return c.usageError("--kubeconfig and --context add the cluster dry run to the text plan: leave out -o " + *c.output)
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
	c.warnRun(p)
	if c.clusterGiven() {
		return c.planDryRun(ctx, p)
	}
	return exitOK
}

func (c *cli) graph(context.Context) int {
	switch *c.output {
	case "mermaid", "dot", "json":
	default:
		return c.usageError(fmt.Sprintf("-o must be mermaid, dot or json, got %q", *c.output))
	}
	p, err := c.newPlan()
	if err != nil {
		return c.fail1(err)
	}
	if *c.hop < 1 || *c.hop > len(p.Hops) {
		return c.fail1(fmt.Errorf("--hop %d: the plan has %d %s", *c.hop, len(p.Hops), plural(len(p.Hops), "hop")))
	}
	g := p.Hops[*c.hop-1].Graph
	switch *c.output {
	case "dot":
		fmt.Fprint(c.stdout, g.DOT())
	case "json":
		data, err := json.MarshalIndent(g, "", "  ")
		if err != nil {
			return c.fail1(err)
		}
		fmt.Fprintln(c.stdout, string(data))
	default:
		fmt.Fprint(c.stdout, g.Mermaid())
	}
	return exitOK
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
