package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/runner"
)

// ReasonClusterUnreachable is the Failing condition's reason when the
// cluster of spec.clusterRef cannot be reached: its kubeconfig Secret is
// missing or malformed, or its API server does not answer.
const ReasonClusterUnreachable = "ClusterUnreachable"

// DefaultKubeconfigKey is the key of a kubeconfig Secret that
// spec.clusterRef reads when it names none (Cluster API's).
const DefaultKubeconfigKey = "value"

// probeTimeout bounds the request that checks a workload cluster answers.
const probeTimeout = 10 * time.Second

// conn is a ClusterVersion's runner and, with spec.clusterRef, its
// cluster: made once per ClusterVersion (uid) and kubeconfig (the
// Secret's resourceVersion), so that a rotated kubeconfig is used from
// the next run on, without a restart.
type conn struct {
	uid     types.UID
	version string // the Secret's resourceVersion; "" without clusterRef
	rn      runner.Runner
	// probe asks the cluster's API server for its version; nil without
	// clusterRef.
	probe func(context.Context) error
}

// clusterError says why a ClusterVersion's cluster cannot be reached.
type clusterError struct {
	cv     types.NamespacedName
	secret string // NAME[key]
	err    error
}

func (e *clusterError) Error() string {
	return fmt.Sprintf("controller: ClusterVersion %s: the cluster of spec.clusterRef (kubeconfig Secret %s/%s): %v", e.cv, e.cv.Namespace, e.secret, e.err)
}

func (e *clusterError) Unwrap() error { return e.err }

// kubeconfigOf is the name and key of the Secret ref names.
func kubeconfigOf(ref *v1alpha1.ClusterRef) (name, key string) {
	name, key = ref.SecretName, ref.Key
	if name == "" {
		name = ref.Name + "-kubeconfig"
	}
	if key == "" {
		key = DefaultKubeconfigKey
	}
	return name, key
}

// connect is cv's conn: New's runner, or WithRunnerFor's, made for the
// cluster of cv's spec.clusterRef when it has one. The Secret is read
// past the cache (the reconciler is granted get on Secrets, not list or
// watch) each time, so that a rotated kubeconfig is seen at once.
func (r *Reconciler) connect(ctx context.Context, cv *v1alpha1.ClusterVersion) (conn, error) {
	key := types.NamespacedName{Namespace: cv.Namespace, Name: cv.Name}
	if cv.Spec.ClusterRef == nil {
		if r.runnerFor == nil {
			return conn{rn: r.runner}, nil
		}
		return r.cached(key, cv.UID, "", func() (conn, error) {
			rn, err := r.runnerFor(key, nil)
			return conn{rn: rn}, err
		})
	}
	name, dataKey := kubeconfigOf(cv.Spec.ClusterRef)
	fail := func(format string, args ...any) (conn, error) {
		return conn{}, &clusterError{cv: key, secret: fmt.Sprintf("%s[%s]", name, dataKey), err: fmt.Errorf(format, args...)}
	}
	if r.runnerFor == nil {
		return fail("the operator was set up without controller.WithRunnerFor, so it has no runner for another cluster: give it WithRunnerFor, making each runner from the cluster's *rest.Config")
	}
	var s corev1.Secret
	if err := r.reader.Get(ctx, types.NamespacedName{Namespace: cv.Namespace, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return fail("Secret %s/%s not found: create it (Cluster API writes NAME-kubeconfig for each Cluster), or set spec.clusterRef.secretName to the Secret that holds the kubeconfig", cv.Namespace, name)
		}
		return fail("reading Secret %s/%s: %w", cv.Namespace, name, err)
	}
	data := s.Data[dataKey]
	if len(data) == 0 {
		keys := slices.Sorted(maps.Keys(s.Data))
		return fail("Secret %s/%s has no key %q (its keys: %s): set spec.clusterRef.key to the key that holds the kubeconfig", cv.Namespace, name, dataKey, strings.Join(keys, ", "))
	}
	return r.cached(key, cv.UID, s.ResourceVersion, func() (conn, error) {
		cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
		if err != nil {
			return fail("Secret %s/%s key %q is not a kubeconfig: %v", cv.Namespace, name, dataKey, err)
		}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return fail("a client for the kubeconfig of Secret %s/%s: %v", cv.Namespace, name, err)
		}
		rn, err := r.runnerFor(key, rest.CopyConfig(cfg))
		if err != nil {
			return fail("making the runner of its cluster (%s): %v", cfg.Host, err)
		}
		host := cfg.Host
		probe := func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			if err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
				return &clusterError{cv: key, secret: fmt.Sprintf("%s[%s]", name, dataKey), err: fmt.Errorf("the API server %s does not answer: %w", host, err)}
			}
			return nil
		}
		return conn{rn: rn, probe: probe}, nil
	})
}

