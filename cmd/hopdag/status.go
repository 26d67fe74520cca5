package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"time"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/report"
	"github.com/hopdag/hopdag/state"
)

// exitGone: hopdag status of a run that says Pending or Running but whose
// coordinator is gone: no lease holds the state's lock (see gone).
const exitGone = 4

// statusExit is the exit status part of hopdag status -h.
const statusExit = `
Exit status: 0 the run succeeded; 1 it ended without succeeding (failed,
cancelled, abandoned, rolled back), or there is no status; 2 usage; 3 not
finished: running (its coordinator holds the state's lock), waiting for
approval, or stopped by --until; 4 it says Pending or Running, but its
coordinator is gone: its lease on the lock expired (plus the clock-skew
allowance, a tenth of its TTL) or was released, so it died or was killed
(resume it with hopdag run, or hopdag abandon --force); 130 interrupted.
--watch follows the run until it is no longer Pending or Running with a
live coordinator, and exits as above.
`

// statusFlags are the flags of hopdag status.
type statusFlags struct {
	output   *string
	watch    *bool
	interval *time.Duration
}

func (c *cli) statusFlags() {
	c.state = c.fs.String("state", "", "where the run's status lives: a directory, etcd://host:port/prefix or kube://namespace/name (required)")
	c.sf = &statusFlags{
		output:   c.fs.StringP("output", "o", "table", "output format: table, json or yaml"),
		watch:    c.fs.Bool("watch", false, "follow the run: print the status each time it changes, until it ends"),
		interval: c.fs.Duration("interval", time.Second, "with --watch: how often to read the status"),
	}
	c.kubeFlags()
}

// status prints the run's status and exits with what it says: 0
// Succeeded, 3 not finished (Pending or Running, WaitingForApproval at a
// gate, Paused at --until), 1 anything else (Failed, Cancelled,
// Abandoned, rolled back) or no status at all. A status Pending or
// Running whose coordinator is gone (no lease holds the lock: gone) is
// exitGone, with a message on stderr that says so and what to do. --watch
// follows it while it is Pending or Running with a live coordinator. It
// only reads: it takes no lock, reads the lock's lease without taking it
// (state.LeaseReader), and opens a directory read-only (openState).
func (c *cli) status(ctx context.Context) int {
	c.output = c.sf.output
	if code := c.outputIn("table", "json", "yaml"); code != exitOK {
		return code
	}
	if *c.state == "" {
		return c.usageError("--state is required")
	}
	if *c.sf.interval <= 0 {
		return c.usageError("--interval must be positive")
	}
	b, err := c.openState(ctx, *c.state)
	for *c.sf.watch && errors.Is(err, fs.ErrNotExist) {
		// The run has not created its state directory yet.
		select {
		case <-ctx.Done():
			return exitInterrupted
		case <-time.After(*c.sf.interval):
		}
		b, err = c.openState(ctx, *c.state)
	}
	if err != nil {
		return c.fail1(err)
	}
	defer b.close()
	var last []byte
	waiting, warned := false, false
	lr, _ := b.lock.(state.LeaseReader)
	for {
		// The lease is read before the status and again after it, so that
		// a run that ends (writes its last status, then releases) or
		// starts between the reads is not taken for a dead one.
		before, berr := readLease(ctx, lr)
		st, err := b.load(ctx)
		if err != nil {
			if interruptedBy(ctx) != nil {
				return exitInterrupted
			}
			return c.fail1(err)
		}
		switch {
		case st == nil && !*c.sf.watch:
			return c.fail1(fmt.Errorf("no status in %s: no run has started there%s", b.where, b.whyAbsent(ctx)))
		case st == nil:
			if !waiting {
				fmt.Fprintf(c.stderr, "hopdag status: no status in %s yet%s; waiting for a run to start\n", b.where, b.whyAbsent(ctx))
				waiting = true
			}
		default:
			out, err := c.formatStatus(st)
			if err != nil {
				return c.fail1(err)
			}
			if !bytes.Equal(out, last) {
				if last != nil && *c.sf.output == "table" {
					fmt.Fprintln(c.stdout)
				}
				c.stdout.Write(out)
				last = out
			}
			if inFlight(st.Phase) && lr != nil && c.coordinatorGone(ctx, b, lr, st, before, berr, &warned) {
				return exitGone
			}
			if code := statusCode(st); !*c.sf.watch || !inFlight(st.Phase) {
				return code
			}
		}
		select {
		case <-ctx.Done():
			return exitInterrupted
		case <-time.After(*c.sf.interval):
		}
	}
}

