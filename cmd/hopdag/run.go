package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hopdag/hopdag/bundle"
	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/report"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/simulate"
	"github.com/hopdag/hopdag/state"
)

// runFlags are the flags of hopdag run beyond the plan's.
type runFlags struct {
	applyDir *string
	instance *string
	dryRun   *bool
	// forceConflicts: manifest applies take over fields other managers own.
	forceConflicts *bool
	// takeOver: manifest applies take over objects another installation
	// or component owns.
	takeOver    *bool
	grace       *time.Duration
	leaseTTL    *time.Duration
	logFile     *string
	logFormat   *string
	maxParallel *int
	onFailure   *string
	quiet       *bool
	// checks are the --check commands by check name.
	checks map[string]string

	audit *auditLog
}

func (c *cli) runFlags() {
	c.rf = &runFlags{
		applyDir:       c.fs.String("apply-dir", "", "apply manifest components by writing their objects under this directory (the Dir applier)"),
		forceConflicts: c.fs.Bool("force-conflicts", false, forceConflictsUsage),
		takeOver:       c.fs.Bool("take-over", false, "manifest components take over the objects they render that are labelled as another installation's (--instance) or another component's; without it applying such an object fails the component, naming its owner (the old owner's prune then leaves the object)"),
		instance:       c.fs.String("instance", components.DefaultInstance, "the installation the manifest components belong to: their objects are labelled hopdag.io/instance=NAME and their inventories kept per NAME, so a prune only ever deletes this installation's objects; give each catalog that shares a cluster (or an --apply-dir) its own"),
		grace:          c.fs.Duration("grace", defaultGrace, "after an interrupt, how long running commands have between SIGTERM and SIGKILL (more than 0)"),
		leaseTTL:       c.fs.Duration("lease-ttl", leaseTTL, "with --state: the lease on the state's lock, refreshed every third of it; a run killed without releasing it blocks the next run until it expires (plus a tenth)"),
		logFile:        c.fs.String("log-file", "", "append an audit log here: one JSON object per line for the command, every event and every lock transition"),
		logFormat:      c.fs.String("log-format", "text", "format of the log on stderr: text or json (json also logs every event there)"),
		maxParallel:    c.fs.Int("max-parallel", 0, "most components running at once (0: no limit)"),
		quiet:          c.fs.Bool("quiet", false, "do not print the output of commands on stderr (each line is \"  COMPONENT | line\"); --log-file records it all the same"),
	}
	if c.name == "run" {
		// A rollback needs --state, which a dry run cannot have.
		c.rf.dryRun = c.fs.Bool("dry-run", false, "apply manifests as a server-side dry run (needs a cluster)")
		// rollback rolls the whole run back, whatever its policy.
		c.rf.onFailure = c.fs.String("on-failure", "", "what a failed component does to the run: \"\" (independent branches go on), rollback (undo the failed hop, dependents first) or rollback-run (undo the whole run); every component must be able to roll back (exec: spec.rollback); recorded with --state, so a resumed run keeps it unless given again")
	}
	c.addSetFlag("template values (.Values.KEY) for commands and manifests; .Values.catalog is the catalog directory unless set")
	c.rf.checks = map[string]string{}
	c.fs.Func("check", "`NAME=COMMAND`: run hop check NAME with sh -c COMMAND (repeat for each check; exit 0 passes)", func(v string) error {
		name, command, ok := strings.Cut(v, "=")
		if !ok || name == "" || strings.TrimSpace(command) == "" {
			return fmt.Errorf("want NAME=COMMAND, got %q", v)
		}
		c.rf.checks[name] = command
		return nil
	})
	c.kubeFlags()
}

