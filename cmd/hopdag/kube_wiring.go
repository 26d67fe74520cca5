package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/apply"
	"github.com/hopdag/hopdag/kube/helm"
	"github.com/hopdag/hopdag/kube/store"
	"github.com/hopdag/hopdag/runner"
)

// reachTimeout bounds the request that checks, before anything runs, that
// the cluster of the kubeconfig answers.
const reachTimeout = 15 * time.Second

// newKubeApplier is the Applier of manifest components against a cluster:
// kube/apply's server-side apply with field manager "hopdag", a
// server-side dry run under --dry-run, and every object's change (created,
// configured, unchanged, pruned) printed to cfg.Report. It resolves the
// kubeconfig as kubectl does (--kubeconfig, else $KUBECONFIG, else
// ~/.kube/config, else the service account of the pod it runs in;
// --context over the current context) and asks the API
// server for its version, so that a wrong kubeconfig or an unreachable
// cluster fails before anything runs.
func newKubeApplier(cfg kubeConfig) (components.Applier, error) {
	rc, err := restConfig(cfg, "--apply-dir DIR to write the objects to files instead")
	if err != nil {
		return nil, err
	}
	opts := []apply.Option{apply.WithFieldManager("hopdag"), apply.WithTakeOver(cfg.TakeOver)}
	if cfg.DryRun {
		opts = append(opts, apply.WithDryRun())
	}
	a, err := apply.New(rc, opts...)
	if err != nil {
		return nil, err
	}
	if cfg.Report == nil {
		return a, nil
	}
	return &reportingApplier{Applier: a, w: cfg.Report}, nil
}

// dryRunHop is the plan's dry run of hop h: kube/apply.DryRunHop against
// the cluster of cfg (nothing is written, the inventories included).
func dryRunHop(ctx context.Context, cfg kubeConfig, h *runner.HopPlan, mopts []components.ManifestOption) (string, error) {
	rc, err := restConfig(cfg, "")
	if err != nil {
		return "", err
	}
	ccs, err := apply.DryRunHop(ctx, rc, h, mopts, apply.WithFieldManager("hopdag"))
	return apply.FormatChanges(ccs), err
}

// newHelmRunner is the runner of helm components: kube/helm's `helm
// upgrade --install` (and rollback) against the cluster of cfg's kubeconfig
// and context, local charts relative to chartRoot, values rendered with
// --set values. Helm's own environment (HELM_CACHE_HOME, HELM_REGISTRY_CONFIG,
// ...) locates remote charts.
func newHelmRunner(cfg kubeConfig, chartRoot string, values map[string]any) (runner.Runner, error) {
	rc, err := restConfig(cfg, "")
	if err != nil {
		return nil, err
	}
	return helm.New(rc, helm.WithChartRoot(chartRoot), helm.WithValues(values)), nil
}

// newKubeStore is kube://namespace/name state: kube/store's Lease and
// status ConfigMaps named name in namespace (which must exist), on the
// cluster of cfg's kubeconfig and context. A checkpoint costs a few
// requests, so the client is allowed more than client-go's default 5 a
// second (kube/store's doc).
func newKubeStore(cfg kubeConfig, namespace, name string) (*backend, error) {
	rc, err := restConfig(cfg, "")
	if err != nil {
		return nil, err
	}
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = 100, 200
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("kube://%s/%s: %w", namespace, name, err)
	}
	s, err := store.New(c, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("kube://%s/%s: %w", namespace, name, err)
	}
	absent := func(ctx context.Context) string {
		var ns corev1.Namespace
		if err := c.Get(ctx, client.ObjectKey{Name: namespace}, &ns); apierrors.IsNotFound(err) {
			return fmt.Sprintf(" (namespace %s does not exist: check --state, or create it: kubectl create namespace %s)", namespace, namespace)
		}
		return ""
	}
	return &backend{store: s, lock: s, where: "kube://" + namespace + "/" + name, close: func() error { return nil }, absent: absent}, nil
}

