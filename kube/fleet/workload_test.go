package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/apply"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/kube/internal/controlplane"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// The fleet's workload cluster in which workloads really roll out: a
// whole control plane (kube/internal/controlplane: kube-controller-manager,
// kube-scheduler and kwok besides etcd and kube-apiserver) with realNodes
// fake nodes, upgraded through hopdag's Kubernetes applier. The other
// workload clusters are API servers alone, upgraded by applyRunner.
const (
	realCluster = "canary"
	realNodes   = 2
)

// TestFleetOfWorkloadClusters: one management API server and four
// workload clusters, each at another version; a rollout to v26.09 with a
// canary and two waves (by the hopdag.io/wave label), two at a time,
// succeeds, each cluster along its own route; each cluster's objects land
// in its own cluster and nowhere else, the status and Events in the
// management cluster.
//
// The canary is a whole control plane that runs v26.06's workloads
// (installed before the rollout): its upgrade applies the sample
// catalog's manifests through kube/apply, and each manifest component
// succeeds only once kstatus says its Deployments and DaemonSets have
// rolled out. The test checks that where it can see it: the moment each
// component's run returned, its workloads had rolled out at the new image
// (read then, by a wrapper of the manifest runner); while the canary's
// hop waited, its status.plan.waitingFor in the management cluster named
// one of them; and at the end every workload runs the new image, a
// Deployment through a new ReplicaSet, its pods Ready on the kwok nodes.
func TestFleetOfWorkloadClusters(t *testing.T) {
	needAPIServer(t)
	began := time.Now()
	cp := startControlPlane(t, realNodes)
	c := newClient(t)
	ns := newFleet(t, c, 0)
	ctx := context.Background()
	fleetOf := []struct {
		name, at, wave string
		hops           []string
	}{
		{"canary", "v26.06", "", []string{"v26.06 -> v26.09"}},
		{"eu-1", "v26.06-rc.2", "eu", []string{"v26.06-rc.2 -> v26.06-rc.3", "v26.06-rc.3 -> v26.06", "v26.06 -> v26.09"}},
		{"eu-2", "v26.06-rc.3", "eu", []string{"v26.06-rc.3 -> v26.06", "v26.06 -> v26.09"}},
		{"us-1", "v26.06.1", "us", []string{"v26.06.1 -> v26.09"}},
	}
	workloads := map[string]client.Client{}
	for _, cl := range fleetOf {
		var kubeconfig []byte
		if cl.name == realCluster {
			kubeconfig = kubeconfigOf(t, cp.Config())
			wc, err := client.New(cp.Config(), client.Options{Scheme: scheme})
			require.NoError(t, err)
			workloads[cl.name] = wc
		} else {
			env, wc := workloadCluster(t)
			kubeconfig, workloads[cl.name] = env.KubeConfig, wc
		}
		require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cl.name + "-kubeconfig"}, Data: map[string][]byte{"value": kubeconfig}}))
		labels := map[string]string{"fleet": "prod"}
		if cl.wave != "" {
			labels["hopdag.io/wave"] = cl.wave
		}
		require.NoError(t, c.Create(ctx, &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cl.name, Labels: labels},
			Spec: v1alpha1.ClusterVersionSpec{InstalledVersion: v1alpha1.Target(cl.at), DesiredVersion: v1alpha1.Target(cl.at), ClusterRef: &v1alpha1.ClusterRef{Name: cl.name}}}))
	}

	// The real cluster runs what its ClusterVersion says: v26.06.
	rc := workloads[realCluster]
	instance := instanceOf(types.NamespacedName{Namespace: ns, Name: realCluster})
	installed := time.Now()
	installRelease(t, cp.Config(), rc, instance, "v26.06")
	t.Logf("v26.06's workloads installed in %s and rolled out in %s", realCluster, time.Since(installed).Round(time.Millisecond))

	notes := &rolloutNotes{}
	operate(t, ns, func(k types.NamespacedName, cluster *rest.Config) (runner.Runner, error) {
		if k.Name == realCluster {
			return realRunner(cluster, instanceOf(k), notes)
		}
		return applyRunner(cluster, 20*time.Millisecond)
	}, controller.WithClusterCheckInterval(time.Second))
	two := intstr.FromInt32(2)
	started := time.Now()
	require.NoError(t, c.Create(ctx, newRollout(ns, func(s *v1alpha1.UpgradeRolloutSpec) {
		s.DesiredVersion = "v26.09"
		s.Canaries = &v1alpha1.Canaries{Names: []string{"canary"}}
		s.Waves = &v1alpha1.Waves{Label: "hopdag.io/wave", Order: []string{"eu", "us"}}
		s.MaxConcurrency = &two
	})))
	// What the canary's status said it waited for, in the order seen, and
	// when it reached v26.09, read at each poll of the fleet.
	var waited []string
	var canaryDone time.Duration
	ur := watchFleet(t, c, ns, 2, 3*time.Minute, func(ur *v1alpha1.UpgradeRollout) bool {
		var cv v1alpha1.ClusterVersion
		if c.Get(ctx, client.ObjectKey{Namespace: ns, Name: realCluster}, &cv) == nil {
			if p := cv.Status.Plan; p != nil && p.WaitingFor != "" && !slices.Contains(waited, p.WaitingFor) {
				waited = append(waited, p.WaitingFor)
			}
			if canaryDone == 0 && cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.09" {
				canaryDone = time.Since(started)
			}
		}
		return ur.Status.Phase == "Completed" || ur.Status.Phase == "Failed"
	})
	require.Equal(t, "Completed", ur.Status.Phase, "%+v", ur.Status.Conditions)
	t.Logf("rollout created -> Completed: %s (the canary at v26.09 after %s); test so far %s",
		time.Since(started).Round(time.Millisecond), canaryDone.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	var waves []string
	for _, w := range ur.Status.Waves {
		var names []string
		for _, cs := range w.Clusters {
			names = append(names, cs.Name+"="+cs.State)
		}
		waves = append(waves, w.Name+fmt.Sprint(names))
	}
	assert.Equal(t, []string{"canary[canary=Succeeded]", "eu[eu-1=Succeeded eu-2=Succeeded]", "us[us-1=Succeeded]"}, waves)

	for _, cl := range fleetOf {
		cv := getCV(t, c, ns, cl.name)
		assert.Equal(t, "v26.09", cv.Status.CurrentVersion, cl.name)
		require.NotNil(t, cv.Status.Plan, cl.name)
		assert.Equal(t, cl.hops, cv.Status.Plan.Hops, "%s went along its own route", cl.name)
		assert.Equal(t, cl.at, cv.Status.History[0].From, cl.name)

		// Its objects are in its cluster: the v26.09 components, and
		// those of every hop of its route; none of another route's. In
		// the real cluster only the inline components are ConfigMaps.
		got := map[string]bool{}
		var l corev1.ConfigMapList
		require.NoError(t, workloads[cl.name].List(ctx, &l, client.InNamespace("default")))
		for _, cm := range l.Items {
			got[cm.Name] = true
		}
		assert.True(t, got["hopdag-bkeagent-v1-5-0"], "%s: the v26.09 bkeagent in its cluster", cl.name)
		assert.Equal(t, cl.name != realCluster, got["hopdag-provider-v1-5-0"], "%s: the v26.09 provider a ConfigMap in its cluster unless its cluster is the real one", cl.name)
		assert.Equal(t, cl.at == "v26.06-rc.2", got["hopdag-provider-v1-4-0-rc-3"], "%s: the v26.06-rc.3 provider in its cluster only when its route goes through v26.06-rc.3", cl.name)
	}
	var inManagement corev1.ConfigMapList
	require.NoError(t, c.List(ctx, &inManagement, client.InNamespace("default")))
	for _, cm := range inManagement.Items {
		assert.False(t, strings.HasPrefix(cm.Name, "hopdag-"), "component object %s in the management cluster", cm.Name)
	}
	managed, err := workloadRollouts(ctx, c, client.HasLabels{components.LabelComponent}, realNodes)
	require.NoError(t, err)
	assert.Empty(t, managed, "component workloads in the management cluster")
	assert.Contains(t, reasons(t, c, ns), "WaveCompleted", "the rollout's Events are in the management cluster")

	// The real cluster's upgrade waited for each rollout: the moment each
	// manifest component's run returned, its workloads had rolled out at
	// v26.09's image (pre-upgrade-resources has none).
	assert.Equal(t, map[string][]string{
		"pre-upgrade-resources v1.2.0": nil,
		"provider v1.5.0":              {"Deployment cluster-system/bke-provider registry.example/provider:v1.5.0: rolled out"},
		"coredns v1.12.3":              {"Deployment kube-system/coredns registry.example/coredns:v1.12.3: rolled out"},
		"calico v3.30.2":               {"DaemonSet kube-system/calico-node registry.example/calico:v3.30.2: rolled out"},
		"kube-proxy v1.34.1":           {"DaemonSet kube-system/kube-proxy registry.example/kube-proxy:v1.34.1: rolled out"},
		"metrics-server v0.8.0":        {"Deployment kube-system/metrics-server registry.example/metrics-server:v0.8.0: rolled out"},
	}, notes.all(), "the real cluster's workloads when each manifest component's run returned")
	// The management cluster saw it wait: the canary's status named a
	// workload while its hop waited, and nothing once done.
	t.Logf("the canary's status.plan.waitingFor while it upgraded: %q", waited)
	waitedFor := regexp.MustCompile(`waiting for (Deployment|DaemonSet) (kube-system|cluster-system)/[a-z-]+: `)
	assert.True(t, slices.ContainsFunc(waited, waitedFor.MatchString), "the canary's status.plan.waitingFor never named a Deployment or a DaemonSet of its cluster: %q", waited)
	assert.Empty(t, getCV(t, c, ns, realCluster).Status.Plan.WaitingFor, "the canary's status.plan.waitingFor once it completed")

	checkRolledOut(t, rc, cp.Nodes(), instance)
	t.Logf("test took %s", time.Since(began).Round(time.Millisecond))
}