func (c *cli) run(ctx context.Context) (code int) {
	rf := c.rf
	if code := c.outputIn("text", "json", "yaml"); code != exitOK {
		return code
	}
	mode, err := simulate.ParseMode(*c.mode)
	if err != nil {
		return c.usageError(err.Error())
	}
	policy, err := simulate.ParsePolicy(optional(rf.onFailure))
	if err != nil {
		return c.usageError(err.Error())
	}
	if msg := c.checkRunFlags(); msg != "" {
		return c.usageError(msg)
	}
	values := c.set.values
	if !*c.simulate {
		if values, err = c.withCatalogValue(values); err != nil {
			return c.fail1(err)
		}
	}
	logger := c.log // logformat.go
	switch *rf.logFormat {
	case "text", "json":
	default:
		return c.usageError(fmt.Sprintf("--log-format must be text or json, got %q", *rf.logFormat))
	}
	if *rf.logFile != "" {
		if rf.audit, err = openAudit(*rf.logFile); err != nil {
			return c.fail1(err)
		}
		rf.audit.cliText = c.cliMessage
		rf.audit.command(c.args)
		logger = logWarnings(logger, rf.audit)
		defer func() {
			rf.audit.exit(code)
			if err := rf.audit.close(); err != nil {
				fmt.Fprintf(c.stderr, "hopdag run: %v\n", err)
			}
		}()
	}
	cat, err := c.catalog()
	if err != nil {
		return c.fail1(err)
	}
	// The route (on one track or across tracks) and the plan without an
	// executor first: what it holds decides whether this command line can
	// run it, and it fails early on no route.
	plan, err := c.planOf(cat)
	if err != nil {
		return c.fail1(err)
	}
	if err := c.checkPlanNames(cat, plan); err != nil {
		return c.fail1(err)
	}
	progress, stop := c.progressObservers()
	defer stop()
	opts := append([]runner.Option{runner.WithMode(mode), runner.WithMaxParallel(*rf.maxParallel), runner.WithLogger(logger), runner.WithUntil(c.until())}, progress...)
	if optional(rf.onFailure) != "" {
		// Without the flag, a resumed run keeps the policy its status
		// records.
		opts = append(opts, runner.WithFailurePolicy(policy))
	}
	if rf.audit != nil {
		// Every event, whatever stdout does (see auditLog.Observe).
		opts = append(opts, runner.WithBlockingObserver(rf.audit))
	}
	if *rf.logFormat == "json" {
		// c.log: the audit log has the events already.
		opts = append(opts, runner.WithObserver(runner.SlogObserver(c.log)))
	}
	// --gate is recorded in the status: a resumed run keeps its gates
	// whatever flags it gets.
	gates, err := simulate.Gates(plan, c.gates())
	if err != nil {
		return c.fail1(err)
	}
	opts = append(opts, gates)

	// The executor, and the plan with it: every component and check has a
	// runner, the templates render. It is built and checked before the
	// state is opened, so that a run refused here creates nothing in
	// --state.
	var e *runner.Executor
	if *c.simulate {
		e = simulate.Executor(cat, simulate.Config{Speed: *c.speed, Fail: simulate.List(optional(c.fail)), Mode: mode, Policy: policy, Values: values}, opts...)
	} else {
		router, err := c.router(plan, values)
		if err != nil {
			return c.fail1(err)
		}
		checks, err := c.checkFuncs(values)
		if err != nil {
			return c.fail1(err)
		}
		e = runner.New(router, slices.Concat(opts, checks)...)
	}
	if plan, err = c.planOf(cat, runner.ForExecutor(e)); err != nil {
		return c.fail1(err)
	}
	plan.Catalog = c.bundle.source
	if *c.state != "" {
		return c.runState(ctx, e, plan, logger)
	}
	if code, ok := c.begin(ctx, plan, ""); !ok {
		return code
	}
	st, err := e.Execute(ctx, plan, nil)
	return c.outcome(ctx, plan, nil, st, err)
}

// isDryRun reports --dry-run, which only run has.
func (rf *runFlags) isDryRun() bool { return rf.dryRun != nil && *rf.dryRun }

