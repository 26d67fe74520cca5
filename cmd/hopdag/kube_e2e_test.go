package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// End-to-end tests of manifest components against a real kube-apiserver
// (and etcd) on 127.0.0.1, started by envtest from KUBEBUILDER_ASSETS: a
// built hopdag applies testdata/kube-catalog through kube/apply. No
// kubelet and no controller-manager run: the test plays the Deployment
// controller (deploymentController) when it wants web to get ready.

const (
	kubeCatalog = "testdata/kube-catalog"
	kubeHowTo   = "no kube-apiserver: run `eval \"$(tools/env.sh kube)\"` from the repository root (builds kube-apiserver and kubectl, ~10 minutes the first time) to set KUBEBUILDER_ASSETS"
	// kubeNS is the namespace the catalog's objects go to (--set ns=).
	kubeNS = "hopdag-cli-e2e"
)

var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	services    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// cluster is one envtest API server and a kubeconfig file for it (its
// context "envtest" is the current one).
type cluster struct {
	cfg        *rest.Config
	dyn        dynamic.Interface
	kubeconfig string
}

// startCluster starts an API server for the test (stopped with it). It
// skips without KUBEBUILDER_ASSETS, and fails under CI=true.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and KUBEBUILDER_ASSETS is unset: " + kubeHowTo)
		}
		t.Skip(kubeHowTo)
	}
	// envtest logs through controller-runtime's logger, which dumps a stack
	// after 30s unless one is set.
	ctrllog.SetLogger(logr.Discard())
	env := &envtest.Environment{ControlPlaneStartTimeout: 3 * time.Minute, ControlPlaneStopTimeout: time.Minute}
	cfg, err := env.Start()
	require.NoError(t, err, "start the API server")
	t.Cleanup(func() { _ = env.Stop() })
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)

	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return &cluster{cfg: cfg, dyn: dyn, kubeconfig: path}
}

// get reads an object; nil when it does not exist or is being deleted (a
// foreground deletion is never finished without a garbage collector).
func (c *cluster) get(t *testing.T, r schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := c.dyn.Resource(r).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	if u.GetDeletionTimestamp() != nil {
		return nil
	}
	return u
}

// snapshot is what the test compares to see that a dry run changed
// nothing: every object of the namespace and of the inventories with its
// resourceVersion.
func (c *cluster) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range []schema.GroupVersionResource{configMaps, services, deployments} {
		for _, ns := range []string{kubeNS, "hopdag-system"} {
			list, err := c.dyn.Resource(r).Namespace(ns).List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			for _, u := range list.Items {
				out[r.Resource+" "+ns+"/"+u.GetName()] = u.GetResourceVersion()
			}
		}
	}
	return out
}

// deploymentController marks every Deployment of the namespace whose
// status lags its generation ready, as the Deployment controller and
// kubelet would, until the returned stop is called.
func (c *cluster) deploymentController(t *testing.T) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
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
			ri := c.dyn.Resource(deployments).Namespace(kubeNS)
			list, err := ri.List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, u := range list.Items {
				if og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); og == u.GetGeneration() {
					continue
				}
				now := time.Now().UTC().Format(time.RFC3339)
				u.Object["status"] = map[string]any{
					"observedGeneration": u.GetGeneration(),
					"replicas":           int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1),
					"conditions": []any{
						map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastUpdateTime": now, "lastTransitionTime": now},
						map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastUpdateTime": now, "lastTransitionTime": now},
					},
				}
				_, _ = ri.UpdateStatus(ctx, &u, metav1.UpdateOptions{})
			}
		}
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

