package apply_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/apply"
)

// BenchmarkApplyVsKubectl applies the same objects to the same API server
// with the Applier and with `kubectl apply --server-side -f DIR` (kubectl
// from HOPDAG_KUBECTL), interleaved: per iteration, each into a fresh
// namespace, the Applier creates them, kubectl creates them, then each
// applies them again unchanged. Metrics:
//
//	x-kubectl       Applier time / kubectl time, creating (kubectl's time
//	                includes its process start and discovery)
//	x-kubectl-warm  the same for the second, unchanged apply (kubectl's
//	                discovery cache warm)
//
// Below 1 the Applier is faster. ns/op is the Applier's create time.
func BenchmarkApplyVsKubectl(b *testing.B) {
	needCluster(b)
	kubectl := os.Getenv("HOPDAG_KUBECTL")
	if kubectl == "" {
		b.Skip("no kubectl: run `eval \"$(tools/env.sh kube)\"` to set HOPDAG_KUBECTL")
	}
	kubeconfig := writeKubeconfig(b)
	cache := b.TempDir()
	for _, bc := range []struct {
		name string
		n    int
		obj  func(i int) string
	}{
		{"configmaps-500", 500, func(i int) string {
			return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d}\ndata: {key: value-%d, other: \"some longer text %d\"}\n", i, i, i)
		}},
		{"deployments-50", 50, func(i int) string {
			return strings.Replace(deployment(fmt.Sprintf("registry.local/web:%d", i)), "name: web}", fmt.Sprintf("name: web-%d}", i), 1)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			a, err := apply.New(cfg)
			require.NoError(b, err)
			var applier, applierWarm, kube, kubeWarm time.Duration
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				nsA, nsK := namespace(b), namespace(b)
				objs := benchObjects(b, nsA, bc.n, bc.obj)
				dir := b.TempDir()
				for i := range bc.n {
					require.NoError(b, os.WriteFile(filepath.Join(dir, fmt.Sprintf("obj-%04d.yaml", i)), []byte(bc.obj(i)), 0o644))
				}
				b.StartTimer()

				start := time.Now()
				cs, err := a.ApplyAll(ctx, objs, components.ApplyOptions{FieldManager: "hopdag"})
				applier += time.Since(start)
				b.StopTimer()
				require.NoError(b, err)
				require.Equal(b, bc.n, cs.Count(apply.Created))

				kube += runKubectl(b, kubectl, kubeconfig, cache, nsK, dir)
				start = time.Now()
				cs, err = a.ApplyAll(ctx, objs, components.ApplyOptions{FieldManager: "hopdag"})
				applierWarm += time.Since(start)
				require.NoError(b, err)
				require.Equal(b, bc.n, cs.Count(apply.Unchanged))
				kubeWarm += runKubectl(b, kubectl, kubeconfig, cache, nsK, dir)
				b.StartTimer()
			}
			b.ReportMetric(applier.Seconds()/kube.Seconds(), "x-kubectl")
			b.ReportMetric(applierWarm.Seconds()/kubeWarm.Seconds(), "x-kubectl-warm")
			b.ReportMetric(kube.Seconds()*1e3/float64(b.N), "kubectl-ms/op")
			b.ReportMetric(applierWarm.Seconds()*1e3/float64(b.N), "reapply-ms/op")
			b.ReportMetric(kubeWarm.Seconds()*1e3/float64(b.N), "kubectl-reapply-ms/op")
		})
	}
}

// benchObjects renders n objects into namespace ns as the Manifest would
// (namespace defaulted, ownership labels on).
func benchObjects(b *testing.B, ns string, n int, obj func(int) string) []components.Object {
	var tpl strings.Builder
	for i := range n {
		tpl.WriteString(obj(i))
		tpl.WriteString("---\n")
	}
	objs, err := components.NewManifest(components.NewRecorder(), components.WithNamespace(ns)).Render(task(nil, cv("bench", "v1.0", ns, tpl.String())))
	require.NoError(b, err)
	// Render leaves the labels to Run: put them on (Content is shared,
	// so on copies), so that the re-apply checks the owner as a run does.
	labels := map[string]any{}
	for k, v := range components.OwnerLabels("bench", "bench") {
		labels[k] = v
	}
	for i := range objs {
		c := maps.Clone(objs[i].Content)
		md := maps.Clone(c["metadata"].(map[string]any))
		md["labels"] = labels
		c["metadata"] = md
		objs[i].Content = c
	}
	return objs
}

// runKubectl applies dir into ns with kubectl and returns how long the
// process took.
func runKubectl(b *testing.B, kubectl, kubeconfig, cache, ns, dir string) time.Duration {
	cmd := exec.Command(kubectl, "--kubeconfig", kubeconfig, "--cache-dir", cache, "apply", "--server-side", "--field-manager", "kubectl-bench", "-n", ns, "-f", dir)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	require.NoError(b, err, "kubectl: %s", out)
	return d
}

// writeKubeconfig writes the envtest server's credentials for kubectl.
func writeKubeconfig(b *testing.B) string {
	c := clientcmdapi.NewConfig()
	c.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	c.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	c.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	c.CurrentContext = "envtest"
	p := filepath.Join(b.TempDir(), "kubeconfig")
	require.NoError(b, clientcmd.WriteToFile(*c, p))
	return p
}