// runState runs plan with --state through state.Run, which takes the
// state's lock (waiting for a dead holder's lease: stateLock), keeps its
// lease, loads the status there, saves every transition under the lease,
// and releases the lock. The run resumes the status loaded, or starts the
// next upgrade over a finished one (nextUpgrade).
func (c *cli) runState(ctx context.Context, e *runner.Executor, plan *runner.Plan, logger *slog.Logger) int {
	rf := c.rf
	b, err := c.openState(ctx, *c.state)
	if err != nil {
		return c.fail1(err)
	}
	defer b.close()
	var asked *record.Status // rollback: the status confirmed
	if c.rb != nil {
		// Asked before the lock is taken (an answer may take a while),
		// and checked again once it is held (revertSession).
		if asked, err = b.load(ctx); err != nil {
			if sig := interruptedBy(ctx); sig != nil {
				c.errorf("interrupted by %s while reading %s: nothing changed\n", signame(sig), *c.state)
				return exitInterrupted
			}
			return c.fail1(err)
		}
		if code, ok := c.confirmRollback(ctx, asked, plan, b.where); !ok {
			return code
		}
	}
	lock := &stateLock{auditedLock: auditedLock{b.lock, rf.audit}, c: c, b: b, wait: true}
	var (
		prev   *record.Status
		loaded bool // the lock was taken and the status loaded
		early  = -1 // the exit code of a run that stopped before Execute
	)
	st, err := state.Run(ctx, located{b: b}, lock, e, plan,
		state.WithHolder(holder(c.name)), state.WithTTL(*rf.leaseTTL), state.WithLogger(logger),
		state.WithSession(func(ctx context.Context, s *state.Session) (*record.Status, error) {
			loaded, prev = true, s.Prev
			resume := ""
			if c.rb != nil {
				// hopdag rollback: the upgrade loaded, reverted, runs
				// back to its start.
				resume, was, code, ok := c.revertSession(ctx, prev, asked, plan, b.where)
				if !ok {
					early = code
					return nil, errNotStarted
				}
				if code, ok := c.begin(ctx, plan, resume); !ok {
					early = code
					return nil, errNotStarted
				}
				rf.audit.write(auditRecord{Kind: "rollback", Phase: string(was), Reason: *c.rb.reason})
				return s.Execute(ctx, prev)
			}
			if prev != nil {
				next, err := nextUpgrade(prev, runner.NewStatus(plan), b.where)
				if err != nil {
					early = c.fail1(err)
					return nil, errNotStarted
				}
				if next != "" {
					// The store's finished upgrade stays in the audit log;
					// the first checkpoint replaces it.
					rf.audit.write(auditRecord{Kind: "new-upgrade", Phase: string(prev.Phase), Reason: strings.TrimSuffix(next, "\n")})
					resume, prev = next, nil
				} else {
					resume = fmt.Sprintf("resuming from %s (%s, %d/%d done, run %d)\n", b.where, prev.Phase, prev.Progress.Done, prev.Progress.Total, prev.Runs)
				}
			}
			if code, ok := c.begin(ctx, plan, resume); !ok {
				early = code
				return nil, errNotStarted
			}
			return s.Execute(ctx, prev)
		}))
	if lost, ok := errors.AsType[*state.LostError](err); ok {
		// state.Run leaves a lost lease alone: no release to log.
		rf.audit.lock("Lost", lost.Lease, lost)
	}
	switch {
	case lock.err != nil:
		if sig := interruptedBy(ctx); sig != nil {
			c.errorf("interrupted by %s while waiting for the lock of %s: nothing ran, and its status is as it was\n", signame(sig), *c.state)
			return exitInterrupted
		}
		return c.fail1(fmt.Errorf("%s: %w", *c.state, lock.err))
	case !loaded:
		return c.fail1(err) // b.load's, naming where
	case early >= 0:
		return early
	}
	return c.outcome(ctx, plan, prev, st, err)
}

// errNotStarted ends a run's state.Session that stopped before Execute,
// having said why.
var errNotStarted = errors.New("hopdag run: the run did not start")

// begin does what comes before Execute, the lock held with --state: it
// waits for the commands an earlier run of the state left running, then
// prints the plan and resume (a line saying what the run resumes, or "").
// It returns false, and the exit code, when the run must not start.
func (c *cli) begin(ctx context.Context, plan *runner.Plan, resume string) (int, bool) {
	if lock := c.commandsLock(); lock != "" && !*c.simulate {
		err := components.WaitGuards(ctx, lock, c.grace()+killMargin, func() {
			fmt.Fprintf(c.stderr, "hopdag run: waiting for the commands of an earlier run of %s to exit\n", *c.state)
		})
		if err != nil {
			return c.fail1(err), false
		}
	}
	// Set before the look at ctx: an interrupt that came first is seen
	// here (and said "nothing runs yet"), one that comes after is told
	// that components stop.
	c.executing.Store(true)
	if sig := interruptedBy(ctx); sig != nil {
		c.errorf("interrupted by %s before the run started: nothing ran\n", signame(sig))
		return exitInterrupted, false
	}
	// The plan is what the run is about to do: progress, on stderr.
	fmt.Fprint(c.stderr, plan.String(), resume, "\n")
	return 0, true
}

