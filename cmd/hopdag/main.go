// Command hopdag validates catalogs, lists upgrade targets, shows plans and
// their graphs, runs upgrades (for real, or simulated), and inspects or
// abandons a run from its state. Its command line follows kubectl's and
// helm's conventions (cobra and pflag): --flag spelling, help on stdout,
// one-line usage errors, -o json|yaml on every command that prints data.
//
//	hopdag validate DIR [-o json|yaml]
//	hopdag targets  DIR --from V [--routes] [--accept RISK,...] [--channel C] [--prereleases] [-o json|yaml]
//	hopdag plan     DIR --from V --to W [-o text|json|yaml] [--accept RISK,...] [--channel C] [--prereleases] [--kubeconfig K]
//	hopdag graph    DIR --from V --to W [--hop N] [-o mermaid|dot|json|yaml]
//	hopdag run      DIR --from V --to W [--state S] [--apply-dir D] [--log-file F] [--simulate ...] [-o json|yaml]
//	hopdag status   --state S [-o table|json|yaml] [--watch]
//	hopdag abandon  --state S [--yes] [--force]
//	hopdag approve  --state S [--by WHO] [--log-file F] STEP
//	hopdag completion bash|zsh|fish|powershell
//	hopdag version [-o text|json|yaml]      (or hopdag --version)
//
// DIR is a catalog directory; "-" means the embedded sample catalog; a
// bundle reference (oci://REF, oci-layout://PATH[:TAG]) pulls it. See
// "hopdag bundle" (bundle.go) for push, pull, export and copy. S is a
// state directory, etcd://host:port/prefix or kube://namespace/name. V and W are versions, or
// states across tracks: --from platform=13.01.0,kubernetes=v1.33.0 --to
// platform=27.03.0.
//
// Each command lives in its own file (validate.go, targets.go, plan.go,
// graph.go, run.go, status.go, abandon.go, approve.go, completion.go,
// version.go, bundle.go); root.go builds the cobra command tree.
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
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/hopdag/hopdag"
	"github.com/hopdag/hopdag/bundle"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
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

func main() {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	os.Exit(runWith(context.Background(), env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, signals: signals, exit: os.Exit}, os.Args[1:]))
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
	// getenv reads the environment (TERM, USER); nil: os.Getenv.
	getenv func(string) string
	// now is the clock of the heartbeat; nil: time.Now (progress.go).
	now func() time.Time
	// terminal reports whether stderr is a terminal; nil: it is when it
	// is an *os.File on a character device (progress.go).
	terminal func() bool
}

// cli holds one invocation's flags and streams.
type cli struct {
	env
	name string
	// args is the whole command line (for the audit log), pos the
	// command's positional arguments once parsed.
	args       []string
	pos        []string
	fs         *pflag.FlagSet
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
	rf     *runFlags
	sf     *statusFlags
	af     *abandonFlags
	rb     *rollbackFlags // rollback.go
	kf     *kubeFlags
	pf     *planFlags
	ro     rolloutFlags // rolloutplan.go
	kube   kubeWiring
	bundle *bundleFlags // bundle.go; nil for a command without a catalog
	rtf    routeFlags   // route.go
	steps  stepFlags    // approve.go
	set    setFlag      // --set of run and plan (values.go)
	// log is the logger of --log-format, json whether it is json
	// (logformat.go); set before the command runs.
	log  *slog.Logger
	json bool
	// executing is set once run hands the plan to the executor: from
	// then on an interrupt stops running components (interrupt.go).
	executing atomic.Bool
	// sharedErr is stderr for writers on other goroutines (lines, root.go).
	sharedErr *aboveBar
	// bar is the progress display drawing a bar on the terminal, once
	// there is one (progressObservers): lines go above it (aboveBar).
	bar atomic.Pointer[simulate.Progress]
}

// run is runWith without input or signals, as tests call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWith(ctx, env{stdin: strings.NewReader(""), stdout: stdout, stderr: stderr}, args)
}

// usageHint is the line that ends every usage error.
func usageHint(path string) string {
	return fmt.Sprintf("Run '%s --help' for usage.\n", path)
}

func (c *cli) usageError(msg string) int {
	if c.json {
		c.log.Error(msg)
		return exitUsage
	}
	fmt.Fprintf(c.stderr, "hopdag %s: %s\n%s", c.name, msg, usageHint("hopdag "+c.name))
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

// plural is word when n is 1, word+"s" otherwise, and choose is one or
// many: the module's one copy of the root module's internal/english (a
// module may not import another's internal packages).
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func choose(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
