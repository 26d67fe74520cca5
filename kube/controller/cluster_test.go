package controller_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/kube/store"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// workload starts a second API server, the workload cluster, and
// returns it with a client of it and its kubeconfig.
func workload(t *testing.T) (*envtest.Environment, client.Client) {
	t.Helper()
	env := &envtest.Environment{}
	wcfg, err := env.Start()
	require.NoError(t, err, "starting the workload cluster's API server")
	t.Cleanup(func() { _ = env.Stop() })
	wc, err := client.New(wcfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return env, wc
}

// clusterRunner applies each component as a ConfigMap
// hopdag-COMPONENT-VERSION in the default namespace of the cluster of
// cfg, as a manifest runner applies its objects there.
func clusterRunner(cfg *rest.Config) (runner.Runner, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hopdag-" + t.Component + "-" + strings.ReplaceAll(t.To.Version.String(), "+", "-")}}
		if err := c.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}), nil
}

// kubeconfigSecret is the Secret NAME-kubeconfig holding kubeconfig under
// "value", as Cluster API writes it.
func kubeconfigSecret(ns, name string, kubeconfig []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-kubeconfig"}, Data: map[string][]byte{"value": kubeconfig}}
}

// clusterOperator starts an operator whose runners apply to the cluster
// of spec.clusterRef (clusterRunner), recording its runs in kube/store
// on the management API server; it counts the runners it was asked for,
// by host.
func clusterOperator(t *testing.T, c client.Client) func() map[string]int {
	var mu sync.Mutex
	asked := map[string]int{}
	runnerFor := func(_ types.NamespacedName, cluster *rest.Config) (runner.Runner, error) {
		require.NotNil(t, cluster, "a ClusterVersion with spec.clusterRef gets its cluster's rest.Config")
		mu.Lock()
		asked[cluster.Host]++
		mu.Unlock()
		return clusterRunner(cluster)
	}
	stores := func(k types.NamespacedName) (state.Store, state.Lock, error) {
		s, err := store.New(c, k.Namespace, "hopdag-"+k.Name)
		return s, s, err
	}
	startOperator(t, opConfig{stores: stores, opts: []controller.Option{controller.WithRunnerFor(runnerFor), controller.WithClusterCheckInterval(200 * time.Millisecond)}})
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range asked {
			out[k] = v
		}
		return out
	}
}

// deleteAtEnd deletes cv when the test ends, before its operator stops
// (the finalizer), and waits until it is gone: the other tests of the
// package share the API server, and operators that watch every namespace.
func deleteAtEnd(t *testing.T, c client.Client, cv *v1alpha1.ClusterVersion) {
	t.Cleanup(func() {
		ctx := context.Background()
		key := client.ObjectKeyFromObject(cv)
		_ = c.Delete(ctx, &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
		assert.Eventually(t, func() bool { return apierrors.IsNotFound(c.Get(ctx, key, &v1alpha1.ClusterVersion{})) }, 30*time.Second, 50*time.Millisecond, "ClusterVersion %s deleted", key)
	})
}

// workloadConfigMaps are the names of the ConfigMaps clusterRunner
// applied in c's cluster.
func workloadConfigMaps(t *testing.T, c client.Client) []string {
	t.Helper()
	var l corev1.ConfigMapList
	require.NoError(t, c.List(context.Background(), &l, client.InNamespace("default")))
	var out []string
	for _, cm := range l.Items {
		if strings.HasPrefix(cm.Name, "hopdag-") {
			out = append(out, cm.Name)
		}
	}
	return out
}

// TestClusterRef upgrades a workload cluster from the management
// cluster: the components' objects land in the workload cluster, the
// run record, status and Events stay in the management cluster. A
// rotated kubeconfig is used for the next upgrade without a restart.
func TestClusterRef(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	env, wc := workload(t)
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, kubeconfigSecret(ns, "work", env.KubeConfig)))
	asked := clusterOperator(t, c)

	cv := newCV(ns, "v26.06", "v26.06.1")
	cv.Spec.ClusterRef = &v1alpha1.ClusterRef{Name: "work"}
	require.NoError(t, c.Create(ctx, cv))
	deleteAtEnd(t, c, cv)
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 60*time.Second, "at v26.06.1", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.06.1" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	assert.Equal(t, v1alpha1.HistoryCompleted, got.Status.History[0].State)

	inWorkload := workloadConfigMaps(t, wc)
	assert.NotEmpty(t, inWorkload, "the components' objects are in the workload cluster")
	assert.Empty(t, workloadConfigMaps(t, c), "no component object is in the management cluster")
	rec, err := newKubeStore(t, c, ns, "hopdag-cluster").Load(ctx)
	require.NoError(t, err)
	require.NotNil(t, rec, "the run's record is in the management cluster")
	var leases corev1.ConfigMapList
	require.NoError(t, wc.List(ctx, &leases, client.InNamespace(ns)))
	assert.Empty(t, leases.Items, "nothing of the run record is in the workload cluster")
	waitReason(t, c, ns, "UpgradeCompleted") // the Events are in the management cluster
	host := strings.TrimSuffix(env.Config.Host, "/")
	assert.Equal(t, map[string]int{host: 1}, asked(), "one runner made for the cluster")

	// The kubeconfig is rotated (a new user of the same API server): the
	// next upgrade is asked a new runner, with the new credentials.
	user, err := env.AddUser(envtest.User{Name: "rotated", Groups: []string{"system:masters"}}, nil)
	require.NoError(t, err)
	rotated, err := user.KubeConfig()
	require.NoError(t, err)
	var s corev1.Secret
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "work-kubeconfig"}, &s))
	s.Data["value"] = rotated
	require.NoError(t, c.Update(ctx, &s))
	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "v26.09" })
	waitFor(t, c, key, 60*time.Second, "at v26.09 with the rotated kubeconfig", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	assert.Greater(t, len(workloadConfigMaps(t, wc)), len(inWorkload), "the second upgrade's objects are in the workload cluster too")
	assert.Equal(t, map[string]int{host: 2}, asked(), "the rotated kubeconfig got a runner of its own, without a restart")
}