// outcome reports what Execute returned (st, err) for plan, run from prev
// (nil for a fresh run), and returns the exit code.
func (c *cli) outcome(ctx context.Context, plan *runner.Plan, prev, st *record.Status, err error) int {
	if st != nil {
		// The final status is the run's data: stdout.
		if *c.output != "text" {
			if err := c.print(kindStatus, c.shown(st)); err != nil {
				return c.fail1(err)
			}
		} else {
			report.Table(c.stdout, c.shown(st), report.PlanOrder(plan))
		}
		if st.Code == record.CodeCheckpointFailed && *c.state != "" {
			fmt.Fprintf(c.stderr, "not saved: the store did not take every transition above (CHECKPOINT_FAILED), so %s may hold an earlier status; hopdag status --state %s shows what it holds, which is what the next run resumes from\n", *c.state, *c.state)
		}
	}
	if code, ok := c.held(st, err); ok {
		return code
	}
	if code, ok := c.rolledBack(st, err); ok {
		return code
	}
	if sig := interruptedBy(ctx); sig != nil {
		c.errorf("interrupted by %s: %s", signame(sig), c.resumeHint(st))
		return exitInterrupted
	}
	if err != nil {
		if (errors.Is(err, runner.ErrRolledBack) || errors.Is(err, runner.ErrAbandoned)) && prev != nil {
			// Final: the same upgrade never runs again here, but the
			// next one from where it left the system may (nextUpgrade).
			if v := reachedVersion(prev); v != "" {
				err = fmt.Errorf("%w, or run the next upgrade --from %s (where it left the system) with this --state", err, v)
			}
		}
		if errors.Is(err, runner.ErrPlanMismatch) && prev != nil && (prev.Catalog.Digest == "" || prev.Catalog.Digest == plan.Catalog.Digest) {
			// The same upgrade from the same bundle (if any), planned
			// otherwise: the route depends on more than --from and --to.
			err = fmt.Errorf("%w; the route also depends on --accept, --channel, --prereleases and the catalog: give them as the run in %s was started with", err, *c.state)
		}
		if st == nil || !errors.Is(err, runner.ErrRunFailed) {
			return c.fail1(err)
		}
		c.errorf("%s -> %s %s: %s", st.From, st.To, phaseText(st.Phase), c.resumeHint(st))
		return exitInvalid
	}
	if st.Phase != record.Succeeded {
		return exitInvalid
	}
	return exitOK
}

