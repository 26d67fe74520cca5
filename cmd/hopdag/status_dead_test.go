package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner/runnertest"
	"github.com/hopdag/hopdag/state"
)

// leaseState is how a test leaves the lock of a File store after saving
// a status under it.
type leaseState int

const (
	leaseHeld     leaseState = iota // acquired just now, for a minute
	leaseInSkew                     // expired 5s ago, within its skew allowance of 10s
	leaseExpired                    // expired an hour ago
	leaseReleased                   // released
)

// savedWith writes st into a new File store under a lease of holder
// "node-a/42 (run)" left as ls says, and returns the directory.
func savedWith(t *testing.T, st *record.Status, ls leaseState) string {
	t.Helper()
	dir, _ := savedLease(t, st, ls)
	return dir
}

// savedLease is savedWith that returns the lease too.
func savedLease(t *testing.T, st *record.Status, ls leaseState) (string, state.Lease) {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	// A fake clock set back times the lease as if it was taken then.
	clock, ttl := runnertest.NewClock(now), time.Minute
	switch ls {
	case leaseInSkew:
		clock, ttl = runnertest.NewClock(now.Add(-105*time.Second)), 100*time.Second
	case leaseExpired:
		clock = runnertest.NewClock(now.Add(-time.Hour))
	}
	f, err := state.OpenFile(dir, state.WithClock(clock))
	require.NoError(t, err)
	defer f.Close()
	ctx := context.Background()
	l, err := f.Acquire(ctx, "node-a/42 (run)", ttl)
	require.NoError(t, err)
	require.NoError(t, f.Save(ctx, l.Token, st))
	if ls == leaseReleased {
		require.NoError(t, f.Release(ctx, l))
	}
	return dir, l
}

// hopdag status tells a run whose status says Pending or Running but whose
// coordinator no longer holds the lock (its lease expired past the skew
// allowance, or was released) from a run in progress: exit 4, and a
// message naming the holder, when its lease stopped being refreshed, and
// what to do. --watch ends there too. A live lease, or one still in its
// skew allowance (Acquire would refuse it), is a run in progress, and the
// other phases exit as before whatever the lease.
func TestStatusDeadCoordinator(t *testing.T) {
	for _, tt := range []struct {
		name  string
		phase record.Phase
		lease leaseState
		watch bool
		code  int
		// dead is what stderr says of a gone coordinator ("" none).
		dead string
	}{
		{"running, lease held", record.Running, leaseHeld, false, exitRunning, ""},
		{"running, lease in its skew allowance", record.Running, leaseInSkew, false, exitRunning, ""},
		{"running, lease expired", record.Running, leaseExpired, false, exitGone, "its coordinator node-a/42 (run) stopped refreshing its lease"},
		{"running, lease expired, watch", record.Running, leaseExpired, true, exitGone, "its coordinator node-a/42 (run) stopped refreshing its lease"},
		{"running, lease released", record.Running, leaseReleased, false, exitGone, "no coordinator holds its lock (its lease expired or was released)"},
		{"pending, lease expired", record.Pending, leaseExpired, false, exitGone, "its coordinator node-a/42 (run) stopped refreshing its lease"},
		{"waiting for approval, lease released", record.WaitingForApproval, leaseReleased, false, exitRunning, ""},
		{"paused, lease expired", record.Paused, leaseExpired, false, exitRunning, ""},
		{"succeeded, lease expired", record.Succeeded, leaseExpired, false, exitOK, ""},
		{"failed, lease expired", record.Failed, leaseExpired, false, exitInvalid, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, l := savedLease(t, fixture(tt.phase), tt.lease)
			args := []string{"status", "--state", dir}
			if tt.watch {
				args = append(args, "--watch", "--interval", "10ms")
			}
			code, out, stderr := invoke(args...)
			assert.Equal(t, tt.code, code, "hopdag %v: exit status; stderr:\n%s", args, stderr)
			assert.Contains(t, out, "status v1.0 -> v2.0: "+string(tt.phase), "the table is printed as before")
			if tt.dead == "" {
				assert.NotContains(t, stderr, "died or was killed", "a live coordinator or a run not in flight")
				return
			}
			assert.Contains(t, stderr, "hopdag status: v1.0 -> v2.0 says "+string(tt.phase)+", but "+tt.dead)
			assert.Contains(t, stderr, "it died or was killed; resume it with hopdag run (the same catalog, --from, --to and --state "+dir+
				"), or abandon it with hopdag abandon --state "+dir+" --force")
			if tt.lease == leaseExpired {
				assert.Contains(t, stderr, "lease "+strconv.FormatUint(l.Token, 10)+" at "+l.Expires.Add(-l.TTL).UTC().Format(time.RFC3339)+
					" (it expired at "+l.Expires.UTC().Format(time.RFC3339)+")")
			}
		})
	}
}