// coordinatorGone reads the lease of a run in flight again (before, berr:
// the read before its status) and reports whether its coordinator is gone,
// saying so on stderr; it warns once (*warned) when the lease cannot tell.
func (c *cli) coordinatorGone(ctx context.Context, b *backend, lr state.LeaseReader, st *record.Status, before leaseView, berr error, warned *bool) bool {
	after, aerr := readLease(ctx, lr)
	// Both reads fail alike as a rule: the first error says it.
	if err := cmp.Or(berr, aerr); err != nil && !*warned && interruptedBy(ctx) == nil {
		fmt.Fprintf(c.stderr, "hopdag status: cannot read the lease on the lock of %s, so cannot tell whether the run's coordinator is alive: %s\n", b.where, message(err))
		*warned = true
	}
	if berr == nil && aerr == nil && !before.held && !after.held && before.l.Token == after.l.Token {
		fmt.Fprintf(c.stderr, "hopdag status: %s\n", gone(st, after.l, *c.state))
		return true
	}
	if aerr == nil && after.held && after.l.Expires.IsZero() && !*warned {
		// File: the lease record is gone, and so is its expiry.
		fmt.Fprintf(c.stderr, "hopdag status: the record of the lease on the lock of %s is missing (deleted?), so whether lease %d's coordinator is alive cannot be told: it is taken as alive; if it is, its next refresh writes the record again, else the next hopdag run waits one lease TTL for it, then takes over\n", b.where, after.l.Token)
		*warned = true
	}
	return false
}

// formatStatus renders st as -o says. JSON is one line per status under
// --watch (a stream of documents), indented otherwise.
func (c *cli) formatStatus(st *record.Status) ([]byte, error) {
	st = c.shown(st)
	var b bytes.Buffer
	switch *c.sf.output {
	case "json", "yaml":
		// Under --watch, a stream: one JSON document a line, YAML
		// documents after "---".
		out, err := printer{format: *c.sf.output, compact: *c.sf.watch}.document(kindStatus, st)
		if err != nil {
			return nil, err
		}
		b.Write(out)
	default:
		report.Table(&b, st, nil)
	}
	return b.Bytes(), nil
}

// shown is st with its message and last failure in the command line's
// terms (cliMessage), for the table, JSON and YAML alike: a gate's names
// the hopdag approve command.
func (c *cli) shown(st *record.Status) *record.Status {
	out := st.DeepCopy()
	out.Message = c.cliMessage(st.Message)
	if f := out.LastFailure; f != nil {
		f.Error = c.cliMessage(f.Error)
	}
	for i := range out.Hops {
		h := &out.Hops[i]
		h.Message = c.cliMessage(h.Message)
		for j := range h.Components {
			cs := &h.Components[j]
			cs.Error, cs.Reason = c.cliMessage(cs.Error), c.cliMessage(cs.Reason)
		}
	}
	if st.Phase == record.WaitingForApproval {
		out.Message = c.waitText(st)
	}
	return out
}

// gateMessage is the runner's sentence of a run waiting at gates
// (runner's gate.go), which names Go API; its group is the steps.
var gateMessage = regexp.MustCompile(`waiting for approval of ([^;]+); approve it \(Status\.Approve\) and run again`)

// cliMessage is a library message in the command line's terms: cliText,
// and the runner's gate sentence as waitText says it, naming the hopdag
// approve command with this command's --state. The table, the JSON and
// YAML status (shown) and the audit log (auditLog.cliText) use it.
func (c *cli) cliMessage(msg string) string {
	msg = gateMessage.ReplaceAllStringFunc(msg, func(m string) string {
		return c.approveText(strings.Split(gateMessage.FindStringSubmatch(m)[1], ", "), nil)
	})
	return cliText(msg)
}

// inFlight reports whether a run in phase p is being run: its
// coordinator holds the state's lock while the status says so.
func inFlight(p record.Phase) bool {
	return p == record.Pending || p == record.Running || p == record.RollingBack
}

// leaseView is what a state.LeaseReader said.
type leaseView struct {
	l    state.Lease
	held bool
}

// readLease reads the lock's lease with load's timeout; a zero lease
// without a reader.
func readLease(ctx context.Context, lr state.LeaseReader) (leaseView, error) {
	if lr == nil {
		return leaseView{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, etcdDialTimeout+leaseTTL)
	defer cancel()
	l, held, err := lr.ReadLease(ctx)
	return leaseView{l, held}, err
}

// gone says that st's run is not running although its status says it is:
// no lease holds the lock (l, the lease as the backend last knew it, no
// longer holds it by the rule Acquire applies: its expiry plus the
// clock-skew allowance passed; or the backend knows none: released, or
// expired on etcd), so its coordinator died or was killed, or ended
// without recording how. Its next Acquire takes the lock at once: hopdag
// run resumes it, hopdag abandon --force abandons it.
func gone(st *record.Status, l state.Lease, where string) string {
	head := fmt.Sprintf("%s -> %s says %s, but ", st.From, st.To, st.Phase)
	if l.Holder != "" && !l.Expires.IsZero() {
		head += fmt.Sprintf("its coordinator %s stopped refreshing its lease %d at %s (it expired at %s)",
			l.Holder, l.Token, l.Expires.Add(-l.TTL).UTC().Format(time.RFC3339), l.Expires.UTC().Format(time.RFC3339))
	} else {
		head += "no coordinator holds its lock (its lease expired or was released)"
	}
	return head + ": it died or was killed; resume it with hopdag run (the same catalog, --from, --to and --state " + where +
		"), or abandon it with hopdag abandon --state " + where + " --force"
}

// statusCode is the exit status of hopdag status for st.
func statusCode(st *record.Status) int {
	switch st.Phase {
	case record.Succeeded:
		return exitOK
	case record.Pending, record.Running, record.RollingBack, record.WaitingForApproval, record.Paused:
		return exitRunning
	}
	return exitInvalid
}