// nextUpgrade decides what a run of a plan whose fresh status is fresh
// does with the status prev it found in the store where: it resumes prev
// when both are for the same upgrade (track, from, to; Execute checks the
// rest), and returns "". When prev is for another upgrade, it starts a new
// status in the same store, returning the line that says so, if prev is
// finished and fresh starts where it ended (reached); otherwise it
// refuses, saying what to do in the terms of the command line.
//
// Finished is Succeeded, RolledBack or Abandoned. Reached is what the
// system runs: after Succeeded the upgrade's to-version; otherwise the
// to-version of the last hop that Succeeded (hops before a rolled-back one
// stay done, and a rollback of the whole run rolls them back too), or the
// upgrade's from-version when none did. A hop that an Abandoned run left
// half done does not count: its components may be anywhere between
// versions, which is the operator's call (another --state starts anywhere).
// Running, Failed, Paused, WaitingForApproval, Cancelled and
// RollbackFailed are not finished: they resume, or are abandoned first.
// The same upgrade RolledBack or Abandoned is refused by Execute (a final
// status is never run again; see resumeHint).
func nextUpgrade(prev, fresh *record.Status, where string) (string, error) {
	if prev.Track == fresh.Track && prev.From == fresh.From && prev.To == fresh.To {
		return "", nil
	}
	old := prev.From + " -> " + prev.To
	switch prev.Phase {
	case record.Succeeded, record.RolledBack, record.Abandoned:
	default:
		return "", fmt.Errorf("%s holds the upgrade %s, which %s and is not finished; this run is %s -> %s: "+
			"resume it (hopdag run with --from %s --to %s), abandon it (hopdag abandon --state %s) and run again, or use another --state",
			where, old, prev.Phase, fresh.From, fresh.To, prev.From, prev.To, where)
	}
	reached := reachedVersion(prev)
	if reached == "" {
		return "", fmt.Errorf("the previous upgrade %s in %s ended %s part way along its route across tracks: use another --state, starting from the state the system runs",
			old, where, prev.Phase)
	}
	if prev.Track != fresh.Track || fresh.From != reached {
		track := ""
		if prev.Track != fresh.Track {
			track = fmt.Sprintf(" (track %q, this run's is %q)", prev.Track, fresh.Track)
		}
		return "", fmt.Errorf("the previous upgrade %s in %s ended %s at %s%s, not at %s: start the next one --from %s, or use another --state for another system",
			old, where, prev.Phase, reached, track, fresh.From, reached)
	}
	at := "an unrecorded time"
	if !prev.FinishedAt.IsZero() {
		at = prev.FinishedAt.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("the previous upgrade %s in %s ended %s at %s; a new upgrade starts there\n", old, where, prev.Phase, at), nil
}

// reachedVersion is the version a finished status left the system at (see
// nextUpgrade), or "" when a route across tracks stopped part way (its
// hops name one track's version each, not the whole state).
func reachedVersion(st *record.Status) string {
	if st.Phase == record.Succeeded {
		return st.To
	}
	for i := len(st.Hops) - 1; i >= 0; i-- {
		if h := st.Hops[i]; h.Phase == record.Succeeded {
			if h.Track != "" {
				return ""
			}
			return h.To
		}
	}
	return st.From
}

func (c *cli) resumeHint(st *record.Status) string {
	if *c.state == "" {
		return "no --state, so nothing was saved\n"
	}
	if st != nil && (st.Phase == record.RolledBack || st.Phase == record.Abandoned) {
		// Execute refuses to resume these (ErrRolledBack, ErrAbandoned);
		// the next upgrade from where it ended may use the same store
		// (nextUpgrade).
		if v := reachedVersion(st); v != "" {
			return fmt.Sprintf("its status in %s is final: start over with a new --state, or run the next upgrade --from %s (where it left the system) with this one\n", *c.state, v)
		}
		return fmt.Sprintf("its status in %s is final: start over with a new --state (or delete what %s holds)\n", *c.state, *c.state)
	}
	if st != nil && st.Phase == record.RollbackFailed {
		// A resume retries the rollbacks that failed; one that stopped
		// only at irreversible components changes nothing (runner's
		// rollback.go).
		var failed, irreversible, blocked []string
		for i, h := range st.Hops {
			for _, cs := range h.Components {
				at := fmt.Sprintf("%s %s on hop %d", cs.Name, cs.ToVersion, i+1)
				switch {
				case cs.Phase == record.RollbackFailed && cs.Code == record.CodeRollbackFailed:
					failed = append(failed, fmt.Sprintf("%s on hop %d", cs.Name, i+1))
				case cs.Phase == record.RollbackFailed:
					irreversible = append(irreversible, at)
				case cs.Code == record.CodeRollbackBlocked:
					blocked = append(blocked, at)
				}
			}
		}
		if len(failed) > 0 {
			return fmt.Sprintf("the status is saved in %s; run the same command again to retry the rollback of %s\n", *c.state, strings.Join(failed, ", "))
		}
		stays := "the rollback stopped at irreversible components, which stay at their target (" + strings.Join(irreversible, ", ") + ")"
		if len(blocked) > 0 {
			stays += ", and so does what they depend on (" + strings.Join(blocked, ", ") + ")"
		}
		next := "then start over with a new --state"
		if v := reachedVersion(st); v != "" {
			next = fmt.Sprintf("then start the next upgrade --from %s with this --state if the system is back there, or with a new --state from wherever it is", v)
		}
		return fmt.Sprintf("%s: running the same command again changes nothing. Bring the system to one release by hand, abandon this run (hopdag abandon --state %s), %s\n",
			stays, *c.state, next)
	}
	if st != nil && slices.ContainsFunc(st.Hops, func(h record.HopStatus) bool { return h.Phase == record.RollingBack }) {
		return fmt.Sprintf("the status is saved in %s; run the same command again to finish the rollback\n", *c.state)
	}
	return fmt.Sprintf("the status is saved in %s; run the same command again to resume\n", *c.state)
}

// phaseText is a run's phase in a sentence: "failed", "rolled back".
func phaseText(p record.Phase) string {
	switch p {
	case record.RolledBack:
		return "rolled back"
	case record.RollbackFailed:
		return "rollback failed"
	}
	return strings.ToLower(string(p))
}

// instanceName is what --instance may be: a label value that also goes
// into the kube applier's inventory ConfigMap names (hopdag.NAME.COMPONENT).
var instanceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)