// cached is the conn of key made for uid and version, made by build when
// there is none yet (or the ClusterVersion was created again, or the
// kubeconfig changed). An error is not kept: the next reconcile asks
// again.
func (r *Reconciler) cached(key types.NamespacedName, uid types.UID, version string, build func() (conn, error)) (conn, error) {
	r.mu.Lock()
	got, ok := r.runners[key]
	r.mu.Unlock()
	if ok && got.uid == uid && got.version == version {
		return got, nil
	}
	// Made outside the lock: the runner may take a while (discovery),
	// and reconciles of one ClusterVersion never run concurrently.
	c, err := build()
	if err != nil {
		return conn{}, err
	}
	c.uid, c.version = uid, version
	r.mu.Lock()
	r.runners[key] = c
	r.mu.Unlock()
	return c, nil
}

// cluster finds the runner of cv's runs and, with spec.clusterRef,
// checks that its cluster answers. A cluster that cannot be reached is
// said in Failing (reason ClusterUnreachable, with the cause, and a
// Warning Event when the cause changes); nothing starts, and the error
// is returned so that the reconcile is tried again with backoff.
func (d *decision) cluster() (bool, *plan, error) {
	r, cv, st := d.r, d.cv, d.st
	c, err := r.connect(d.ctx, cv)
	if err == nil && c.probe != nil {
		err = c.probe(d.ctx)
	}
	if err == nil {
		d.rn = c.rn
		return false, nil, nil
	}
	var ce *clusterError
	if !errors.As(err, &ce) { // WithRunnerFor's error, without a clusterRef
		r.failing(cv, st, "RunnerUnavailable", fmt.Sprintf("ClusterVersion %s/%s: making its runner (controller.WithRunnerFor): %v", cv.Namespace, cv.Name, err))
		if !d.inFlight {
			st.Phase = v1alpha1.PhaseIdle
		}
		return true, nil, err
	}
	msg := err.Error() + "; nothing is applied until it answers (tried again with backoff)"
	if f := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionFailing); f == nil || f.Reason != ReasonClusterUnreachable || f.Message != truncate(msg) {
		r.event(cv, "Warning", ReasonClusterUnreachable, "Connect", msg)
	}
	r.failing(cv, st, ReasonClusterUnreachable, msg)
	if !d.inFlight {
		st.Phase = v1alpha1.PhaseIdle
	}
	return true, nil, err
}

// watchCluster checks, while a run is in flight, that the cluster of
// cv's spec.clusterRef answers, and says in Failing when it does not
// (the run's components fail or wait, as their runner does); it checks
// again every WithClusterCheckInterval.
func (r *Reconciler) watchCluster(ctx context.Context, ru *run, cv *v1alpha1.ClusterVersion) ctrl.Result {
	if cv.Spec.ClusterRef == nil {
		return ctrl.Result{}
	}
	c, err := r.connect(ctx, cv)
	if err == nil && c.probe != nil {
		err = c.probe(ctx)
	}
	f := meta.FindStatusCondition(cv.Status.Conditions, v1alpha1.ConditionFailing)
	shown := f != nil && f.Status == metav1.ConditionTrue && f.Reason == ReasonClusterUnreachable
	switch {
	case err != nil:
		msg := err.Error() + "; the upgrade in flight goes on once it answers"
		if !shown || f.Message != truncate(msg) {
			r.event(cv, "Warning", ReasonClusterUnreachable, "Connect", msg)
			ru.update(ctx, func(st *v1alpha1.ClusterVersionStatus) {
				setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionTrue, ReasonClusterUnreachable, msg)
			})
		}
	case shown:
		ru.update(ctx, func(st *v1alpha1.ClusterVersionStatus) {
			if f := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionFailing); f != nil && f.Reason == ReasonClusterUnreachable {
				setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionFalse, "AsExpected", "")
			}
		})
	}
	return ctrl.Result{RequeueAfter: r.clusterCheck}
}
