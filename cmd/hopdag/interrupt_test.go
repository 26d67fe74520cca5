package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The first interrupt says what stopping means for the command at that
// moment: only a run whose components have started tells them to stop and
// saves the status; any other command (status --watch) just stops.
func TestInterruptMessage(t *testing.T) {
	for _, tt := range []struct {
		name      string
		command   string
		executing bool
		want      string
	}{
		{"run executing", "run", true, "hopdag run: SIGINT: stopping; running components are told to stop and the status is saved; interrupt again within 15s to kill at once\n"},
		{"run not started", "run", false, "hopdag run: SIGINT: stopping before the run starts: nothing runs yet, and the status is as it was\n"},
		{"status --watch", "status", false, "hopdag status: SIGINT: stopping\n"},
		{"abandon", "abandon", false, "hopdag abandon: SIGINT: stopping\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			signals := make(chan os.Signal, 1)
			var stderr bytes.Buffer
			c := &cli{env: env{stderr: &stderr, signals: signals}, name: tt.command}
			c.executing.Store(tt.executing)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			done := make(chan struct{})
			stopped := make(chan struct{})
			go func() { c.watchSignals(cancel, done); close(stopped) }()
			signals <- os.Interrupt
			<-ctx.Done()
			close(done)
			<-stopped
			assert.Equal(t, tt.want, stderr.String())
		})
	}
}

// Ctrl-C while a run waits for a killed run's lease stops the wait:
// exit 130, saying that nothing ran.
func TestInterruptWhileWaitingForTheLock(t *testing.T) {
	u := newUpgrade(t)
	// A lease of a minute: the second run waits for it rather than
	// taking the lock over before the interrupt.
	args := append(u.runArgs(), "--lease-ttl", "1m")
	killed := start(t, args...)
	waitFor(t, filepath.Join(u.out, "runs.log"), "start db 1.1")
	require.NoError(t, killed.cmd.Process.Signal(syscall.SIGKILL))
	killed.wait(t)

	log := filepath.Join(t.TempDir(), "second.log")
	second := start(t, append(args, "--log-file", log)...)
	waitFor(t, log, `"event":"Refused"`)
	require.NoError(t, second.cmd.Process.Signal(os.Interrupt))
	assert.Equal(t, exitInterrupted, second.wait(t), "stderr:\n%s", second.stderr)
	stderr := second.stderr.String()
	assert.Contains(t, stderr, "hopdag run: interrupted by SIGINT while waiting for the lock of "+u.state+": nothing ran, and its status is as it was\n")
	assert.NotContains(t, stderr, "running components are told to stop")
	assert.Empty(t, second.stdout.String(), "no plan was printed: the run never started")
}

// A second interrupt ends hopdag at once, and its audit log says so to
// the end: the kill, then the exit status (130), as every other exit
// writes it.
func TestSecondInterruptAudited(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	audit, err := openAudit(path)
	require.NoError(t, err)
	signals := make(chan os.Signal, 2)
	exited := make(chan int, 1)
	grace := time.Second
	var stderr bytes.Buffer
	c := &cli{env: env{stderr: &stderr, signals: signals, exit: func(code int) { exited <- code }}, name: "run",
		rf: &runFlags{grace: &grace, audit: audit}}
	c.executing.Store(true)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan struct{})
	go c.watchSignals(cancel, done)
	signals <- os.Interrupt
	<-ctx.Done()
	signals <- os.Interrupt
	require.Equal(t, exitInterrupted, <-exited)
	close(done)
	require.NoError(t, audit.close())

	recs := auditLines(t, path)
	require.Len(t, recs, 3, "stderr:\n%s", stderr.String())
	assert.Equal(t, "stopping", recs[0].Reason)
	assert.Equal(t, "killed: second SIGINT", recs[1].Reason)
	assert.Equal(t, "exit", recs[2].Kind)
	require.NotNil(t, recs[2].Status)
	assert.Equal(t, exitInterrupted, *recs[2].Status)
}
