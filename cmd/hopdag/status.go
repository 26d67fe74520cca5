package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hopdag/hopdag/internal/report"
	"github.com/hopdag/hopdag/runner"
)

// statusFlags are the flags of hopdag status.
type statusFlags struct {
	output   *string
	watch    *bool
	interval *time.Duration
}

func (c *cli) statusFlags() {
	c.state = c.fs.String("state", "", "where the run's status lives: a directory, etcd://host:port/prefix or kube://namespace/name (required)")
	c.sf = &statusFlags{
		output:   c.fs.String("o", "table", "output format: table, json or yaml"),
		watch:    c.fs.Bool("watch", false, "follow the run: print the status each time it changes, until it ends"),
		interval: c.fs.Duration("interval", time.Second, "with --watch: how often to read the status"),
	}
	c.kubeFlags()
}

// status prints the run's status and exits with what it says: 0
// Succeeded, 3 not finished (Pending or Running, WaitingForApproval at a
// gate, Paused at --until), 1 anything else (Failed, Cancelled,
// Abandoned, rolled back) or no status at all. --watch follows it while it
// is Pending or Running. It only reads: it takes no lock.
func (c *cli) status(ctx context.Context) int {
	switch *c.sf.output {
	case "table", "json", "yaml":
	default:
		return c.usageError(fmt.Sprintf("-o must be table, json or yaml, got %q", *c.sf.output))
	}
	if *c.state == "" {
		return c.usageError("--state is required")
	}
	if *c.sf.interval <= 0 {
		return c.usageError("--interval must be positive")
	}
	b, err := c.openState(*c.state)
	for *c.sf.watch && errors.Is(err, fs.ErrNotExist) {
		// The run has not created its state directory yet.
		select {
		case <-ctx.Done():
			return exitInterrupted
		case <-time.After(*c.sf.interval):
		}
		b, err = c.openState(*c.state)
	}
	if err != nil {
		return c.fail1(err)
	}
	defer b.close()
	var last []byte
	waiting := false
	for {
		st, err := b.load(ctx)
		if err != nil {
			if interruptedBy(ctx) != nil {
				return exitInterrupted
			}
			return c.fail1(err)
		}
		switch {
		case st == nil && !*c.sf.watch:
			return c.fail1(fmt.Errorf("no status in %s: no run has started there", b.where))
		case st == nil:
			if !waiting {
				fmt.Fprintf(c.stderr, "hopdag status: no status in %s yet; waiting for a run to start\n", b.where)
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
			if code := statusCode(st); !*c.sf.watch || (st.Phase != runner.Pending && st.Phase != runner.Running) {
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

// formatStatus renders st as -o says. JSON is one line per status under
// --watch (a stream of documents), indented otherwise.
func (c *cli) formatStatus(st *runner.Status) ([]byte, error) {
	var b bytes.Buffer
	switch *c.sf.output {
	case "json":
		var (
			data []byte
			err  error
		)
		if *c.sf.watch {
			data, err = json.Marshal(st)
		} else {
			data, err = json.MarshalIndent(st, "", "  ")
		}
		if err != nil {
			return nil, err
		}
		b.Write(data)
		b.WriteByte('\n')
	case "yaml":
		if *c.sf.watch {
			b.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(st); err != nil {
			return nil, err
		}
		enc.Close()
	default:
		report.Table(&b, c.shown(st), nil)
	}
	return b.Bytes(), nil
}

// shown is st with its message in the command line's terms, for the
// table: a gate's names the hopdag approve command.
func (c *cli) shown(st *runner.Status) *runner.Status {
	out := *st
	out.Message = cliText(st.Message)
	if st.Phase == runner.WaitingForApproval {
		out.Message = c.waitText(st)
	}
	return &out
}

// statusCode is the exit status of hopdag status for st.
func statusCode(st *runner.Status) int {
	switch st.Phase {
	case runner.Succeeded:
		return exitOK
	case runner.Pending, runner.Running, runner.WaitingForApproval, runner.Paused:
		return exitRunning
	}
	return exitInvalid
}
