package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A --state carries one system from upgrade to upgrade: once an upgrade is
// finished (Succeeded, RolledBack, Abandoned), a run whose plan starts
// where it ended starts a new status in the same store, saying so on one
// line and in the audit log.
func TestNextUpgradeInTheSameState(t *testing.T) {
	sim := func(from, to string, extra ...string) []string {
		return append([]string{"run", "-", "--from", from, "--to", to, "--simulate", "--speed", "20000"}, extra...)
	}
	tests := []struct {
		name string
		// before are the commands that leave the status; %S is the --state.
		before [][]string
		// next is the new upgrade; prev and phase what its line names.
		next       []string
		prev       string
		phase      string
		wantStatus string
	}{
		{
			name:       "succeeded",
			before:     [][]string{sim("v26.06-rc.2", "v26.06-rc.3")},
			next:       sim("v26.06-rc.3", "v26.09"),
			prev:       "v26.06-rc.2 -> v26.06-rc.3",
			phase:      "Succeeded",
			wantStatus: "status v26.06-rc.3 -> v26.09: Succeeded",
		},
		{
			// The failed hop rolled back: the system runs its from-version.
			name:       "rolled back on its only hop",
			before:     [][]string{sim("v26.06-rc.2", "v26.06-rc.3", "--fail", "calico", "--on-failure", "rollback")},
			next:       sim("v26.06-rc.2", "v26.09"),
			prev:       "v26.06-rc.2 -> v26.06-rc.3",
			phase:      "RolledBack",
			wantStatus: "status v26.06-rc.2 -> v26.09: Succeeded",
		},
		{
			// Hop 1 stays done; hop 2 rolled back to v26.06.
			name:       "rolled back on its second hop",
			before:     [][]string{sim("v26.06-rc.3", "v26.09", "--fail", "etcd", "--on-failure", "rollback")},
			next:       sim("v26.06", "v26.09"),
			prev:       "v26.06-rc.3 -> v26.09",
			phase:      "RolledBack",
			wantStatus: "status v26.06 -> v26.09: Succeeded",
		},
		{
			name:       "abandoned",
			before:     [][]string{sim("v26.06-rc.2", "v26.06-rc.3", "--fail", "calico"), {"abandon", "--yes"}},
			next:       sim("v26.06-rc.2", "v26.09"),
			prev:       "v26.06-rc.2 -> v26.06-rc.3",
			phase:      "Abandoned",
			wantStatus: "status v26.06-rc.2 -> v26.09: Succeeded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			state, log := filepath.Join(dir, "state"), filepath.Join(dir, "audit.log")
			for _, args := range tt.before {
				code, _, stderr := invoke(append(args, "--state", state)...)
				require.NotEqual(t, exitUsage, code, "hopdag %s: %s", strings.Join(args, " "), stderr)
			}
			code, out, stderr := invoke(append(tt.next, "--state", state, "--log-file", log)...)
			require.Equal(t, 0, code, "hopdag %s: stderr:\n%s\nstdout:\n%s", strings.Join(tt.next, " "), stderr, out)
			assert.Regexp(t, `(?m)^the previous upgrade `+tt.prev+` in `+state+` ended `+tt.phase+` at \S+; a new upgrade starts there$`, stderr)
			assert.NotContains(t, stderr, "resuming from")
			assert.Contains(t, out, tt.wantStatus)

			recs := auditLines(t, log)
			i := indexKind(recs, "new-upgrade")
			require.GreaterOrEqual(t, i, 0, "the audit log records the new upgrade: %v", recs)
			assert.Equal(t, tt.phase, recs[i].Phase)
			assert.Contains(t, recs[i].Reason, tt.prev)

			_, table, _ := invoke("status", "--state", state)
			assert.Contains(t, table, tt.wantStatus, "the store holds the new upgrade")
		})
	}
}

// The brief's case with real commands: v1.0 -> v1.1, then v1.1 -> v2.0 in
// the same --state.
func TestNextUpgradeExec(t *testing.T) {
	u := newUpgrade(t)
	args := func(from, to string) []string {
		return []string{"run", execCatalog, "--from", from, "--to", to, "--state", u.state, "--set", "out=" + u.out, "--lease-ttl", testLeaseTTL}
	}
	code, _, stderr := invoke(args("v1.0", "v1.1")...)
	require.Equal(t, 0, code, stderr)
	code, out, stderr := invoke(args("v1.1", "v2.0")...)
	require.Equal(t, 0, code, "stderr:\n%s\nstdout:\n%s", stderr, out)
	assert.Contains(t, stderr, "the previous upgrade v1.0 -> v1.1 in "+u.state+" ended Succeeded at ")
	assert.Contains(t, out, "status v1.1 -> v2.0: Succeeded")
	got, err := os.ReadFile(filepath.Join(u.out, "db"))
	require.NoError(t, err)
	assert.Equal(t, "2.0\n", string(got))
}

// A run with another plan than the status's is refused when that status
// is not finished, or when the plan does not start where it ended; the
// message names the old upgrade and what to do, in CLI terms.
func TestNextUpgradeRefused(t *testing.T) {
	sim := func(from, to string, extra ...string) []string {
		return append([]string{"run", "-", "--from", from, "--to", to, "--simulate", "--speed", "20000"}, extra...)
	}
	tests := []struct {
		name   string
		before []string
		next   []string
		want   []string
	}{
		{
			name:   "failed",
			before: sim("v26.06-rc.2", "v26.06-rc.3", "--fail", "calico"),
			next:   sim("v26.06-rc.3", "v26.09"),
			want: []string{"holds the upgrade v26.06-rc.2 -> v26.06-rc.3, which Failed and is not finished",
				"resume it (hopdag run with --from v26.06-rc.2 --to v26.06-rc.3)", "abandon it (hopdag abandon --state %S)", "use another --state"},
		},
		{
			name:   "paused",
			before: sim("v26.06-rc.3", "v26.09", "--until", "v26.06"),
			next:   sim("v26.06", "v26.09"),
			want:   []string{"holds the upgrade v26.06-rc.3 -> v26.09, which Paused and is not finished", "hopdag abandon --state %S"},
		},
		{
			name:   "succeeded elsewhere",
			before: sim("v26.06-rc.2", "v26.06-rc.3"),
			next:   sim("v26.06", "v26.09"),
			want: []string{"the previous upgrade v26.06-rc.2 -> v26.06-rc.3 in %S ended Succeeded at v26.06-rc.3, not at v26.06",
				"start the next one --from v26.06-rc.3", "use another --state"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			code, _, stderr := invoke(append(tt.before, "--state", state)...)
			require.NotEqual(t, exitUsage, code, stderr)
			_, before, _ := invoke("status", "--state", state, "-o", "json")

			code, out, stderr := invoke(append(tt.next, "--state", state)...)
			assert.Equal(t, 1, code, "stderr:\n%s\nstdout:\n%s", stderr, out)
			for _, w := range tt.want {
				assert.Contains(t, stderr, strings.ReplaceAll(w, "%S", state))
			}
			for _, goTerm := range []string{"runner:", "status does not match plan", "no previous status"} {
				assert.NotContains(t, stderr, goTerm)
			}
			assert.NotContains(t, out, "resuming from", "nothing is resumed")
			_, after, _ := invoke("status", "--state", state, "-o", "json")
			assert.JSONEq(t, before, after, "the status is left alone")
		})
	}
}

func indexKind(recs []auditRecord, kind string) int {
	for i, r := range recs {
		if r.Kind == kind {
			return i
		}
	}
	return -1
}
