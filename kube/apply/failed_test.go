package apply_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/apply"
	"github.com/hopdag/hopdag/release"
)

const job = `apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "migrate:1"}]
`

// A health check whose object kstatus calls Failed (a Job whose Failed
// condition is True: its pods failed past the backoff limit) fails the
// component at once, naming the object and the condition, without waiting
// out the check's timeout (the component's retry policy decides what
// follows).
func TestReadyFailedJob(t *testing.T) {
	ns := namespace(t)
	a, _ := newApplier(t, ns)
	m := components.NewManifest(a, components.WithInstance(ns))
	ctx := context.Background()
	jobs := gvr("batch", "v1", "jobs")
	c := cv("migrate", "v1.0", ns, job, release.HealthCheck{Name: "migrated",
		Timeout: release.D(time.Minute), Interval: release.D(100 * time.Millisecond), Params: map[string]string{"kind": "Job.batch"}})
	go func() {
		// The Job controller's view: the only pod failed.
		for range 200 {
			u, err := dyn.Resource(jobs).Namespace(ns).Get(ctx, "migrate", metav1.GetOptions{})
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			now := time.Now().UTC().Format(time.RFC3339)
			u.Object["status"] = map[string]any{"failed": int64(1), "startTime": now,
				"conditions": []any{
					map[string]any{"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit", "lastTransitionTime": now, "lastProbeTime": now},
					map[string]any{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit", "lastTransitionTime": now, "lastProbeTime": now},
				}}
			if _, err := dyn.Resource(jobs).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	start := time.Now()
	err := m.Run(ctx, task(nil, c))
	require.Error(t, err)
	assert.Less(t, time.Since(start), 30*time.Second, "a Failed object ends the check before its timeout")
	require.ErrorIs(t, err, apply.ErrFailed)
	ue, ok := errors.AsType[*apply.UnreadyError](err)
	require.True(t, ok, "%v", err)
	require.Len(t, ue.Objects, 1)
	assert.Equal(t, "Job.batch "+ns+"/migrate", ue.Objects[0].Object.String())
	assert.Equal(t, "Failed", ue.Objects[0].Status)
	assert.Contains(t, err.Error(), "failed")
	assert.Contains(t, err.Error(), "BackoffLimitExceeded")
}
