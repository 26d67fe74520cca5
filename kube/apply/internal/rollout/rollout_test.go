package rollout_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/apply"
	"github.com/hopdag/hopdag/kube/internal/controlplane"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// deployment renders Deployment web at an image tag: 3 replicas replaced
// one at a time (maxSurge 1, maxUnavailable 0), each pod Ready 1s after
// it starts, so that the rollout takes at least 3s.
func deployment(tag string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  template:
    metadata:
      labels: {app: web}
      annotations: {%s: 1s}
    spec:
      containers: [{name: web, image: "example.invalid/web:%s"}]
`, controlplane.AnnotationReadyDelay, tag)
}

// TestDeploymentRollout upgrades a Deployment's image: the new ReplicaSet
// scales up while the old one scales down, and the Manifest's wait
// returns when, and only when, the new ReplicaSet is Available and the
// old one has no pod left.
func TestDeploymentRollout(t *testing.T) {
	t.Parallel()
	cs, ns := setup(t)
	m := manifest(t, ns)
	v1 := component("web", "v1.0", ns, "Deployment", deployment("v1"), time.Minute)
	v2 := component("web", "v2.0", ns, "Deployment", deployment("v2"), time.Minute)
	_, err := run(t, m, nil, v1)
	require.NoError(t, err)

	rs := watchReplicaSets(t, cs, ns)
	current := watchCurrent(t, appsv1.SchemeGroupVersion.WithResource("deployments"), ns, "web", 2)
	took, err := run(t, m, v1, v2)
	returned := time.Now()
	require.NoError(t, err)
	current.assertPrompt(t, "Deployment web", returned)

	// The moment the wait returned: the rollout is complete.
	ctx := context.Background()
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, d.Generation, d.Status.ObservedGeneration, "observedGeneration")
	assert.Equal(t, []int32{3, 3, 3}, []int32{d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas}, "Deployment replicas, updated, available")
	list, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	require.Len(t, list.Items, 2, "the old and the new ReplicaSet")
	for _, r := range list.Items {
		image := r.Spec.Template.Spec.Containers[0].Image
		got := []int32{*r.Spec.Replicas, r.Status.Replicas, r.Status.AvailableReplicas}
		if image == "example.invalid/web:v2" {
			assert.Equal(t, []int32{3, 3, 3}, got, "new ReplicaSet %s: spec replicas, replicas, available", r.Name)
		} else {
			assert.Equal(t, []int32{0, 0, 0}, got, "old ReplicaSet %s (%s): spec replicas, replicas, available", r.Name, image)
		}
	}
	assert.Equal(t, map[string]int{"example.invalid/web:v2": 3}, liveImages(t, cs, ns, "app=web"), "live pods by image")
	// And it was a rollout: both ReplicaSets had pods at once, and three
	// pods each Ready 1s after starting came one after the other.
	assert.True(t, rs.overlapped(), "the old and the new ReplicaSet never had pods at the same time")
	assert.GreaterOrEqual(t, took, 3*time.Second, "the wait returned before three pods could each get Ready in turn")
}

// daemonSet renders DaemonSet agent at an image tag: a pod per node,
// replaced one at a time, each Ready 500ms after it starts.
func daemonSet(tag string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}
  template:
    metadata:
      labels: {app: agent}
      annotations: {%s: 500ms}
    spec:
      containers: [{name: agent, image: "example.invalid/agent:%s"}]
`, controlplane.AnnotationReadyDelay, tag)
}

// TestDaemonSetRollout upgrades a DaemonSet on the 5 fake nodes: the wait
// returns once every node runs an updated, available pod
// (updatedNumberScheduled 5).
func TestDaemonSetRollout(t *testing.T) {
	t.Parallel()
	cs, ns := setup(t)
	m := manifest(t, ns)
	v1 := component("agent", "v1.0", ns, "DaemonSet", daemonSet("v1"), time.Minute)
	v2 := component("agent", "v2.0", ns, "DaemonSet", daemonSet("v2"), time.Minute)
	_, err := run(t, m, nil, v1)
	require.NoError(t, err)
	current := watchCurrent(t, appsv1.SchemeGroupVersion.WithResource("daemonsets"), ns, "agent", 2)
	took, err := run(t, m, v1, v2)
	returned := time.Now()
	require.NoError(t, err)
	current.assertPrompt(t, "DaemonSet agent", returned)

	ctx := context.Background()
	ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ds.Generation, ds.Status.ObservedGeneration, "observedGeneration")
	assert.Equal(t, map[string]int32{"desired": nodes, "updated": nodes, "available": nodes, "ready": nodes},
		map[string]int32{"desired": ds.Status.DesiredNumberScheduled, "updated": ds.Status.UpdatedNumberScheduled,
			"available": ds.Status.NumberAvailable, "ready": ds.Status.NumberReady}, "DaemonSet status")
	assert.Equal(t, map[string]int{"example.invalid/agent:v2": nodes}, liveImages(t, cs, ns, "app=agent"), "live pods by image")
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	require.NoError(t, err)
	var on []string
	for _, p := range pods.Items {
		on = append(on, p.Spec.NodeName)
	}
	slices.Sort(on)
	assert.Equal(t, cp.Nodes(), on, "one pod on each node")
	assert.GreaterOrEqual(t, took, nodes*500*time.Millisecond, "the wait returned before %d pods could each get Ready in turn", nodes)
}