// TestClusterUnreachable: a missing Secret, a Secret without the key, a
// kubeconfig that does not parse, and a workload API server that is
// stopped each give Failing reason ClusterUnreachable naming the cause,
// and nothing runs; once the Secret is right and the cluster answers,
// the upgrade goes on by itself (the reconcile is tried again with
// backoff).
func TestClusterUnreachable(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	env, wc := workload(t)
	ctx := context.Background()
	tests := []struct {
		name   string
		secret func(ns string) *corev1.Secret // nil: none
		ref    v1alpha1.ClusterRef
		want   string
	}{
		{"missing Secret", nil, v1alpha1.ClusterRef{Name: "work"}, "Secret NS/work-kubeconfig not found: create it"},
		{"no such key", func(ns string) *corev1.Secret {
			s := kubeconfigSecret(ns, "work", env.KubeConfig)
			s.Data = map[string][]byte{"kubeconfig": env.KubeConfig}
			return s
		}, v1alpha1.ClusterRef{Name: "work"}, `Secret NS/work-kubeconfig has no key "value" (its keys: kubeconfig): set spec.clusterRef.key`},
		{"not a kubeconfig", func(ns string) *corev1.Secret {
			return kubeconfigSecret(ns, "work", []byte("clusters: [{"))
		}, v1alpha1.ClusterRef{Name: "work"}, `Secret NS/work-kubeconfig key "value" is not a kubeconfig`},
		{"secret name and key overridden, missing", nil, v1alpha1.ClusterRef{Name: "work", SecretName: "creds", Key: "cfg"}, "(kubeconfig Secret NS/creds[cfg]): Secret NS/creds not found"},
	}
	// A namespace per case, made before the operator starts, which
	// watches only those.
	nss := make([]string, len(tests)+1) // and the last for "API server stopped"
	for i := range nss {
		nss[i] = newNamespace(t, c)
	}
	asked := clusterOperator(t, c)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := nss[i]
			applyCatalog(t, c, ns, catalogDir)
			if tt.secret != nil {
				require.NoError(t, c.Create(ctx, tt.secret(ns)))
			}
			cv := newCV(ns, "v26.06", "v26.09")
			cv.Spec.ClusterRef = &tt.ref
			require.NoError(t, c.Create(ctx, cv))
			deleteAtEnd(t, c, cv)
			key := client.ObjectKeyFromObject(cv)
			want := strings.ReplaceAll(tt.want, "NS", ns)
			got := waitFor(t, c, key, 30*time.Second, "ClusterUnreachable", func(cv *v1alpha1.ClusterVersion) bool {
				f := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionFailing)
				return f != nil && f.Reason == controller.ReasonClusterUnreachable
			})
			f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
			assert.Contains(t, f.Message, want)
			assert.Contains(t, f.Message, "nothing is applied until it answers")
			assert.Equal(t, v1alpha1.PhaseIdle, got.Status.Phase)
			assert.Empty(t, got.Status.History, "no upgrade started")
			waitReason(t, c, ns, controller.ReasonClusterUnreachable)

			// Made right, the upgrade starts with no other change.
			name, k := "work-kubeconfig", "value"
			if tt.ref.SecretName != "" {
				name, k = tt.ref.SecretName, tt.ref.Key
			}
			var s corev1.Secret
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &s); err == nil {
				require.NoError(t, c.Delete(ctx, &s))
			}
			require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{k: env.KubeConfig}}))
			waitFor(t, c, key, 60*time.Second, "at v26.09 once the Secret is right", func(cv *v1alpha1.ClusterVersion) bool {
				f := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionFailing)
				return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle && f != nil && f.Status == metav1.ConditionFalse
			})
		})
	}
	require.NotEmpty(t, workloadConfigMaps(t, wc))
	require.Equal(t, len(tests), asked()[strings.TrimSuffix(env.Config.Host, "/")], "one runner per ClusterVersion, made once its Secret was right")

	t.Run("API server stopped", func(t *testing.T) {
		ns := nss[len(tests)]
		applyCatalog(t, c, ns, catalogDir)
		require.NoError(t, c.Create(ctx, kubeconfigSecret(ns, "work", env.KubeConfig)))
		require.NoError(t, env.Stop())
		cv := newCV(ns, "v26.06", "v26.09")
		cv.Spec.ClusterRef = &v1alpha1.ClusterRef{Name: "work"}
		require.NoError(t, c.Create(ctx, cv))
		deleteAtEnd(t, c, cv)
		got := waitFor(t, c, client.ObjectKeyFromObject(cv), 30*time.Second, "ClusterUnreachable", func(cv *v1alpha1.ClusterVersion) bool {
			f := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionFailing)
			return f != nil && f.Reason == controller.ReasonClusterUnreachable
		})
		f := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFailing)
		assert.Contains(t, f.Message, "the API server "+strings.TrimSuffix(env.Config.Host, "/")+" does not answer")
		assert.Equal(t, v1alpha1.PhaseIdle, got.Status.Phase)
		assert.Empty(t, got.Status.History, "no upgrade started")
	})
}
