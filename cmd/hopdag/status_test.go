package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/state"
)

// saved writes st into a new File store and returns its directory.
func saved(t *testing.T, st *record.Status) string {
	t.Helper()
	dir := t.TempDir()
	f, err := state.OpenFile(dir)
	require.NoError(t, err)
	defer f.Close()
	ctx := context.Background()
	lease, err := f.Acquire(ctx, "test", time.Minute)
	require.NoError(t, err)
	require.NoError(t, f.Save(ctx, lease.Token, st))
	require.NoError(t, f.Release(ctx, lease))
	return dir
}

// fixture is a failed run of the exec catalog, from a bundle the local
// cache held: cache and config succeeded, db failed twice, app was
// skipped, a check that is not required failed (a warning); hop 2 never
// started.
func fixture(phase record.Phase) *record.Status {
	t0 := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	st := &record.Status{Phase: phase, From: "v1.0", To: "v2.0", Runs: 1, StartedAt: t0, CurrentHop: 0,
		Catalog:  record.CatalogSource{Ref: "oci://registry.example/demo/exec:v2.0", Digest: "sha256:5f0c9e2a", Cached: true, Note: "registry unreachable: using the digest this tag last resolved to"},
		Progress: record.Progress{Done: 3, Total: 6},
		Hops: []record.HopStatus{
			{From: "v1.0", To: "v1.1", Phase: phase, StartedAt: t0, Warnings: []string{"pre-check disk-space failed: 91% used"}, Components: []record.ComponentStatus{
				{Name: "app", FromVersion: "1.0", ToVersion: "1.1", Phase: record.Skipped, Code: record.CodeDependencyFailed, Reason: "dependency db failed"},
				{Name: "cache", FromVersion: "1.0", ToVersion: "1.1", Phase: record.Succeeded, Attempts: 1, StartedAt: at(0.001), FinishedAt: at(0.221), Duration: release.D(220 * time.Millisecond)},
				{Name: "config", FromVersion: "1.0", ToVersion: "1.1", Phase: record.Succeeded, Attempts: 1, StartedAt: at(0), FinishedAt: at(0.228), Duration: release.D(228 * time.Millisecond)},
				{Name: "db", FromVersion: "1.0", ToVersion: "1.1", Phase: record.Failed, Attempts: 2, StartedAt: at(0.3), FinishedAt: at(1.9), Duration: release.D(1600 * time.Millisecond),
					Code: record.CodeComponentFailed, Error: "components: db 1.1: exec: sh: exit code 3\nlast lines of stderr: disk full"},
			}},
			{From: "v1.1", To: "v2.0", Phase: record.Pending, Components: []record.ComponentStatus{
				{Name: "app", FromVersion: "1.1", ToVersion: "2.0", Phase: record.Pending},
				{Name: "db", FromVersion: "1.1", ToVersion: "2.0", Phase: record.Pending},
			}},
		},
	}
	if phase == record.Failed {
		st.Code, st.Message, st.FinishedAt = record.CodeComponentFailed, "component db failed", at(2)
		st.LastFailure = &record.Failure{Hop: 0, Component: "db", Version: "1.1", Attempt: 2, Code: record.CodeComponentFailed,
			Error: "components: db 1.1: exec: sh: exit code 3", Time: at(1.9)}
	}
	return st
}

func TestStatusGolden(t *testing.T) {
	dir := saved(t, fixture(record.Failed))
	for _, tt := range []struct{ golden, output string }{
		{"status.golden", "table"}, {"status-json.golden", "json"}, {"status-yaml.golden", "yaml"},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			code, out, stderr := invoke("status", "--state", dir, "-o", tt.output)
			assert.Equal(t, 1, code, "status of a failed run exits 1; stderr:\n%s", stderr)
			golden(t, tt.golden, out)
		})
	}
}

func TestStatusExitCodes(t *testing.T) {
	for _, tt := range []struct {
		phase record.Phase
		code  int
	}{
		{record.Succeeded, 0}, {record.Failed, 1}, {record.Cancelled, 1}, {record.Abandoned, 1},
		{record.Running, 3}, {record.Pending, 3}, {record.WaitingForApproval, 3}, {record.Paused, 3},
	} {
		t.Run(string(tt.phase), func(t *testing.T) {
			code, out, stderr := invoke("status", "--state", savedWith(t, fixture(tt.phase), leaseHeld))
			assert.Equal(t, tt.code, code, "hopdag status of a %s run; stderr:\n%s", tt.phase, stderr)
			assert.Contains(t, out, "status v1.0 -> v2.0: "+string(tt.phase))
		})
	}
}

// Without the plan, status lists a hop's components in the order they
// started, then those that did not.
func TestStatusOrderWithoutPlan(t *testing.T) {
	_, out, _ := invoke("status", "--state", saved(t, fixture(record.Failed)))
	assert.Regexp(t, `(?s)config .*cache .*db .*app .*\n2 v1.1`, out)
}

// hopdag status lists components in the order hopdag run does (the
// plan's batch order, recorded in the status), not in start order.
func TestStatusOrderIsRunOrder(t *testing.T) {
	u := newUpgrade(t)
	code, out, stderr := invoke(u.runArgs()...)
	require.Equal(t, 0, code, stderr)
	code, st, stderr := invoke("status", "--state", u.state)
	require.Equal(t, 0, code, stderr)
	rowsOfTable := func(s string) []string {
		var names []string
		for line := range strings.Lines(s[strings.LastIndex(s, "HOP "):]) {
			if f := strings.Fields(line); len(f) > 4 && f[0] != "HOP" {
				names = append(names, f[0]+" "+f[4])
			}
		}
		return names
	}
	assert.Equal(t, rowsOfTable(out), rowsOfTable(st))
	assert.NotEmpty(t, rowsOfTable(st))
}
