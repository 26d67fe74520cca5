package controlplane_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hopdag/hopdag/kube/internal/controlplane"
)

// cp is the control plane the package's tests share, with 2 fake nodes.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { os.Exit(controlplane.Main(m, &cp, controlplane.WithNodes(2))) }

func clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cp.Need(t)
	cs, err := kubernetes.NewForConfig(cp.Config())
	require.NoError(t, err)
	return cs
}

// namespace creates a namespace for the test, its name prefix then a
// random suffix (a test may run several times: go test -count).
func namespace(t *testing.T, cs kubernetes.Interface, prefix string) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return ns.Name
}

// TestNodes checks that every fake node is Ready and schedulable.
func TestNodes(t *testing.T) {
	cs := clientset(t)
	assert.Equal(t, []string{"kwok-node-0", "kwok-node-1"}, cp.Nodes())
	for _, name := range cp.Nodes() {
		n, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "fake", n.Annotations[controlplane.AnnotationNode], "node %s", name)
		assert.Empty(t, n.Spec.Taints, "node %s", name)
		assert.Contains(t, conditions(n.Status.Conditions), "Ready=True", "node %s", name)
	}
}

func conditions(cs []corev1.NodeCondition) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	return out
}

// TestPodReadiness runs a pod through each of kwok's pod stages: ready at
// once, ready after its AnnotationReadyDelay, and never ready under
// LabelReady=false.
func TestPodReadiness(t *testing.T) {
	cs := clientset(t)
	ns := namespace(t, cs, "pod-readiness")
	tests := []struct {
		name      string
		labels    map[string]string
		annots    map[string]string
		ready     bool
		notBefore time.Duration
	}{
		{name: "ready", ready: true},
		{name: "delayed", annots: map[string]string{controlplane.AnnotationReadyDelay: "2s"}, ready: true, notBefore: 2 * time.Second},
		{name: "never-ready", labels: map[string]string{controlplane.LabelReady: "false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: tt.name, Labels: tt.labels, Annotations: tt.annots},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app:v1"}}},
			}
			start := time.Now()
			_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			require.NoError(t, err)
			var got *corev1.Pod
			// Running is reached in each case; Ready only in some.
			require.Eventually(t, func() bool {
				got, err = cs.CoreV1().Pods(ns).Get(ctx, tt.name, metav1.GetOptions{})
				return err == nil && got.Status.Phase == corev1.PodRunning
			}, 20*time.Second, 50*time.Millisecond, "pod %s never Running", tt.name)
			took := time.Since(start)
			assert.NotEmpty(t, got.Spec.NodeName, "scheduled")
			assert.GreaterOrEqual(t, took, tt.notBefore, "Running after %s", took)
			ready := false
			for _, c := range got.Status.Conditions {
				if c.Type == corev1.PodReady {
					ready = c.Status == corev1.ConditionTrue
				}
			}
			assert.Equal(t, tt.ready, ready, "pod %s Ready", tt.name)
			if !tt.ready {
				// It stays not ready.
				time.Sleep(time.Second)
				got, err = cs.CoreV1().Pods(ns).Get(ctx, tt.name, metav1.GetOptions{})
				require.NoError(t, err)
				for _, c := range got.Status.Conditions {
					if c.Type == corev1.PodReady {
						assert.Equal(t, corev1.ConditionFalse, c.Status, "still not Ready a second later")
					}
				}
			}
		})
	}
}