// checkRolledOut checks that in the real cluster every workload of the
// sample catalog runs v26.09's image and has rolled out: the provider's
// Deployment through a new ReplicaSet (v26.06's scaled to zero), its
// status counting every replica updated and ready; the live pods of each
// workload Ready, at the new image, bound to the kwok nodes (a
// DaemonSet's, one on each).
func checkRolledOut(t *testing.T, c client.Client, nodes []string, instance string) {
	t.Helper()
	ctx := context.Background()
	var d appsv1.Deployment
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "cluster-system", Name: "bke-provider"}, &d))
	st := d.Status
	assert.Equal(t, "registry.example/provider:v1.5.0", d.Spec.Template.Spec.Containers[0].Image, "bke-provider's image")
	assert.Equal(t, d.Generation, st.ObservedGeneration, "bke-provider's observedGeneration")
	assert.Equal(t, []int32{1, 1, 1, 1}, []int32{st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas}, "bke-provider's replicas, updated, ready, available")
	var rss appsv1.ReplicaSetList
	require.NoError(t, c.List(ctx, &rss, client.InNamespace("cluster-system"), client.MatchingLabels(d.Spec.Selector.MatchLabels)))
	replicas := map[string]int32{}
	for _, rs := range rss.Items {
		replicas[rs.Spec.Template.Spec.Containers[0].Image] = *rs.Spec.Replicas
	}
	assert.Equal(t, map[string]int32{"registry.example/provider:v1.4.0": 0, "registry.example/provider:v1.5.0": 1}, replicas,
		"bke-provider's ReplicaSets by image and replicas: v26.06's scaled down, a new one for v26.09")

	var ds appsv1.DeploymentList
	require.NoError(t, c.List(ctx, &ds, client.MatchingLabels{components.LabelInstance: instance}))
	var dss appsv1.DaemonSetList
	require.NoError(t, c.List(ctx, &dss, client.MatchingLabels{components.LabelInstance: instance}))
	type workload struct {
		what, ns string
		sel      *metav1.LabelSelector
		image    string
		want     int // pods
	}
	var all []workload
	for _, d := range ds.Items {
		all = append(all, workload{"Deployment " + d.Namespace + "/" + d.Name, d.Namespace, d.Spec.Selector, d.Spec.Template.Spec.Containers[0].Image, int(*d.Spec.Replicas)})
	}
	for _, d := range dss.Items {
		all = append(all, workload{"DaemonSet " + d.Namespace + "/" + d.Name, d.Namespace, d.Spec.Selector, d.Spec.Template.Spec.Containers[0].Image, len(nodes)})
	}
	require.Len(t, all, 5, "the sample catalog's workloads in the real cluster: 3 Deployments, 2 DaemonSets")
	for _, w := range all {
		sel, err := metav1.LabelSelectorAsSelector(w.sel)
		require.NoError(t, err)
		var pods corev1.PodList
		require.NoError(t, c.List(ctx, &pods, client.InNamespace(w.ns), client.MatchingLabelsSelector{Selector: sel}))
		var on []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			on = append(on, p.Spec.NodeName)
			assert.Equal(t, w.image, p.Spec.Containers[0].Image, "%s: pod %s's image", w.what, p.Name)
			assert.True(t, isPodReady(&p), "%s: pod %s Ready", w.what, p.Name)
			assert.Contains(t, nodes, p.Spec.NodeName, "%s: pod %s bound to a kwok node", w.what, p.Name)
		}
		assert.Len(t, on, w.want, "%s: live pods (on nodes %q)", w.what, on)
		if strings.HasPrefix(w.what, "DaemonSet") {
			slices.Sort(on)
			assert.Equal(t, nodes, on, "%s: a pod on each node", w.what)
		}
	}
}

func isPodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// startControlPlane starts a whole control plane of t's own with nodes
// kwok nodes, stopped (and its logs' ends printed when t failed) when t
// ends. Without its binaries t skips, saying how to get them; under
// CI=true it fails.
func startControlPlane(t *testing.T, nodes int) *controlplane.ControlPlane {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.WithNodes(nodes))
	if errors.Is(err, controlplane.ErrMissing) && os.Getenv("CI") != "true" {
		t.Skip(err) // the error says what is missing and how to build it
	}
	require.NoError(t, err, "starting a workload cluster's control plane")
	t.Log(cp)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(cp.Logs(30))
		}
		assert.NoError(t, cp.Stop(), "stopping the control plane (an error: a process had crashed)")
	})
	return cp
}

// kubeconfigOf is a kubeconfig of cfg's cluster and credentials, as a
// Cluster API kubeconfig Secret holds it.
func kubeconfigOf(t *testing.T, cfg *rest.Config) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["workload"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["workload"] = &clientcmdapi.Context{Cluster: "workload", AuthInfo: "admin"}
	kc.CurrentContext = "workload"
	data, err := clientcmd.Write(*kc)
	require.NoError(t, err)
	return data
}

// instanceOf is the instance (components.WithInstance) of the objects of
// ClusterVersion cv, as kube/examples/operator names it: NAMESPACE-NAME.
func instanceOf(cv types.NamespacedName) string { return cv.Namespace + "-" + cv.Name }

