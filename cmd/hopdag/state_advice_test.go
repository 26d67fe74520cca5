package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
)

// The state package's errors end in advice for a program ("acquire it
// again"); message, which every command's errors and the status and
// audit texts go through, says instead what to run, whatever wraps them.
func TestStateAdviceNamesTheCommand(t *testing.T) {
	expires := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"final checkpoint, lock free", fmt.Errorf("runner: final checkpoint failed: %w", &state.FencedError{Token: 2}),
			"the lock is free (the lease expired or was released): nothing more was saved; run the same hopdag command again"},
		{"checkpoint, status written by a newer lease", fmt.Errorf("runner: checkpoint failed, run stopped: %w", &state.FencedError{Token: 2, Written: 3}),
			"which already wrote the status: another hopdag took the lock since, and nothing more was saved; run the same hopdag command again"},
		{"lease lost", &state.LostError{Lease: state.Lease{Token: 2, Holder: "h"}, Err: &state.FencedError{Token: 2}},
			"nothing more was saved; run the same hopdag command again"},
		{"lease record missing", &state.LockedError{Holder: "x", Token: 4, Expires: expires, Missing: "/s/lease.json"},
			"if none runs, run the same hopdag command again after that"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := message(tc.err)
			assert.Contains(t, got, tc.want, "message(%q)", tc.err)
			assert.NotContains(t, got, "acquire", "message(%q) = %q: library advice", tc.err, got)
			assert.Contains(t, got, "hopdag status --state", "message(%q) = %q: says how to see what the state holds", tc.err, got)
		})
	}
}

// hopdag status says once that it cannot read the lease, though it reads
// it twice (before and after the status) and both reads fail alike.
func TestStatusLeaseErrorOnce(t *testing.T) {
	dir := savedWith(t, fixture(record.Running), leaseHeld)
	require.NoError(t, os.WriteFile(filepath.Join(dir, state.LeaseFile), []byte("{garbage"), 0o644))
	code, out, stderr := invoke("status", "--state", dir)
	assert.Contains(t, out, "Running", "the status is printed")
	assert.Equal(t, exitRunning, code, "stderr:\n%s", stderr)
	assert.Contains(t, stderr, "cannot read the lease on the lock of "+dir)
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: the error is said once:\n%s", stderr)
}

// What the library logs on stderr (a lost lease's error, from the
// state's Keeper) is in the command line's terms too, in either
// --log-format.
func TestLoggedStateAdvice(t *testing.T) {
	lost := &state.LostError{Lease: state.Lease{Token: 2, Holder: "h"}, Err: &state.FencedError{Token: 2}}
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var stderr strings.Builder
			c := &cli{env: env{stderr: &stderr}, name: "run", rf: &runFlags{logFormat: &format}}
			c.setLogFormat()
			c.log.With("store", &state.FencedError{Token: 1}).Warn("state: lease lost; cancelling the run", "error", lost)
			assert.NotContains(t, stderr.String(), "acquire", "library advice")
			assert.Equal(t, 2, strings.Count(stderr.String(), "run the same hopdag command again"), "both errors in CLI terms:\n%s", stderr.String())
		})
	}
}
