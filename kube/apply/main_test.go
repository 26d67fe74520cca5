package apply_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The API server every test of the package shares: a real kube-apiserver
// and etcd on 127.0.0.1, started once by TestMain through envtest from the
// binaries in KUBEBUILDER_ASSETS (tools/env.sh builds them). No kubelet and
// no controller-manager run: a test that needs an object to become ready
// writes its status subresource as the object's controller would, and a
// foreground deletion is never finished by a garbage collector (the object
// keeps its deletionTimestamp).
var (
	cfg        *rest.Config
	dyn        dynamic.Interface
	skipReason string
)

const howTo = "no kube-apiserver: run `eval \"$(tools/env.sh kube)\"` from the repository root (builds kube-apiserver and kubectl from the Go module proxy, ~10 minutes the first time) to set KUBEBUILDER_ASSETS"

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "kube/apply: CI=true and KUBEBUILDER_ASSETS is unset: "+howTo)
			return 1
		}
		skipReason = howTo
		return m.Run()
	}
	env := &envtest.Environment{ControlPlaneStartTimeout: 3 * time.Minute, ControlPlaneStopTimeout: time.Minute}
	var err error
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "kube/apply: start the API server:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	if dyn, err = dynamic.NewForConfig(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "kube/apply:", err)
		return 1
	}
	return m.Run()
}

// needCluster skips the test without an API server (never under CI=true:
// TestMain fails first).
func needCluster(t testing.TB) {
	t.Helper()
	if cfg == nil {
		t.Skip(skipReason)
	}
}

var nsSeq atomic.Int64

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// namespace creates a namespace for the test, named after it.
func namespace(t testing.TB) string {
	t.Helper()
	needCluster(t)
	name := nonName.ReplaceAllString(strings.ToLower(t.Name()), "-")
	name = fmt.Sprintf("%.40s-%d", strings.Trim(name, "-"), nsSeq.Add(1))
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	_, err := dyn.Resource(gvr("", "v1", "namespaces")).Create(context.Background(), ns, metav1.CreateOptions{})
	require.NoError(t, err)
	return name
}

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

var (
	deployments = gvr("apps", "v1", "deployments")
	configmaps  = gvr("", "v1", "configmaps")
	serviceAccs = gvr("", "v1", "serviceaccounts")
	namespaces  = gvr("", "v1", "namespaces")
)

// get reads an object; nil when it does not exist.
func get(t testing.TB, r schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	var ri dynamic.ResourceInterface = dyn.Resource(r)
	if ns != "" {
		ri = dyn.Resource(r).Namespace(ns)
	}
	u, err := ri.Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return u
}

// live reports whether an object exists and is not being deleted (a
// foreground deletion without a garbage collector never completes).
func live(t testing.TB, r schema.GroupVersionResource, ns, name string) bool {
	u := get(t, r, ns, name)
	return u != nil && u.GetDeletionTimestamp() == nil
}

// markDeploymentReady writes the status a Deployment's controller and
// kubelet would once every replica is updated and available (no kubelet
// runs here).
func markDeploymentReady(ctx context.Context, ns, name string) error {
	ri := dyn.Resource(deployments).Namespace(ns)
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	replicas, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !found {
		replicas = 1
	}
	now := time.Now().UTC().Format(time.RFC3339)
	u.Object["status"] = map[string]any{
		"observedGeneration": u.GetGeneration(),
		"replicas":           replicas, "updatedReplicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
		"conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastUpdateTime": now, "lastTransitionTime": now},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastUpdateTime": now, "lastTransitionTime": now},
		},
	}
	_, err = ri.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}

// controller plays the Deployment and DaemonSet controllers (and kubelet)
// for objects labelled with selector: every interval it marks the ones
// whose status lags their generation ready. It stops with the test.
func controller(t testing.TB, selector string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for _, r := range []schema.GroupVersionResource{deployments, gvr("apps", "v1", "daemonsets")} {
				list, err := dyn.Resource(r).List(ctx, metav1.ListOptions{LabelSelector: selector})
				if err != nil {
					continue
				}
				for _, u := range list.Items {
					og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
					if og == u.GetGeneration() {
						continue
					}
					if r == deployments {
						_ = markDeploymentReady(ctx, u.GetNamespace(), u.GetName())
					} else {
						_ = markDaemonSetReady(ctx, &u)
					}
				}
			}
		}
	}()
}

func markDaemonSetReady(ctx context.Context, u *unstructured.Unstructured) error {
	u.Object["status"] = map[string]any{
		"observedGeneration":     u.GetGeneration(),
		"currentNumberScheduled": int64(1), "desiredNumberScheduled": int64(1), "numberMisscheduled": int64(0),
		"numberReady": int64(1), "updatedNumberScheduled": int64(1), "numberAvailable": int64(1),
	}
	_, err := dyn.Resource(gvr("apps", "v1", "daemonsets")).Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}