// newManifest is the manifest runner of an instance through a, with the
// values the sample catalog's templates use.
func newManifest(a *apply.Applier, instance string) *components.Manifest {
	return components.NewManifest(a, components.WithInstance(instance), components.WithValues(map[string]any{"registry": "registry.example"}))
}

// realRunner is the real cluster's runner, wired as an operator wires
// one (kube/examples/operator): manifest components through hopdag's
// Kubernetes applier (server-side apply, prune, and kstatus readiness, so
// that a component with health checks succeeds only once its workloads
// have rolled out), noted in notes when their run returns; inline ones
// as applyRunner's ConfigMaps.
func realRunner(cfg *rest.Config, instance string, notes *rolloutNotes) (runner.Runner, error) {
	a, err := apply.New(cfg)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	inline, err := applyRunner(cfg, 20*time.Millisecond)
	if err != nil {
		return nil, err
	}
	return components.NewRouter().
		Register(release.TypeInline, inline).
		Register(release.TypeManifest, &notingManifest{Manifest: newManifest(a, instance), c: c, instance: instance, notes: notes}), nil
}

// notingManifest is a manifest runner that, the moment a component's
// run has succeeded, reads the rollouts of the Deployments and DaemonSets
// the component owns and notes them. It embeds the Manifest so that the
// Router finds its other abilities (Validate, ValidateHop, Rollback).
type notingManifest struct {
	*components.Manifest
	c        client.Client
	instance string
	notes    *rolloutNotes
}

func (m *notingManifest) Run(ctx context.Context, t runner.Task) error {
	if err := m.Manifest.Run(ctx, t); err != nil {
		return err
	}
	ws, err := workloadRollouts(ctx, m.c, client.MatchingLabels(components.OwnerLabels(m.instance, t.Component)), realNodes)
	if err != nil {
		ws = []string{"reading its workloads: " + err.Error()}
	}
	m.notes.add(t.Component+" "+t.To.Version.Original(), ws)
	return nil
}

// rolloutNotes are the rollouts notingManifest read, by "COMPONENT
// VERSION". Safe for concurrent use: components run in parallel.
type rolloutNotes struct {
	mu   sync.Mutex
	runs map[string][]string
}

func (n *rolloutNotes) add(run string, ws []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.runs == nil {
		n.runs = map[string][]string{}
	}
	n.runs[run] = ws
}