// checkInstance says what is wrong with an --instance, or "".
func checkInstance(name string) string {
	if instanceName.MatchString(name) {
		return ""
	}
	return fmt.Sprintf("--instance %q: want 1 to 40 lowercase letters, digits and '-', starting and ending with a letter or digit (it is a label value and part of the inventories' names)", name)
}

// withCatalogValue sets .Values.catalog to the catalog's directory, unless
// --set gave it or the catalog is not a directory (- or a bundle
// reference: a command that reads it is then refused at plan time, naming
// --set catalog=VALUE): commands can run scripts shipped with the catalog.
func (c *cli) withCatalogValue(values map[string]any) (map[string]any, error) {
	if _, ok := values["catalog"]; ok || c.dir == "-" || bundle.IsReference(c.dir) {
		return values, nil
	}
	abs, err := filepath.Abs(c.dir)
	if err != nil {
		return nil, err
	}
	values = maps.Clone(values) // the flag's stay as given
	if values == nil {
		values = map[string]any{}
	}
	values["catalog"] = abs
	return values, nil
}

// checkRunFlags returns what is wrong with the combination of run's flags.
func (c *cli) checkRunFlags() string {
	rf := c.rf
	if msg := checkInstance(*rf.instance); msg != "" {
		return msg
	}
	if *rf.grace <= 0 {
		return fmt.Sprintf("--grace %s: want more than 0 (how long running commands have between SIGTERM and SIGKILL after an interrupt; %s when not given)", *rf.grace, defaultGrace)
	}
	if msg := checkUntil(c.until()); msg != "" {
		return msg
	}
	if state.CheckTTL(*rf.leaseTTL) != nil {
		return fmt.Sprintf("--lease-ttl %s: want at least %s (the lease is refreshed every third of it; a shorter one is lost whenever a refresh is late on a busy machine)", *rf.leaseTTL, state.MinTTL)
	}
	if *c.simulate {
		for name, set := range map[string]bool{"--apply-dir": *rf.applyDir != "", "--kubeconfig": *c.kf.kubeconfig != "", "--context": *c.kf.context != "", "--dry-run": rf.isDryRun(), "--force-conflicts": *rf.forceConflicts} {
			if set {
				return name + " applies for real: it cannot go with --simulate"
			}
		}
		return ""
	}
	if optional(c.fail) != "" || *c.speed != simulate.DefaultSpeed {
		return "--fail and --speed only go with --simulate"
	}
	if *rf.applyDir != "" && (*c.kf.kubeconfig != "" || *c.kf.context != "") {
		return "--apply-dir writes files; it cannot go with --kubeconfig or --context"
	}
	if rf.isDryRun() && *c.state != "" {
		// A dry run's components would be recorded Succeeded, and a real
		// run from that status would skip them.
		return "--dry-run changes nothing, so it saves no status: drop --state"
	}
	if *rf.forceConflicts && *rf.applyDir != "" {
		return "--force-conflicts is server-side apply's: it needs a cluster, not --apply-dir (files have no field managers)"
	}
	if rf.isDryRun() && *rf.applyDir != "" {
		return "--dry-run is a server-side dry run: it needs a cluster, not --apply-dir (hopdag plan shows what would run)"
	}
	return ""
}