// statefulSet renders StatefulSet db at an image tag: 3 replicas, only
// ordinals from 1 up updated (partition 1), each pod Ready 500ms after it
// starts.
func statefulSet(tag string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 1}}
  template:
    metadata:
      labels: {app: db}
      annotations: {%s: 500ms}
    spec:
      containers: [{name: db, image: "example.invalid/db:%s"}]
`, controlplane.AnnotationReadyDelay, tag)
}

// TestStatefulSetPartitionedRollout upgrades a StatefulSet whose partition
// is 1: the wait returns once db-2 and db-1 run the new image and are
// Ready, while db-0 keeps the old one.
func TestStatefulSetPartitionedRollout(t *testing.T) {
	t.Parallel()
	cs, ns := setup(t)
	m := manifest(t, ns)
	v1 := component("db", "v1.0", ns, "StatefulSet", statefulSet("v1"), time.Minute)
	v2 := component("db", "v2.0", ns, "StatefulSet", statefulSet("v2"), time.Minute)
	_, err := run(t, m, nil, v1)
	require.NoError(t, err)
	current := watchCurrent(t, appsv1.SchemeGroupVersion.WithResource("statefulsets"), ns, "db", 2)
	took, err := run(t, m, v1, v2)
	returned := time.Now()
	require.NoError(t, err)
	current.assertPrompt(t, "StatefulSet db", returned)

	ctx := context.Background()
	sts, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, sts.Generation, sts.Status.ObservedGeneration, "observedGeneration")
	assert.Equal(t, map[string]int32{"replicas": 3, "ready": 3, "updated": 2},
		map[string]int32{"replicas": sts.Status.Replicas, "ready": sts.Status.ReadyReplicas, "updated": sts.Status.UpdatedReplicas}, "StatefulSet status")
	assert.NotEqual(t, sts.Status.CurrentRevision, sts.Status.UpdateRevision, "a partitioned rollout leaves two revisions")
	want := map[string]string{"db-0": "example.invalid/db:v1", "db-1": "example.invalid/db:v2", "db-2": "example.invalid/db:v2"}
	got := map[string]string{}
	for name := range want {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		got[name] = p.Spec.Containers[0].Image
		assert.True(t, podReady(p), "pod %s Ready", name)
	}
	assert.Equal(t, want, got, "images by pod")
	assert.GreaterOrEqual(t, took, 2*500*time.Millisecond, "the wait returned before db-2 and db-1 could each get Ready in turn")
}

// TestRolloutNeverCompletes upgrades a Deployment to pods that run but
// never get Ready (controlplane.LabelReady=false): the wait times out
// with an error naming the Deployment and its kstatus message, and the
// old ReplicaSet keeps serving; the hop's rollback then restores v1,
// observed rolled back.
func TestRolloutNeverCompletes(t *testing.T) {
	t.Parallel()
	cs, ns := setup(t)
	m := manifest(t, ns)
	tpl := func(tag, labels string) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck}
spec:
  replicas: 2
  selector: {matchLabels: {app: stuck}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  template:
    metadata: {labels: {app: stuck%s}}
    spec:
      containers: [{name: app, image: "example.invalid/stuck:%s"}]
`, labels, tag)
	}
	const timeout = 3 * time.Second
	v1 := component("stuck", "v1.0", ns, "Deployment", tpl("v1", ""), time.Minute)
	v2 := component("stuck", "v2.0", ns, "Deployment", tpl("v2", ", "+controlplane.LabelReady+": 'false'"), timeout)
	_, err := run(t, m, nil, v1)
	require.NoError(t, err)
	took, runErr := run(t, m, v1, v2)
	require.Error(t, runErr)
	assert.GreaterOrEqual(t, took, timeout, "the wait gave up before its timeout")

	var nre *components.NotReadyError
	require.ErrorAs(t, runErr, &nre)
	assert.Equal(t, "stuck-ready", nre.Check)
	var ue *apply.UnreadyError
	require.ErrorAs(t, runErr, &ue)
	require.Len(t, ue.Objects, 1, "objects not ready")
	u := ue.Objects[0]
	assert.Equal(t, components.Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: "stuck"}, u.Object)
	assert.Equal(t, string(status.InProgressStatus), u.Status)
	// The message is kstatus's for the Deployment as it stays.
	ctx := context.Background()
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "stuck", metav1.GetOptions{})
	require.NoError(t, err)
	live := kstatus(t, d)
	assert.Equal(t, live.Message, u.Message, "the error's kstatus message is the live Deployment's")
	assert.Equal(t, "Updated: 1/2", u.Message)
	assert.Contains(t, runErr.Error(), "Deployment.apps "+ns+"/stuck: InProgress: Updated: 1/2", "the error names the object and its kstatus message")

	// The rollout is held: the old pods serve, the new one runs unready.
	assert.Equal(t, int32(2), d.Status.AvailableReplicas, "available replicas")
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=stuck"})
	require.NoError(t, err)
	ready := map[string][]bool{}
	for _, p := range pods.Items {
		ready[p.Spec.Containers[0].Image] = append(ready[p.Spec.Containers[0].Image], podReady(&p))
	}
	assert.Equal(t, map[string][]bool{"example.invalid/stuck:v1": {true, true}, "example.invalid/stuck:v2": {false}}, ready, "pods' readiness by image")

	// Rolling the hop back (what the runner's Rollback policy does) applies
	// v1 again and waits for it: the unready pod goes, the old
	// ReplicaSet is the Deployment's again.
	_, err = rollback(t, m, v1, v2)
	require.NoError(t, err)
	d, err = cs.AppsV1().Deployments(ns).Get(ctx, "stuck", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "example.invalid/stuck:v1", d.Spec.Template.Spec.Containers[0].Image, "the Deployment's image after the rollback")
	assert.Equal(t, string(status.CurrentStatus), string(kstatus(t, d).Status), "the Deployment's kstatus after the rollback")
	assert.Equal(t, []int32{2, 2, 2}, []int32{d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas}, "Deployment replicas, updated, available")
	assert.Equal(t, map[string]int{"example.invalid/stuck:v1": 2}, liveImages(t, cs, ns, "app=stuck"), "live pods by image after the rollback")
}