func (n *rolloutNotes) all() map[string][]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string][]string, len(n.runs))
	for k, v := range n.runs {
		out[k] = slices.Clone(v)
	}
	return out
}

// workloadRollouts says of each Deployment and DaemonSet that sel selects, sorted,
// "KIND NAMESPACE/NAME IMAGE: rolled out", or what is left of its rollout:
// rolled out is its controller having observed its last generation and
// every replica (a DaemonSet: one on each of nodes) updated, ready and
// available, no old one left. nil when there is none.
func workloadRollouts(ctx context.Context, c client.Client, sel client.ListOption, nodes int) ([]string, error) {
	var out []string
	var ds appsv1.DeploymentList
	if err := c.List(ctx, &ds, sel); err != nil {
		return nil, err
	}
	for _, d := range ds.Items {
		st, want := d.Status, *d.Spec.Replicas
		left := ""
		if st.ObservedGeneration < d.Generation || st.Replicas != want || st.UpdatedReplicas != want || st.ReadyReplicas != want || st.AvailableReplicas != want {
			left = fmt.Sprintf("generation %d observed %d, %d replicas of %d, %d updated, %d ready, %d available",
				d.Generation, st.ObservedGeneration, st.Replicas, want, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas)
		}
		out = append(out, rolloutLine("Deployment", &d.ObjectMeta, d.Spec.Template.Spec, left))
	}
	var dss appsv1.DaemonSetList
	if err := c.List(ctx, &dss, sel); err != nil {
		return nil, err
	}
	for _, d := range dss.Items {
		st, want := d.Status, int32(nodes)
		left := ""
		if st.ObservedGeneration < d.Generation || st.DesiredNumberScheduled != want || st.CurrentNumberScheduled != want || st.UpdatedNumberScheduled != want || st.NumberReady != want || st.NumberAvailable != want {
			left = fmt.Sprintf("generation %d observed %d, %d desired of %d nodes, %d scheduled, %d updated, %d ready, %d available",
				d.Generation, st.ObservedGeneration, st.DesiredNumberScheduled, want, st.CurrentNumberScheduled, st.UpdatedNumberScheduled, st.NumberReady, st.NumberAvailable)
		}
		out = append(out, rolloutLine("DaemonSet", &d.ObjectMeta, d.Spec.Template.Spec, left))
	}
	slices.Sort(out)
	return out, nil
}

// rolloutLine is workloadRollouts' line of one workload; left is what
// is left of its rollout, "" when none.
func rolloutLine(kind string, m *metav1.ObjectMeta, pod corev1.PodSpec, left string) string {
	s := fmt.Sprintf("%s %s/%s %s: ", kind, m.Namespace, m.Name, pod.Containers[0].Image)
	if left == "" {
		return s + "rolled out"
	}
	return s + left
}

// installRelease puts the manifest components of release version of the sample
// catalog into the cluster of cfg as instance's, as an earlier upgrade
// would have left them, and waits until their workloads have rolled out:
// the cluster then runs what its ClusterVersion says. The readiness waits
// are the test's, all at once (polled every 100ms), not each component's
// health checks one after another at their intervals of 5 to 10 seconds.
func installRelease(t *testing.T, cfg *rest.Config, c client.Client, instance, version string) {
	t.Helper()
	ctx := context.Background()
	// The provider's namespace, which docs/operator.md has an administrator
	// create: the catalog does not.
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cluster-system"}}))
	cat, err := release.LoadDir(catalogDir)
	require.NoError(t, err)
	rel, ok := cat.Release(release.MustParseVersion(version))
	require.True(t, ok, "release %s in %s", version, catalogDir)
	a, err := apply.New(cfg)
	require.NoError(t, err)
	m := newManifest(a, instance)
	for _, cv := range cat.ComponentsOf(rel) {
		if cv.Type != release.TypeManifest {
			continue
		}
		now := *cv
		now.HealthChecks = nil
		require.NoError(t, m.Run(ctx, runner.Task{Component: cv.Name, To: &now, Attempt: 1}), "installing %s %s", cv.Name, cv.Version)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ws, err := workloadRollouts(ctx, c, client.MatchingLabels{components.LabelInstance: instance}, realNodes)
		require.NoError(t, err)
		left := slices.DeleteFunc(slices.Clone(ws), func(w string) bool { return strings.HasSuffix(w, ": rolled out") })
		if len(ws) == 5 && len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's 5 workloads (3 Deployments, 2 DaemonSets) not rolled out in the real cluster after a minute: %q", version, ws)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