// hopdagEnv runs the built hopdag with env (and HOME in a temp directory,
// so that no ~/.kube/config of the machine is read) to the end.
func hopdagEnv(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := kubeCommand(t, env, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

func kubeCommand(t *testing.T, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=")
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

func kubeRunArgs(c *cluster, from, to, state string, extra ...string) []string {
	args := []string{"run", kubeCatalog, "--from", from, "--to", to, "--kubeconfig", c.kubeconfig, "--set", "ns=" + kubeNS}
	if state != "" {
		args = append(args, "--state", state)
	}
	return append(args, extra...)
}

func dataOf(u *unstructured.Unstructured, key string) string {
	if u == nil {
		return ""
	}
	v, _, _ := unstructured.NestedString(u.Object, "data", key)
	return v
}

func imageOf(u *unstructured.Unstructured) string {
	if u == nil {
		return ""
	}
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return ""
	}
	img, _, _ := unstructured.NestedString(cs[0].(map[string]any), "image")
	return img
}

// TestKubeRun is the story of a cluster upgraded from the command line,
// in order, against one API server: install v1.0 (a kubeconfig from
// $KUBECONFIG), dry-run v2.0 (nothing changes, every object's action is
// printed), upgrade to v2.0 and SIGKILL hopdag while web waits for its
// Deployment, resume (the dropped ConfigMap pruned, nothing run twice that
// had succeeded).
func TestKubeRun(t *testing.T) {
	c := startCluster(t)
	dir := t.TempDir()

	t.Run("install", func(t *testing.T) {
		stop := c.deploymentController(t)
		defer stop()
		state := filepath.Join(dir, "install")
		args := kubeRunArgs(c, "v0.0", "v1.0", state)
		args = append(args[:6:6], args[8:]...) // no --kubeconfig: $KUBECONFIG
		code, out, stderr := hopdagEnv(t, []string{"KUBECONFIG=" + c.kubeconfig}, args...)
		require.Equal(t, 0, code, "hopdag %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, stderr)
		for _, line := range []string{
			"config: Namespace " + kubeNS + " created",
			"config: ConfigMap " + kubeNS + "/settings created",
			"config: ConfigMap " + kubeNS + "/legacy created",
			"web: Service " + kubeNS + "/web created",
			"web: Deployment.apps " + kubeNS + "/web created",
		} {
			assert.Contains(t, out, line)
		}
		assert.Equal(t, "1.0", dataOf(c.get(t, configMaps, kubeNS, "settings"), "version"))
		assert.NotNil(t, c.get(t, configMaps, kubeNS, "legacy"))
		assert.NotNil(t, c.get(t, services, kubeNS, "web"))
		assert.Equal(t, "registry.local/web:1.0", imageOf(c.get(t, deployments, kubeNS, "web")))
		assert.Equal(t, "Succeeded", statusJSON(t, state)["phase"])
	})

	t.Run("dry run changes nothing", func(t *testing.T) {
		before := c.snapshot(t)
		code, out, stderr := hopdagEnv(t, nil, kubeRunArgs(c, "v1.0", "v2.0", "", "--dry-run")...)
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
		for _, line := range []string{
			"config: Namespace " + kubeNS + " unchanged (dry run)",
			"config: ConfigMap " + kubeNS + "/settings configured (dry run)",
			"config: ConfigMap " + kubeNS + "/legacy pruned (dry run)",
			"web: Service " + kubeNS + "/web unchanged (dry run)",
			"web: Deployment.apps " + kubeNS + "/web configured (dry run)",
		} {
			assert.Contains(t, out, line)
		}
		assert.Equal(t, before, c.snapshot(t), "a dry run changed the cluster")
		assert.Equal(t, "1.0", dataOf(c.get(t, configMaps, kubeNS, "settings"), "version"))
	})

	t.Run("plan's dry run", func(t *testing.T) {
		before := c.snapshot(t)
		args := kubeRunArgs(c, "v1.0", "v2.0", "")
		args[0] = "plan"
		code, out, stderr := hopdagEnv(t, nil, args...)
		require.Equal(t, 0, code, "hopdag %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, stderr)
		assert.Contains(t, out, "Dry run of hop 1 (v1.0 -> v2.0) against the cluster: server-side, nothing is written.")
		for _, line := range []string{
			"ConfigMap " + kubeNS + "/settings configured",
			"ConfigMap " + kubeNS + "/legacy pruned",
			"Deployment.apps " + kubeNS + "/web configured",
		} {
			assert.Contains(t, out, line)
		}
		assert.Equal(t, before, c.snapshot(t), "the plan's dry run changed the cluster")
		code, _, stderr = hopdagEnv(t, nil, append(args, "-o", "json")...)
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "--kubeconfig and --context add the cluster dry run to the text plan")
	})

	t.Run("killed and resumed", func(t *testing.T) {
		state := filepath.Join(dir, "upgrade")
		args := kubeRunArgs(c, "v1.0", "v2.0", state)
		// No controller: web 2.0 is applied, then waits for its Deployment.
		p := kubeCommand(t, nil, args...)
		var out, errOut bytes.Buffer
		p.Stdout, p.Stderr = &out, &errOut
		require.NoError(t, p.Start())
		exited := make(chan struct{})
		go func() { _ = p.Wait(); close(exited) }()
		t.Cleanup(func() { _ = p.Process.Kill(); <-exited })
		deadline := time.Now().Add(time.Minute)
		for imageOf(c.get(t, deployments, kubeNS, "web")) != "registry.local/web:2.0" {
			select {
			case <-exited:
				t.Fatalf("hopdag exited before web 2.0 was applied; stdout:\n%s\nstderr:\n%s", &out, &errOut)
			default:
			}
			require.True(t, time.Now().Before(deadline), "web 2.0 never applied; stdout:\n%s\nstderr:\n%s", &out, &errOut)
			time.Sleep(20 * time.Millisecond)
		}
		require.NoError(t, p.Process.Signal(syscall.SIGKILL))
		<-exited

		// config 2.0 finished before web started: its prune is done.
		assert.Equal(t, "2.0", dataOf(c.get(t, configMaps, kubeNS, "settings"), "version"))
		assert.Nil(t, c.get(t, configMaps, kubeNS, "legacy"), "config 2.0 pruned the legacy ConfigMap")
		code, table, _ := hopdagEnv(t, nil, "status", "--state", state)
		assert.Equal(t, 3, code, "status of a killed run says still running:\n%s", table)
		assert.Regexp(t, `web +1\.0 +2\.0 +Running`, table)

		stop := c.deploymentController(t)
		defer stop()
		// The killed run's lease on the state outlives it (a holder is
		// dead only once its lease expired): the resumed run waits for it.
		var stdout, stderr string
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
			code, stdout, stderr = hopdagEnv(t, nil, args...)
			if code == 0 || !strings.Contains(stderr, "state: locked by") || time.Now().After(deadline) {
				break
			}
		}
		require.Equal(t, 0, code, "resumed run; stdout:\n%s\nstderr:\n%s", stdout, stderr)
		assert.Contains(t, stderr, "resuming from")
		assert.Contains(t, stdout, "web: Deployment.apps "+kubeNS+"/web unchanged", "the resumed web applies again, and finds its objects in place")
		assert.NotContains(t, stdout, "config: ", "config succeeded before the kill and does not run again")

		assert.Equal(t, "registry.local/web:2.0", imageOf(c.get(t, deployments, kubeNS, "web")))
		assert.Equal(t, "modern", dataOf(c.get(t, configMaps, kubeNS, "settings"), "mode"))
		assert.Nil(t, c.get(t, configMaps, kubeNS, "legacy"))
		assert.NotNil(t, c.get(t, services, kubeNS, "web"))
		sj := statusJSON(t, state)
		assert.Equal(t, "Succeeded", sj["phase"])
		assert.EqualValues(t, 1, component(sj, 0, "config")["attempts"], "config ran once")
		assert.EqualValues(t, 2, component(sj, 0, "web")["attempts"], "web ran again after the kill")
		inv := c.get(t, configMaps, "hopdag-system", "hopdag.default.config")
		require.NotNil(t, inv, "config's inventory")
		assert.Equal(t, "2.0", dataOf(inv, "version"), "config's inventory is that of 2.0")
		assert.NotContains(t, dataOf(inv, "objects"), "legacy", "config's inventory no longer holds the pruned ConfigMap")
	})

	// The status can live in the cluster too (kube/store): an exec catalog
	// run with --state kube://default/NAME, read back with status.
	t.Run("state in the cluster", func(t *testing.T) {
		u := newUpgrade(t)
		u.state = "kube://default/exec-upgrade"
		args := append(u.runArgs(), "--kubeconfig", c.kubeconfig)
		code, out, stderr := hopdagEnv(t, nil, args...)
		require.Equal(t, 0, code, "hopdag %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, stderr)
		code, table, stderr := hopdagEnv(t, nil, "status", "--state", u.state, "--kubeconfig", c.kubeconfig)
		require.Equal(t, 0, code, "status of a succeeded run in the cluster:\n%s\n%s", table, stderr)
		assert.Regexp(t, `db +1\.1 +2\.0 +Succeeded`, table)
		lease := c.get(t, schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, "default", "exec-upgrade")
		assert.NotNil(t, lease, "the lock is a Lease named after the state")
		// A second run finds everything done and runs nothing again.
		code, out, stderr = hopdagEnv(t, nil, args...)
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
		assert.Contains(t, stderr, "resuming from kube://default/exec-upgrade")
	})

	t.Run("helm", func(t *testing.T) {
		// A catalog with a helm component whose chart sits in the catalog
		// directory: v0.0 -> v1.0 installs the release, v1.0 ->
		// v2.0 upgrades it, both through kube/helm on the cluster.
		cat := helmCatalog(t)
		state := filepath.Join(dir, "helm")
		for _, hop := range [][2]string{{"v0.0", "v1.0"}, {"v1.0", "v2.0"}} {
			args := []string{"run", cat, "--from", hop[0], "--to", hop[1], "--kubeconfig", c.kubeconfig, "--state", state + hop[1]}
			code, out, stderr := hopdagEnv(t, []string{"HELM_CACHE_HOME=" + t.TempDir(), "HELM_CONFIG_HOME=" + t.TempDir()}, args...)
			require.Equal(t, 0, code, "hopdag %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, stderr)
			assert.Equal(t, "Succeeded", statusJSON(t, state+hop[1])["phase"])
			assert.Equal(t, "hello "+strings.TrimPrefix(hop[1], "v"), dataOf(c.get(t, configMaps, "helm-apps", "greeter"), "greeting"), "after %s", hop[1])
		}
		secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
		assert.NotNil(t, c.get(t, secrets, "helm-apps", "sh.helm.release.v1.greeter.v2"), "Helm recorded the upgrade as revision 2")

		code, _, stderr := hopdagEnv(t, nil, "run", cat, "--from", "v0.0", "--to", "v1.0", "--apply-dir", t.TempDir())
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "helm component greeter 1.0: a Helm release needs a cluster (--kubeconfig, --context), not --apply-dir")
	})
}

// helmCatalog writes a catalog of one helm component, greeter, whose
// chart is the directory charts/greeter in the catalog (the loader skips
// chart directories). Its values name the component's version; v0.0
// holds nothing.
func helmCatalog(t *testing.T) string {
	t.Helper()
	cat := t.TempDir()
	write := func(dir, name, data string) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	write(cat, "charts/greeter/Chart.yaml", "apiVersion: v2\nname: greeter\nversion: 0.1.0\n")
	write(cat, "charts/greeter/templates/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeter\ndata:\n  greeting: {{ .Values.greeting | quote }}\n")
	var b strings.Builder
	b.WriteString("apiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata: {name: r0}\nspec: {version: v0.0, components: []}\n")
	for _, v := range []string{"1.0", "2.0"} {
		fmt.Fprintf(&b, "---\napiVersion: hopdag.io/v1alpha1\nkind: Release\nmetadata: {name: r%s}\nspec: {version: v%s, components: [{name: greeter, version: \"%s\"}]}\n", v, v, v)
		fmt.Fprintf(&b, "---\napiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata: {name: greeter-%s}\nspec:\n  name: greeter\n  version: \"%s\"\n  type: helm\n  expectedDuration: 1s\n  helm:\n    chart: charts/greeter\n    version: 0.1.0\n    namespace: helm-apps\n    values: |\n      greeting: hello {{ .Component.Version }}\n", v, v)
	}
	b.WriteString("---\napiVersion: hopdag.io/v1alpha1\nkind: UpgradePath\nmetadata: {name: paths}\nspec:\n  rules: [{from: v0.0, to: v1.0}, {from: v1.0, to: v2.0}]\n")
	write(cat, "catalog.yaml", b.String())
	return cat
}