// status -h documents the exit statuses, exitGone among them.
func TestStatusHelpExitStatus(t *testing.T) {
	code, stdout, _ := invoke("status", "-h")
	require.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "Exit status: 0 the run succeeded;")
	assert.Contains(t, stdout, strconv.Itoa(exitGone)+" it says Pending or Running, but its\ncoordinator is gone")
}

// The case for real: a run SIGKILLed mid-command says Running, and
// hopdag status (and --watch, which used to poll forever) says its
// coordinator is gone once its lease expired, naming the killed process
// where the backend remembers the expired lease (a directory; etcd
// deletes it with the lock key); the run then resumes without waiting
// for the lock.
func TestStatusKilledRunIsGone(t *testing.T) {
	for _, tt := range []struct {
		name  string
		state func(t *testing.T, u upgrade) string
		// dead is what status says of the killed coordinator; PID is its
		// process id.
		dead string
	}{
		{"directory", func(t *testing.T, u upgrade) string { return u.state },
			`its coordinator \S+/PID \(run\) stopped refreshing its lease \d+ at \S+ \(it expired at \S+\)`},
		{"etcd", func(t *testing.T, u upgrade) string {
			return fmt.Sprintf("etcd://%s/hopdag/%s-%d", etcdEndpoint(t), strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
		}, `no coordinator holds its lock \(its lease expired or was released\)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := newUpgrade(t)
			u.state = tt.state(t, u)
			args := u.runArgs() // the least --lease-ttl, testLeaseTTL
			p := start(t, args...)
			waitFor(t, filepath.Join(u.out, "runs.log"), "start db 1.1")
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
			p.wait(t)
			killed := time.Now()

			watch := start(t, "status", "--state", u.state, "--watch", "-o", "json", "--interval", "50ms")
			require.Equal(t, exitGone, watch.wait(t), "status --watch of a killed run; stderr:\n%s", watch.stderr)
			// The lease (5s, refreshed every third; etcd may round it up
			// to its minimum) expires soon after the kill.
			took := time.Since(killed)
			t.Logf("status --watch ended %s after the kill", took.Round(time.Millisecond))
			assert.Less(t, took, 15*time.Second, "status --watch took long to see the lease expire")
			dead := strings.ReplaceAll(tt.dead, "PID", strconv.Itoa(p.cmd.Process.Pid))
			assert.Regexp(t, `hopdag status: v1\.0 -> v2\.0 says Running, but `+dead+`: it died or was killed`, watch.stderr.String())
			assert.Contains(t, watch.stdout.String(), `"phase":"Running"`, "--watch printed the status")

			code, out, stderr := hopdagRun(t, "", "status", "--state", u.state)
			assert.Equal(t, exitGone, code, "status of a killed run whose lease expired:\n%s\n%s", out, stderr)
			assert.Regexp(t, `db +1\.0 +1\.1 +Running`, out)
			assert.Contains(t, stderr, "hopdag abandon --state "+u.state+" --force")

			// The resumed run takes the tests' usual lease (testLeaseTTL): one
			// of 1s is lost when two refreshes in a row are slow, as they are
			// on a busy machine (CI saw "no refresh succeeded before its
			// expiry").
			code, out, stderr = hopdagRun(t, "", u.runArgs()...)
			require.Equal(t, exitOK, code, "resumed run; stdout:\n%s\nstderr:\n%s", out, stderr)
			assert.NotContains(t, stderr, "waiting until", "the lease had expired: the resumed run took the lock at once")
			code, _, stderr = hopdagRun(t, "", "status", "--state", u.state)
			assert.Equal(t, exitOK, code, "status of the resumed run; stderr:\n%s", stderr)
			assert.NotContains(t, stderr, "died or was killed")
		})
	}
}

// A killed run whose lease record (lease.json) was deleted: whether its
// coordinator lives cannot be told, so status takes it as alive (exit 3)
// and says why, rather than only "Running" for ever.
func TestStatusLeaseRecordMissing(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	p := start(t, "run", "-", "--from", "v26.06-rc.2", "--to", "v26.09", "--simulate", "--speed", "1", "--state", state, "--lease-ttl", testLeaseTTL)
	require.Eventually(t, func() bool {
		code, _, _ := hopdagRun(t, "", "status", "--state", state)
		return code == exitRunning
	}, 30*time.Second, 50*time.Millisecond, "the run's status says Running")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)
	require.NoError(t, os.Remove(filepath.Join(state, "lease.json")))
	code, out, stderr := hopdagRun(t, "", "status", "--state", state)
	assert.Equal(t, exitRunning, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.Contains(t, stderr, "the record of the lease on the lock of "+state+" is missing (deleted?), so whether lease 1's coordinator is alive cannot be told: it is taken as alive")
}
