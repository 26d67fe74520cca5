package controller_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// failWith runs every task through rn, and fails each task of the
// components it names (every one when it names none) for good with err.
type failWith struct {
	rn         *runnertest.Runner
	components []string
	err        error
}

func (f failWith) Run(ctx context.Context, t runner.Task) error {
	if err := f.rn.Run(ctx, t); err != nil {
		return err
	}
	for _, c := range f.components {
		if c == t.Component {
			return runner.Permanent(f.err)
		}
	}
	if len(f.components) == 0 {
		return runner.Permanent(f.err)
	}
	return nil
}

// componentEvents are the Events of reason about the ClusterVersion.
func componentEvents(t *testing.T, c client.Client, ns, reason string) []eventsv1.Event {
	t.Helper()
	var l eventsv1.EventList
	require.NoError(t, c.List(context.Background(), &l, client.InNamespace(ns)))
	var out []eventsv1.Event
	for _, e := range l.Items {
		if e.Regarding.Kind == "ClusterVersion" && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// TestLongEventNoteShown: a component that fails with an error longer
// than the 1,024 bytes events.k8s.io/v1 accepts in a note (a readiness
// timeout naming 5 Deployments, 1,642 bytes) has its ComponentFailed
// Event, its note cut to the limit and saying how much was left out. (The
// reconciler cut notes at 4,096 bytes: the API server refused the Event,
// and client-go's recorder drops a refused Event without a word.)
func TestLongEventNoteShown(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	var unready []string
	for i := range 5 {
		unready = append(unready, fmt.Sprintf("Deployment.apps kube-system/bkeagent-controller-%d: InProgress: Deployment does not have minimum availability. [Available=False (MinimumReplicasUnavailable: Deployment does not have minimum availability.); Progressing=True (ReplicaSetUpdated: ReplicaSet \"bkeagent-controller-%d-7d9f8c6b5d\" is progressing.)]", i, i))
	}
	long := "apply: 5 objects not ready: " + strings.Join(unready, "; ") + ": context deadline exceeded"
	require.Greater(t, len("component bkeagent failed on hop 1 (COMPONENT_FAILED: "+long+")"), 1024)
	rn := runnertest.New()
	startOperator(t, opConfig{rn: rn, inner: failWith{rn: rn, components: []string{"bkeagent"}, err: errors.New(long)}})
	cv := newCV(ns, "v26.06-rc.2", "v26.06-rc.3")
	require.NoError(t, c.Create(context.Background(), cv))
	key := client.ObjectKeyFromObject(cv)
	waitFor(t, c, key, 60*time.Second, "failed", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseFailed })

	var evs []eventsv1.Event
	require.Eventually(t, func() bool {
		evs = componentEvents(t, c, ns, "ComponentFailed")
		return len(evs) > 0
	}, 10*time.Second, 100*time.Millisecond, "a ComponentFailed Event for a %d-byte error", len(long))
	require.Len(t, evs, 1)
	note := evs[0].Note
	assert.LessOrEqual(t, len(note), 1024, "note of %d bytes", len(note))
	assert.True(t, strings.HasPrefix(note, "component bkeagent failed on hop 1 (COMPONENT_FAILED: apply: 5 objects not ready: Deployment.apps kube-system/bkeagent-controller-0: "), note)
	assert.Regexp(t, `\.\.\. and \d+ more bytes$`, note)
	assert.Equal(t, "Component bkeagent", evs[0].Action)
	abandonAndDelete(t, c, key)
}

// TestComponentFailedEventsBounded: 200 components failing at once give
// at most 10 ComponentFailed Events (ComponentRetrying's budget), then one
// that names the others when the hop ends. (Each failure had its own
// Warning Event: 200 at once.)
func TestComponentFailedEventsBounded(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	const n = 200
	chain{versions: 2, components: n}.create(t, c, ns)
	rn := runnertest.New()
	startOperator(t, opConfig{rn: rn, inner: failWith{rn: rn, err: errors.New("pulling the image: registry unreachable")}})
	cv := newCV(ns, chainVersion(0), chainVersion(1))
	require.NoError(t, c.Create(context.Background(), cv))
	key := client.ObjectKeyFromObject(cv)
	waitFor(t, c, key, 2*time.Minute, "failed", func(cv *v1alpha1.ClusterVersion) bool { return cv.Status.Phase == v1alpha1.PhaseFailed })
	require.Len(t, rn.Records(), n, "every component ran, and failed")

	summary := func(e eventsv1.Event) bool { return strings.HasPrefix(e.Action, "Components failed on hop ") }
	var evs []eventsv1.Event
	require.Eventually(t, func() bool {
		// The 11 Events are sent in the background, in no set order.
		evs = componentEvents(t, c, ns, "ComponentFailed")
		return len(evs) >= 11 && slices.ContainsFunc(evs, summary)
	}, 10*time.Second, 100*time.Millisecond, "a ComponentFailed Event naming the failures without one of their own, and 10 of one component each")
	var own int
	for _, e := range evs {
		assert.Equal(t, "Warning", e.Type)
		if summary(e) {
			assert.True(t, strings.HasPrefix(e.Note, fmt.Sprintf("%d more components failed on hop 1 (%s -> %s) without an Event of their own (at most 10 ComponentFailed Events a 1m0s): c", n-10, chainVersion(0), chainVersion(1))), e.Note)
			assert.Contains(t, e.Note, fmt.Sprintf(" and %d more; ", n-10-20), "the first 20 named, the others counted")
			continue
		}
		own++
	}
	assert.Equal(t, 10, own, "ComponentFailed Events of one component each")
	assert.Len(t, evs, 11, "ComponentFailed Events")
	abandonAndDelete(t, c, key)
}
