package record_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// full is a status with every field set.
func full() *record.Status {
	return &record.Status{
		Phase: record.Failed, Track: "platform", From: "v1.0", To: "v2.0", CurrentHop: 0,
		Hops: []record.HopStatus{{
			Track: "platform", From: "v1.0", To: "v2.0", Phase: record.Failed, Code: record.CodeComponentFailed, Message: "a failed",
			StartedAt: t0, FinishedAt: t0.Add(time.Minute), Duration: release.D(time.Minute),
			Checks:     []record.CheckStatus{{Name: "ready", Stage: "pre", Required: true, Phase: record.Succeeded}},
			Components: []record.ComponentStatus{{Name: "a", FromVersion: "v1", ToVersion: "v2", Phase: record.Failed, Attempts: 2, Order: 1, Step: "upgrade", StartedAt: t0, FinishedAt: t0.Add(time.Second), Duration: release.D(time.Second), Code: record.CodeComponentFailed, Error: "boom", Stack: "goroutine 1"}},
			Warnings:   []string{"check soft failed"},
		}},
		Progress:      record.Progress{Done: 0, Total: 1},
		LastFailure:   &record.Failure{Hop: 0, Component: "a", Version: "v2", Attempt: 2, Code: record.CodeComponentFailed, Error: "boom", Time: t0},
		Code:          record.CodeComponentFailed,
		Message:       "a failed",
		StartedAt:     t0,
		FinishedAt:    t0.Add(time.Minute),
		Runs:          1,
		Catalog:       record.CatalogSource{Ref: "oci://r/c:v2", Digest: "sha256:ab", Cached: true, Note: "n"},
		Waiting:       []string{"v2.0/b"},
		Approvals:     []record.Approval{{Step: "v2.0", By: "ops", At: t0}},
		Gates:         []string{"v2.0/b"},
		FailurePolicy: "fail-fast",
	}
}

func TestStatusRoundTrip(t *testing.T) {
	s := full()
	t.Run("json", func(t *testing.T) {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		var got record.Status
		require.NoError(t, json.Unmarshal(b, &got))
		assert.Equal(t, s, &got, "json round trip of %s", b)
	})
	t.Run("yaml", func(t *testing.T) {
		b, err := yaml.Marshal(s)
		require.NoError(t, err)
		var got record.Status
		require.NoError(t, yaml.Unmarshal(b, &got))
		assert.Equal(t, s, &got, "yaml round trip of %s", b)
	})
	t.Run("empty hops", func(t *testing.T) {
		b, err := json.Marshal(&record.Status{Hops: []record.HopStatus{}})
		require.NoError(t, err)
		assert.Contains(t, string(b), `"hops":[]`)
		assert.NotContains(t, string(b), "catalog", "an empty CatalogSource is omitted")
	})
}

func TestStatusDeepCopy(t *testing.T) {
	s := full()
	cp := s.DeepCopy()
	require.Equal(t, s, cp, "DeepCopy equals the original")
	cp.Hops[0].Components[0].Error = "changed"
	cp.Hops[0].Checks[0].Error = "changed"
	cp.Hops[0].Warnings[0] = "changed"
	cp.LastFailure.Error = "changed"
	cp.Waiting[0], cp.Gates[0], cp.Approvals[0].By = "changed", "changed", "changed"
	assert.Equal(t, full(), s, "the original after changing its copy")

	var into record.Status
	s.DeepCopyInto(&into)
	assert.Equal(t, s, &into, "DeepCopyInto")
	var nilStatus *record.Status
	assert.Nil(t, nilStatus.DeepCopy(), "DeepCopy of nil")
}

func TestStatusAbandon(t *testing.T) {
	comp := func(ph record.Phase, attempts int) record.ComponentStatus {
		return record.ComponentStatus{Name: "c", Phase: ph, Attempts: attempts}
	}
	tests := []struct {
		name      string
		hop       record.Phase
		comp      record.ComponentStatus
		reason    string
		wantHop   record.Phase
		wantHopM  string
		wantComp  record.Phase
		wantCompR string
	}{
		{"pending", record.Pending, comp(record.Pending, 0), "r", record.Cancelled, "not started: abandoned (r)", record.Cancelled, "not started: abandoned (r)"},
		{"running", record.Running, comp(record.Running, 1), "r", record.Cancelled, "interrupted: abandoned (r)", record.Cancelled, "interrupted: abandoned (r)"},
		{"waiting, never started", record.WaitingForApproval, comp(record.WaitingForApproval, 0), "", record.Cancelled, "not started: abandoned", record.Cancelled, "not started: abandoned"},
		{"paused after a step", record.Paused, record.ComponentStatus{Name: "c", Phase: record.Paused, Step: "drain"}, "r", record.Cancelled, "interrupted: abandoned (r)", record.Cancelled, "interrupted: abandoned (r)"},
		{"rolling back", record.RollingBack, comp(record.RollingBack, 1), "r", record.RollbackFailed, "rollback interrupted: abandoned (r)", record.RollbackFailed, "rollback interrupted: abandoned (r)"},
		{"finished stays", record.Failed, comp(record.Succeeded, 1), "r", record.Failed, "", record.Succeeded, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &record.Status{Phase: record.Failed, Waiting: []string{"x"}, Hops: []record.HopStatus{{Phase: tt.hop, Components: []record.ComponentStatus{tt.comp}}}}
			require.NoError(t, s.Abandon(tt.reason, t0))
			assert.Equal(t, record.Abandoned, s.Phase)
			assert.Equal(t, record.CodeAbandoned, s.Code)
			assert.Equal(t, tt.reason, s.Message)
			assert.Equal(t, t0, s.FinishedAt)
			assert.Empty(t, s.Waiting, "Waiting after Abandon")
			h, c := s.Hops[0], s.Hops[0].Components[0]
			assert.Equal(t, tt.wantHop, h.Phase, "hop phase")
			assert.Equal(t, tt.wantHopM, h.Message, "hop message")
			assert.Equal(t, tt.wantComp, c.Phase, "component phase")
			assert.Equal(t, tt.wantCompR, c.Reason, "component reason")
		})
	}
	s := &record.Status{Phase: record.Succeeded}
	assert.ErrorContains(t, s.Abandon("late", t0), "record: cannot abandon a run that succeeded")
	assert.Equal(t, record.Succeeded, s.Phase, "phase after a refused Abandon")
}

