package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stalledPipe is stderr on a pipe nobody reads for a while (a paused
// terminal, a pager): it takes capacity bytes, as a pipe's buffer does,
// then every write waits for the reader. The reader comes back when
// anything but the progress display writes (a log record: the drain
// timeout's warning) or the run writes its report on stdout (release),
// after Execute returned: the progress display must not hold the run up
// meanwhile.
type stalledPipe struct {
	mu       sync.Mutex
	capacity int
	buf      strings.Builder
	waiting  int
	reading  chan struct{}
	stalled  bool // some write waited
}

// release brings the reader back.
func (p *stalledPipe) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.reading:
	default:
		close(p.reading)
	}
}

// releasing is stdout: its first write releases the stalled stderr.
type releasing struct {
	w       io.Writer
	stalled *stalledPipe
}

func (r releasing) Write(b []byte) (int, error) {
	r.stalled.release()
	return r.w.Write(b)
}

func newStalledPipe(capacity int) *stalledPipe {
	return &stalledPipe{capacity: capacity, reading: make(chan struct{})}
}

func (p *stalledPipe) Write(b []byte) (int, error) {
	if p.stalled && !bytes.HasPrefix(b, []byte("[")) {
		// Not the progress display's line (a log record, the run's
		// notes): the reader is back.
		p.release()
	}
	p.mu.Lock()
	select {
	case <-p.reading:
	default:
		if p.buf.Len()+len(b) > p.capacity {
			p.stalled = true
			p.waiting++
			p.mu.Unlock()
			<-p.reading
			p.mu.Lock()
		}
	}
	defer p.mu.Unlock()
	return p.buf.Write(b)
}

// manyCatalog writes a catalog from v1.0 to v2.0 of n independent exec
// components c0001, c0002, ..., and returns its directory.
func manyCatalog(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for _, v := range []string{"1.0", "2.0"} {
		fmt.Fprintf(&b, "apiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata: {name: v%s}\nspec:\n  version: v%s\n  components:\n", v, v)
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "  - {name: c%04d, version: %q}\n", i, v)
		}
		b.WriteString("---\n")
	}
	b.WriteString("apiVersion: hopdag.io/v1alpha1\nkind: UpgradePath\nmetadata: {name: paths}\nspec: {rules: [{from: v1.0, to: v2.0}]}\n")
	for i := 1; i <= n; i++ {
		for _, v := range []string{"1.0", "2.0"} {
			fmt.Fprintf(&b, "---\napiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata: {name: c%04d-%s}\nspec: {name: c%04d, version: %q, type: exec, command: {args: [\"true\"]}}\n",
				i, strings.ReplaceAll(v, ".", "-"), i, v)
		}
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(b.String()), 0o644))
	return dir
}

// The audit log is complete whatever stderr (the progress) does: with stderr on a pipe
// nobody reads until the run ends, a 600-component run's --log-file
// holds every ComponentSucceeded and PlanFinished, in order, before the
// exit record; the progress display's events dropped at the drain
// timeout are recorded in the log too.
func TestAuditCompleteWhenStdoutStalls(t *testing.T) {
	const n = 600
	d := t.TempDir()
	log := filepath.Join(d, "audit.log")
	stderr := newStalledPipe(16 << 10) // the plan fits, the progress lines do not
	var stdout strings.Builder
	code := run(t.Context(), []string{"run", manyCatalog(t, n), "--from", "v1.0", "--to", "v2.0", "--simulate", "--speed", "1000000",
		"--state", filepath.Join(d, "state"), "--log-file", log}, releasing{&lockedWriter{w: &stdout}, stderr}, stderr)
	stderr.mu.Lock()
	defer stderr.mu.Unlock()
	require.Equal(t, exitOK, code, "stderr:\n%s", stderr.buf.String())
	require.True(t, stderr.stalled, "stderr never filled up: the test shows nothing; stderr:\n%s", stderr.buf.String())

	recs := auditLines(t, log)
	succeeded := map[string]int{}
	finished, exit := -1, -1
	for i, r := range recs {
		switch {
		case r.Kind == "event" && r.Event == "ComponentSucceeded":
			succeeded[r.Component]++
		case r.Kind == "event" && r.Event == "PlanFinished":
			finished = i
			assert.Equal(t, "Succeeded", r.Phase, "PlanFinished's phase")
		case r.Kind == "exit":
			exit = i
		}
	}
	assert.Len(t, succeeded, n, "components with a ComponentSucceeded record in %s", log)
	for name, k := range succeeded {
		assert.Equal(t, 1, k, "ComponentSucceeded records of %s", name)
	}
	require.NotEqual(t, -1, finished, "no PlanFinished record in %s", log)
	assert.Less(t, finished, exit, "PlanFinished (record %d) comes before the exit record (%d)", finished, exit)

	// The progress display missed events: the log says so.
	var warned bool
	for _, r := range recs {
		if r.Kind == "log" && r.Event == "WARN" && strings.Contains(r.Reason, "did not take every event") {
			warned = true
		}
	}
	assert.True(t, warned, "no warning record in %s says the progress display dropped events", log)
}

// lockedWriter is a writer safe for the goroutines of a run.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
