package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/state"
)

// failingCatalog writes a catalog from v1.0 to v2.0 of two exec
// components: slow, whose 2.0 runs script with sh under timeout (a
// spec.timeout, "" for none), and app, which depends on it. It returns
// the catalog's directory.
func failingCatalog(t *testing.T, script, timeout string) string {
	t.Helper()
	if timeout != "" {
		timeout = ", timeout: " + timeout
	}
	doc := fmt.Sprintf(`apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: v1}
spec: {version: v1.0, components: [{name: slow, version: "1.0"}, {name: app, version: "1.0"}]}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: v2}
spec: {version: v2.0, components: [{name: slow, version: "2.0"}, {name: app, version: "2.0"}]}
---
apiVersion: hopdag.io/v1alpha1
kind: UpgradePath
metadata: {name: paths}
spec: {rules: [{from: v1.0, to: v2.0}]}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: slow-1}
spec: {name: slow, version: "1.0", type: exec, command: {args: [sh, -c, "true"]}}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: slow-2}
spec: {name: slow, version: "2.0", type: exec%s, command: {args: [sh, -c, %q]}}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: app-1}
spec: {name: app, version: "1.0", type: exec, command: {args: [sh, -c, "true"]}}
---
apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: app-2}
spec: {name: app, version: "2.0", type: exec, dependencies: [slow], command: {args: [sh, -c, "true"]}}
`, timeout, script)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(doc), 0o644))
	return dir
}

// The audit log of a run with a short --lease-ttl whose command outlives
// a few TTLs holds the lock's refreshes while the command runs: the same
// holder and token as the lock acquired, each expiry later than the one
// before, the last past the command's end, and no lost lease; the lock is
// released last. The failure events carry their code: COMPONENT_FAILED
// for a command that exits non-zero, COMPONENT_TIMEOUT for one its
// spec.timeout stops, DEPENDENCY_FAILED on the skipped dependent; the
// hop and the plan fail with the component's code.
func TestAuditLeaseRefreshAndCodes(t *testing.T) {
	const ttl = state.MinTTL // the least --lease-ttl: refreshed every third
	for _, tc := range []struct {
		name, script, timeout string
		code                  string
		errText               string
	}{
		{"exit status", "sleep 11; echo broken >&2; exit 3", "", "COMPONENT_FAILED", "exit code 3"},
		{"timeout", "sleep 60", "10500ms", "COMPONENT_TIMEOUT", "timed out after 10.5s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			log := filepath.Join(d, "audit.log")
			args := []string{"run", failingCatalog(t, tc.script, tc.timeout), "--from", "v1.0", "--to", "v2.0",
				"--state", filepath.Join(d, "state"), "--lease-ttl", ttl.String(), "--log-file", log, "--grace", "200ms"}
			code, out, stderr := invoke(args...)
			require.Equal(t, exitInvalid, code, "the run fails; stdout:\n%s\nstderr:\n%s", out, stderr)

			recs := auditLines(t, log)
			require.NotEmpty(t, recs)
			assert.Equal(t, "exit", recs[len(recs)-1].Kind)
			require.NotNil(t, recs[len(recs)-1].Status)
			assert.EqualValues(t, exitInvalid, *recs[len(recs)-1].Status)

			// The lock: acquired first, refreshed, released last.
			var acquired, released *auditRecord
			var refreshed []auditRecord
			var started, failed, skipped, hopFailed, finished *auditRecord
			for i := range recs {
				r := &recs[i]
				switch r.Kind + " " + r.Event {
				case "lock Acquired":
					acquired = r
				case "lock Refreshed":
					refreshed = append(refreshed, *r)
				case "lock Released":
					released = r
				case "lock Lost", "lock RefreshFailed", "lock ReleaseFailed", "lock Refused":
					t.Errorf("audit log: lock %s: %+v", r.Event, *r)
				case "event ComponentStarted":
					if r.Component == "slow" {
						started = r
					}
				case "event ComponentFailed":
					failed = r
				case "event ComponentSkipped":
					skipped = r
				case "event HopFailed":
					hopFailed = r
				case "event PlanFinished":
					finished = r
				}
			}
			require.NotNil(t, acquired, "the audit log records the lock acquired")
			require.NotNil(t, released, "the audit log records the lock released")
			require.NotNil(t, started, "the audit log records slow's start")
			require.NotNil(t, failed, "the audit log records slow's failure")

			var during []auditRecord // refreshes while slow ran
			for _, r := range refreshed {
				assert.Equal(t, acquired.Holder, r.Holder, "a refresh keeps the holder")
				assert.Equal(t, acquired.Token, r.Token, "a refresh keeps the fencing token")
				if r.Time.After(started.Time) && r.Time.Before(failed.Time) {
					during = append(during, r)
				}
			}
			ran := failed.Time.Sub(started.Time)
			require.Greater(t, ran, 2*ttl, "slow ran for more than two TTLs")
			// A refresh every third of the TTL: at least one per TTL the
			// command ran, with room for a slow machine.
			assert.GreaterOrEqual(t, len(during), int(ran/ttl), "refreshes while slow ran for %s with --lease-ttl %s: %+v", ran, ttl, during)
			prev := acquired.Expires
			for _, r := range refreshed {
				assert.True(t, r.Expires.After(prev), "each refresh extends the lease: %s, then %s", prev, r.Expires)
				prev = r.Expires
			}
			require.NotEmpty(t, during)
			assert.True(t, acquired.Expires.Before(failed.Time), "slow outlived the lease first acquired (until %s; failed at %s)", acquired.Expires, failed.Time)
			assert.True(t, during[len(during)-1].Expires.After(failed.Time), "the lease refreshed last while slow ran (until %s) outlives it (failed at %s)", during[len(during)-1].Expires, failed.Time)
			assert.Equal(t, acquired.Token, released.Token, "the lease released is the one acquired")
			for _, r := range recs {
				if r.Kind == "lock" {
					assert.False(t, r.Time.After(released.Time), "lock %s after the release", r.Event)
				}
			}

			// The failure codes.
			assert.Equal(t, "slow", failed.Component)
			assert.Equal(t, "2.0", failed.Version)
			assert.Equal(t, 1, failed.Attempt)
			assert.Equal(t, tc.code, failed.Code, "ComponentFailed's code")
			assert.Contains(t, failed.Error, tc.errText, "ComponentFailed's error")
			if assert.NotNil(t, skipped, "the audit log records app skipped") {
				assert.Equal(t, "app", skipped.Component)
				assert.Equal(t, "DEPENDENCY_FAILED", skipped.Code, "ComponentSkipped's code")
				assert.Equal(t, "dependency slow failed", skipped.Reason)
			}
			if assert.NotNil(t, hopFailed, "the audit log records the hop failed") {
				assert.Equal(t, tc.code, hopFailed.Code, "HopFailed's code")
				assert.Equal(t, "Failed", hopFailed.Phase)
			}
			if assert.NotNil(t, finished, "the audit log records the plan finished") {
				assert.Equal(t, tc.code, finished.Code, "PlanFinished's code")
				assert.Equal(t, "Failed", finished.Phase)
			}
		})
	}
}
