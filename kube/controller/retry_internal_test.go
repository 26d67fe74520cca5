package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// TestCutLine: a failed attempt's error is shown by its first line, cut
// at a rune boundary with "..." within the limit.
func TestCutLine(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		n              int
	}{
		{name: "short", in: "boom", n: 10, want: "boom"},
		{name: "exact", in: "0123456789", n: 10, want: "0123456789"},
		{name: "long", in: "0123456789a", n: 10, want: "0123456..."},
		{name: "first line", in: "boom\nmore", n: 10, want: "boom"},
		{name: "first line cut", in: "0123456789ab\nmore", n: 10, want: "0123456..."},
		{name: "rune boundary", in: "012345ééé", n: 10, want: "012345..."}, // é is 2 bytes: 7 bytes would split one
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cutLine(tc.in, tc.n)
			assert.Equal(t, tc.want, got, "cutLine(%q, %d)", tc.in, tc.n)
			assert.LessOrEqual(t, len(got), tc.n)
		})
	}
}

// TestEventBudget: at most n Events a window; the first one let through
// after some were held back says how many.
func TestEventBudget(t *testing.T) {
	b := eventBudget{n: 2, window: time.Minute}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type take struct {
		at   time.Duration
		ok   bool
		held int
	}
	for i, want := range []take{
		{0, true, 0}, {time.Second, true, 0}, {2 * time.Second, false, 0}, {3 * time.Second, false, 0},
		{time.Minute, true, 2}, {time.Minute + time.Second, true, 0}, {time.Minute + 2*time.Second, false, 0},
		{3 * time.Minute, true, 1},
	} {
		ok, held := b.take(t0.Add(want.at))
		assert.Equal(t, want, take{want.at, ok, held}, "take %d at +%v", i, want.at)
	}
}

// TestRetryingText: Progressing names the first retried components and
// counts the others; the list is by hop, then name, and capped.
func TestRetryingText(t *testing.T) {
	due := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 10, 0, time.UTC))
	rs := retries{}
	for i := range 12 {
		name := fmt.Sprintf("c%02d", i)
		rs[retryKey{i % 2, name}] = v1alpha1.Retry{Hop: i % 2, Component: name, Attempt: 1, Code: "COMPONENT_FAILED", Message: "boom", NextAttemptAt: due, Running: i == 2}
	}
	list, n := rs.list()
	assert.Equal(t, 12, n)
	assert.Len(t, list, maxRetryListed)
	var names []string
	for _, rt := range list {
		names = append(names, fmt.Sprintf("%d/%s", rt.Hop, rt.Component))
	}
	assert.Equal(t, "0/c00 0/c02 0/c04 0/c06 0/c08 0/c10 1/c01 1/c03 1/c05 1/c07", strings.Join(names, " "))

	ps := &v1alpha1.PlanSummary{Retrying: list, Progress: v1alpha1.Progress{Retrying: n}}
	assert.Equal(t, "; retrying c00 on hop 1: attempt 1 failed (COMPONENT_FAILED: boom), attempt 2 due at 2026-01-01T12:00:10Z"+
		"; retrying c02 on hop 1: attempt 1 failed (COMPONENT_FAILED: boom), attempt 2 running"+
		"; retrying c04 on hop 1: attempt 1 failed (COMPONENT_FAILED: boom), attempt 2 due at 2026-01-01T12:00:10Z"+
		"; and 9 more components retrying (status.plan.retrying)", retryingText(ps))
	assert.Empty(t, retryingText(&v1alpha1.PlanSummary{}))
	list, n = retries{}.list()
	assert.Nil(t, list)
	assert.Zero(t, n)
}

// WithLogger(nil) means the default, a logger that discards, as it does
// for runner and state: a nil *slog.Logger would crash the first log.
func TestWithLoggerNil(t *testing.T) {
	r := New(nil, nil, nil, WithLogger(nil))
	require.NotNil(t, r.logger, "New(..., WithLogger(nil)).logger")
	r.logger.Info("discarded")
}