// rollback rolls a hop back through the Manifest, the way the runner's
// Rollback policy does, and returns how long it took.
func rollback(t *testing.T, m *components.Manifest, from, to *release.ComponentVersion) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	err := m.Rollback(context.Background(), runner.Task{Component: to.Name, From: from, To: to, Attempt: 1})
	took := time.Since(start)
	t.Logf("%s rollback %s -> %s: %s (err: %v)", to.Name, to.Version, from.Version, took.Round(time.Millisecond), err)
	return took, err
}

// kstatus computes the kstatus result of a typed object.
func kstatus(t *testing.T, d *appsv1.Deployment) *status.Result {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	res, err := status.Compute(u)
	require.NoError(t, err)
	return res
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// liveImages counts the pods matching selector that are not being
// deleted, by the image of their first container.
func liveImages(t *testing.T, cs kubernetes.Interface, ns, selector string) map[string]int {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Spec.Containers[0].Image]++
		}
	}
	return out
}

// currentWatch records when a watched object was first seen kstatus
// Current at a generation at least gen: when its rollout completed.
type currentWatch struct {
	mu sync.Mutex
	at time.Time
}

// watchCurrent watches one object of resource r until the test ends.
func watchCurrent(t *testing.T, r schema.GroupVersionResource, ns, name string, gen int64) *currentWatch {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cp.Config())
	require.NoError(t, err)
	wi, err := dyn.Resource(r).Namespace(ns).Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	require.NoError(t, err)
	w := &currentWatch{}
	done := make(chan struct{})
	t.Cleanup(func() { wi.Stop(); <-done })
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || u.GetGeneration() < gen {
				continue
			}
			if res, err := status.Compute(u); err == nil && res.Status == status.CurrentStatus {
				w.mu.Lock()
				if w.at.IsZero() {
					w.at = time.Now()
				}
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// assertPrompt checks that the wait, which returned at returned, did so
// once the watch had seen the object complete (the watch may hear of it a
// little after the wait's read: 250ms are allowed) and not later than 2s
// after (the check polls every 100ms).
func (w *currentWatch) assertPrompt(t *testing.T, what string, returned time.Time) {
	t.Helper()
	var at time.Time
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		at = w.at
		return !at.IsZero()
	}, 5*time.Second, 10*time.Millisecond, "the watch never saw %s complete", what)
	lag := returned.Sub(at)
	assert.True(t, lag > -250*time.Millisecond && lag < 2*time.Second,
		"the wait returned %s after the watch saw %s complete: want from -250ms to 2s", lag, what)
	t.Logf("the wait returned %s after the watch saw %s complete", lag.Round(time.Millisecond), what)
}

// rsWatch records, from a watch of a namespace's ReplicaSets, whether two
// of them ever had pods (status.replicas) at the same time.
type rsWatch struct {
	mu       sync.Mutex
	replicas map[string]int32
	both     bool
}

func (w *rsWatch) overlapped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.both
}

// watchReplicaSets watches the namespace's ReplicaSets until the test
// ends.
func watchReplicaSets(t *testing.T, cs kubernetes.Interface, ns string) *rsWatch {
	t.Helper()
	wi, err := cs.AppsV1().ReplicaSets(ns).Watch(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	w := &rsWatch{replicas: map[string]int32{}}
	done := make(chan struct{})
	t.Cleanup(func() { wi.Stop(); <-done })
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			r, ok := ev.Object.(*appsv1.ReplicaSet)
			if !ok {
				continue
			}
			w.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(w.replicas, r.Name)
			} else {
				w.replicas[r.Name] = r.Status.Replicas
			}
			n := 0
			for _, c := range w.replicas {
				if c > 0 {
					n++
				}
			}
			w.both = w.both || n >= 2
			w.mu.Unlock()
		}
	}()
	return w
}
