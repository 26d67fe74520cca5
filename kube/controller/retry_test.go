package controller_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// failFirst runs every task through rn, and fails the first attempt of
// component with err; failedAt, when set, receives the time it failed.
type failFirst struct {
	rn        *runnertest.Runner
	component string
	err       error
	failedAt  chan time.Time
}

func (f failFirst) Run(ctx context.Context, t runner.Task) error {
	if err := f.rn.Run(ctx, t); err != nil {
		return err
	}
	if t.Component == f.component && t.Attempt == 1 {
		if f.failedAt != nil {
			select {
			case f.failedAt <- time.Now():
			default:
			}
		}
		return f.err
	}
	return nil
}

// TestComponentRetryShown: while a component that failed waits for its
// retry (bkeagent: 3 attempts, backoff 10s) and while it runs again, the
// status shows it (the upgrade looked hung: nothing in status.plan or
// Progressing said that a component had failed and would run again):
// status.plan.retrying names the component, the attempt that failed, its
// code and error (the first line, cut) and when the next attempt is due
// (then that it runs), Progress.Retrying counts it, Progressing says so,
// and a ComponentRetrying Warning Event reports the failed attempt. Once
// the retry succeeds, the status no longer shows it.
func TestComponentRetryShown(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	long := "apply DaemonSet kube-system/bkeagent: " + strings.Repeat("x", 600)
	rn := runnertest.New().Script("bkeagent", runnertest.Script{Delay: 2 * time.Second}) // each attempt: the retry is seen running
	failed := make(chan time.Time, 1)
	startOperator(t, opConfig{rn: rn, inner: failFirst{rn: rn, component: "bkeagent", err: errors.New(long + "\nsecond line of the error"), failedAt: failed}})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.06-rc.3")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)

	got := waitFor(t, c, key, 30*time.Second, "showing the retry", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Plan != nil && len(cv.Status.Plan.Retrying) > 0
	})
	ps := got.Status.Plan
	require.Len(t, ps.Retrying, 1, "%+v", ps.Retrying)
	r := ps.Retrying[0]
	assert.Equal(t, 0, r.Hop)
	assert.Equal(t, "bkeagent", r.Component)
	assert.Equal(t, 1, r.Attempt)
	assert.Equal(t, string(record.CodeComponentFailed), r.Code)
	assert.Equal(t, long[:253]+"...", r.Message, "the first line, cut to 256 bytes")
	assert.False(t, r.Running)
	due := r.NextAttemptAt.Time
	// The backoff counts from the failed attempt's end, which the runner
	// saw (not from the ClusterVersion's creation: how long the hop took
	// to reach bkeagent depends on the machine).
	var failedAt time.Time
	select {
	case failedAt = <-failed:
	default:
		t.Fatal("the status shows a retry, but bkeagent's first attempt has not failed")
	}
	assert.WithinRange(t, due, failedAt.Add(5*time.Second), failedAt.Add(12*time.Second), "the next attempt is due after the backoff (10s, less the jitter) from the failure at %s", failedAt)
	assert.Equal(t, 1, ps.Progress.Retrying)
	assert.Equal(t, v1alpha1.PhaseUpgrading, got.Status.Phase)
	p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	require.NotNil(t, p)
	assert.Equal(t, metav1.ConditionTrue, p.Status)
	assert.Contains(t, p.Message, "working towards v26.06-rc.3: ")
	assert.Contains(t, p.Message, "; retrying bkeagent on hop 1: attempt 1 failed (COMPONENT_FAILED: apply DaemonSet kube-system/bkeagent: xxx")
	assert.Contains(t, p.Message, "), attempt 2 due at "+due.UTC().Format(time.RFC3339))
	assert.NotContains(t, p.Message, "second line")

	var notes []string
	require.Eventually(t, func() bool {
		notes = eventNotes(t, c, ns, "ComponentRetrying")
		return len(notes) > 0
	}, 10*time.Second, 100*time.Millisecond, "a ComponentRetrying Event")
	assert.Equal(t, "Warning", eventType(t, c, ns, "ComponentRetrying"))
	require.Len(t, notes, 1)
	assert.True(t, strings.HasPrefix(notes[0], "component bkeagent on hop 1 (v26.06-rc.2 -> v26.06-rc.3): attempt 1 failed (COMPONENT_FAILED: apply DaemonSet kube-system/bkeagent: xxx"), notes[0])
	// The backoff is 10s less up to a fifth (the executor's jitter).
	assert.Regexp(t, `\.\.\.\); attempt 2 due at `+regexp.QuoteMeta(due.UTC().Format(time.RFC3339))+` \(in (8|9|10)s\)$`, notes[0])

	got = waitFor(t, c, key, 30*time.Second, "running the retry", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Plan != nil && len(cv.Status.Plan.Retrying) == 1 && cv.Status.Plan.Retrying[0].Running
	})
	p = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	assert.Contains(t, p.Message, "; retrying bkeagent on hop 1: attempt 1 failed (COMPONENT_FAILED: apply DaemonSet kube-system/bkeagent: xxx")
	assert.True(t, strings.HasSuffix(p.Message, "...), attempt 2 running"), p.Message)

	done := waitFor(t, c, key, 60*time.Second, "at v26.06-rc.3", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.06-rc.3"
	})
	assert.Empty(t, done.Status.Plan.Retrying, "the retry succeeded")
	assert.Zero(t, done.Status.Plan.Progress.Retrying)
	assert.Len(t, eventNotes(t, c, ns, "ComponentRetrying"), 1, "one Event per failed attempt")
	require.NoError(t, c.Delete(ctx, done))
}