func TestStatusApprove(t *testing.T) {
	tests := []struct {
		name    string
		waiting []string
		given   []record.Approval
		step    string
		by      string
		notWait bool
		errText string
	}{
		{name: "waiting step", waiting: []string{"v2.0", "v2.0/a"}, step: "v2.0/a", by: "ops"},
		{name: "no one approves", waiting: []string{"v2.0"}, step: "v2.0", errText: "record: approve v2.0: say who approves (by is empty)"},
		{name: "not waiting", waiting: []string{"v2.0"}, step: "v3.0", by: "ops", notWait: true, errText: "v3.0 (waiting: v2.0)"},
		{name: "nothing waits", step: "v3.0", by: "ops", notWait: true, errText: "v3.0 (nothing waits)"},
		{name: "approved twice", waiting: []string{"v2.0"}, given: []record.Approval{{Step: "v2.0", By: "bob"}}, step: "v2.0", by: "ops", notWait: true, errText: "v2.0 was already approved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &record.Status{Waiting: tt.waiting, Approvals: tt.given}
			err := s.Approve(tt.step, tt.by, t0)
			if tt.errText == "" {
				require.NoError(t, err)
				assert.True(t, s.Approved(tt.step), "Approved(%s) after Approve", tt.step)
				assert.Equal(t, []record.Approval{{Step: tt.step, By: tt.by, At: t0}}, s.Approvals)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.errText)
			assert.Equal(t, tt.notWait, errors.Is(err, record.ErrNotWaiting), "errors.Is(%v, ErrNotWaiting)", err)
			assert.Equal(t, tt.given, s.Approvals, "approvals after a refused Approve")
		})
	}
}

func TestPhaseTerminal(t *testing.T) {
	terminal := map[record.Phase]bool{record.Succeeded: true, record.Failed: true, record.Skipped: true, record.Cancelled: true, record.Abandoned: true}
	for _, p := range record.Phases() {
		assert.Equal(t, terminal[p], p.Terminal(), "%s.Terminal()", p)
	}
}

func TestPhasesAndCodesDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range record.Phases() {
		assert.False(t, seen[string(p)], "phase %s listed twice", p)
		seen[string(p)] = true
	}
	assert.Len(t, seen, 12, "Phases()")
	seen = map[string]bool{}
	for _, c := range record.Codes() {
		assert.False(t, seen[string(c)], "code %s listed twice", c)
		seen[string(c)] = true
	}
	assert.Len(t, seen, 14, "Codes()")
}

func TestStatusComponent(t *testing.T) {
	s := &record.Status{Hops: []record.HopStatus{
		{Components: []record.ComponentStatus{{Name: "a"}, {Name: "b"}}},
		{Components: []record.ComponentStatus{{Name: "b"}}},
	}}
	tests := []struct {
		hop  int
		name string
		ok   bool
	}{
		{0, "a", true}, {0, "b", true}, {1, "b", true}, {1, "a", false}, {2, "a", false}, {-1, "a", false},
	}
	for _, tt := range tests {
		cs, ok := s.Component(tt.hop, tt.name)
		require.Equal(t, tt.ok, ok, "Component(%d, %q) found", tt.hop, tt.name)
		if ok {
			cs.Attempts = 7
			assert.Equal(t, 7, s.Hops[tt.hop].Components[indexOf(s.Hops[tt.hop], tt.name)].Attempts, "Component returns a pointer into the status")
		}
	}
}

func TestComponentStarted(t *testing.T) {
	tests := []struct {
		c    record.ComponentStatus
		want bool
	}{
		{record.ComponentStatus{}, false},
		{record.ComponentStatus{Attempts: 1}, true},
		{record.ComponentStatus{Step: "drain"}, true},
		{record.ComponentStatus{Phase: record.Running}, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.c.Started(), "%+v.Started()", tt.c)
	}
}

func TestCatalogSourceString(t *testing.T) {
	tests := []struct {
		s    record.CatalogSource
		want string
	}{
		{record.CatalogSource{}, ""},
		{record.CatalogSource{Ref: "oci://r/c:v1"}, "oci://r/c:v1"},
		{record.CatalogSource{Ref: "oci://r/c:v1", Digest: "sha256:ab"}, "oci://r/c:v1 (sha256:ab)"},
		{record.CatalogSource{Ref: "oci://r/c:v1", Digest: "sha256:ab", Note: "from the cache"}, "oci://r/c:v1 (sha256:ab); from the cache"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.s.String(), "%+v.String()", tt.s)
	}
}

func indexOf(h record.HopStatus, name string) int {
	for i, c := range h.Components {
		if c.Name == name {
			return i
		}
	}
	return -1
}