// namespaceHint is what to do about err when it is a namespace that does
// not exist (the namespace of kube:// state must): ": create it: kubectl
// create namespace NS"; "" for any other error.
func namespaceHint(err error) string {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return ""
	}
	st := se.Status()
	if st.Reason != metav1.StatusReasonNotFound || st.Details == nil || st.Details.Kind != "namespaces" || st.Details.Name == "" {
		return ""
	}
	return ": create it: kubectl create namespace " + st.Details.Name
}

// restConfig returns the client config of cfg's kubeconfig and context,
// once the API server has answered. Its errors say how to name a cluster
// and, when not "", what else would do instead (the manifest applier's
// --apply-dir; kube:// state and helm components have no such way).
func restConfig(cfg kubeConfig, instead string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	where := "--kubeconfig " + cfg.Kubeconfig
	switch {
	case cfg.Kubeconfig != "":
		rules.ExplicitPath = cfg.Kubeconfig
	case os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		where = "$KUBECONFIG (" + os.Getenv(clientcmd.RecommendedConfigPathEnvVar) + ")"
	default:
		where = clientcmd.RecommendedHomeFile
	}
	fix := "pass --kubeconfig FILE (or set $KUBECONFIG) and --context NAME"
	if instead != "" {
		fix += ", or " + instead
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.Context})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w; %s", where, err, fix)
	}
	contexts := slices.Sorted(maps.Keys(raw.Contexts))
	name := cfg.Context
	if name == "" {
		name = raw.CurrentContext
	}
	noConfig := fmt.Errorf("no kubeconfig with a context: tried %s, and this is no pod with a service account; %s", where, fix)
	switch {
	case len(contexts) == 0 && cfg.Context != "":
		return nil, noConfig
	case len(contexts) == 0:
		// No kubeconfig: inside a pod, its service account (what
		// kubectl does too).
		name = "in-cluster"
	case name == "":
		return nil, fmt.Errorf("kubeconfig %s has no current context: pass --context (one of %s)", where, strings.Join(contexts, ", "))
	case raw.Contexts[name] == nil:
		return nil, fmt.Errorf("kubeconfig %s has no context %q: pass --context with one of %s", where, name, strings.Join(contexts, ", "))
	}
	rc, err := cc.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, noConfig
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s, context %s: %w; fix the kubeconfig or %s", where, name, err, fix)
	}
	probe := rest.CopyConfig(rc)
	probe.Timeout = reachTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(probe)
	if err == nil {
		_, err = dc.ServerVersion()
	}
	if err != nil {
		return nil, fmt.Errorf("the API server %s (kubeconfig %s, context %s) does not answer: %w; is the cluster up, and are this kubeconfig and context the ones you meant (--kubeconfig, --context)?", rc.Host, where, name, err)
	}
	return rc, nil
}

// reportingApplier is kube/apply's Applier that prints, per Apply and
// Delete, one line per object, "component: Kind namespace/name action",
// indented under the progress lines of run.
// Components run in parallel: each call's lines go out in one write, under
// a lock, so that they do not interleave with each other's.
type reportingApplier struct {
	*apply.Applier
	mu sync.Mutex
	w  io.Writer
}

// Apply applies through ApplyAll and prints its ChangeSet.
func (r *reportingApplier) Apply(ctx context.Context, objs []components.Object, opts components.ApplyOptions) error {
	cs, err := r.ApplyAll(ctx, objs, opts)
	r.print(objs, cs)
	return err
}

// Delete prunes through Prune and prints its ChangeSet.
func (r *reportingApplier) Delete(ctx context.Context, objs []components.Object) error {
	cs, err := r.Prune(ctx, objs)
	r.print(objs, cs)
	return err
}

func (r *reportingApplier) print(objs []components.Object, cs apply.ChangeSet) {
	if len(cs) == 0 {
		return
	}
	comp := objs[0].Component
	if comp == "" {
		_, comp, _ = components.Owner(objs[0])
	}
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "        %s: %s\n", comp, c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = io.WriteString(r.w, b.String())
}

var _ interface {
	components.Applier
	components.ReadyChecker
	components.InventoryStore
	components.ScopeResolver
} = (*reportingApplier)(nil)
