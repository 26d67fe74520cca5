package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// caBundle is the machine's CA certificates: Debian's ca-certificates
// bundle, which update-ca-certificates writes.
const caBundle = "/etc/ssl/certs/ca-certificates.crt"

// nonRoot is the user and group the base image runs as (distroless's and
// Chainguard's "nonroot", 65532), which kube/config/manager's
// Deployment's runAsNonRoot accepts: a numeric non-zero user the kubelet
// can check without reading /etc/passwd.
const nonRoot = 65532

// startRegistry starts the CNCF distribution registry of HOPDAG_REGISTRY
// on a free port of 127.0.0.1, storing into a directory of the test's,
// until the test ends; it returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	bin := need(t, "HOPDAG_REGISTRY", "OCI registry")
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	conf := filepath.Join(dir, "config.yml")
	require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil, "version: 0.1\nlog: {level: error, accesslog: {disabled: true}}\nstorage: {filesystem: {rootdirectory: %s}}\nhttp: {addr: %s}\n", filepath.Join(dir, "storage"), addr), 0o600))
	var logs bytes.Buffer
	cmd := exec.Command(bin, "serve", conf)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start(), "start the registry %s", bin)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("registry log:\n%s", logs.String())
		}
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond, "the registry on %s never answered", addr)
	return addr
}

// baseImage assembles the operator image's base from nothing outside the
// machine: no base image can be pulled here or in CI (no internet), and
// ko's default (cgr.dev/chainguard/static) is on the internet. It is an
// empty image (no shell, no package manager: nothing to patch or exploit
// but the operator's own static binary, like distroless/static) plus one
// layer of:
//   - etc/ssl/certs/ca-certificates.crt, the machine's Debian CA bundle:
//     Go's crypto/x509 reads it there to verify the API server's and
//     webhooks' certificates signed by a public CA (in-cluster, the
//     ServiceAccount's CA is mounted instead);
//   - etc/passwd and etc/group naming root and nonroot (65532), and
//     home/nonroot owned by it: a process that looks its user up (os/user,
//     $HOME for client-go's cache) finds one;
//   - tmp, world-writable and sticky, for whoever writes a temporary file
//     (the Deployment mounts an emptyDir there, its root filesystem being
//     read-only);
//
// and a config running as 65532:65532 (non-root by default, so that
// runAsNonRoot holds without a runAsUser), for linux/amd64.
func baseImage(t *testing.T) v1.Image {
	t.Helper()
	certs, err := os.ReadFile(caBundle)
	if err != nil {
		msg := fmt.Sprintf("no CA bundle at %s (install Debian's ca-certificates package: apt-get install ca-certificates): %v", caBundle, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mod := time.Unix(0, 0)
	dir := func(path string, mode int64, uid int) {
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: path + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: mod}))
	}
	file := func(path string, data []byte) {
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: 0o644, Size: int64(len(data)), ModTime: mod}))
		_, err := tw.Write(data)
		require.NoError(t, err)
	}
	dir("etc", 0o755, 0)
	dir("etc/ssl", 0o755, 0)
	dir("etc/ssl/certs", 0o755, 0)
	file("etc/ssl/certs/ca-certificates.crt", certs)
	file("etc/passwd", fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonRoot, nonRoot))
	file("etc/group", fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", nonRoot))
	dir("home", 0o755, 0)
	dir("home/nonroot", 0o700, nonRoot)
	dir("tmp", 0o1777, 0)
	require.NoError(t, tw.Close())
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	require.NoError(t, err)
	img, err := mutate.AppendLayers(empty.Image, layer)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.User = fmt.Sprintf("%d:%d", nonRoot, nonRoot)
	cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	img, err = mutate.ConfigFile(img, cf)
	require.NoError(t, err)
	return img
}

// TestKoImage builds the operator's image with ko, without Docker: the
// base assembled by baseImage, pushed to a registry on 127.0.0.1 and named
// as ko's base (KO_DEFAULTBASEIMAGE), then `ko build ./examples/operator`
// pushed to the same registry. It pulls the image back, checks its config
// (non-root user, ko's entrypoint), extracts the operator binary from the
// image's layer and runs it: --help, then a start against the test
// control plane with a kubeconfig, until /healthz and /readyz answer ok,
// and a clean stop on SIGTERM.
func TestKoImage(t *testing.T) {
	ko := need(t, "HOPDAG_KO", "ko")
	cp.Need(t)
	if testing.Short() {
		t.Skip("builds the operator with ko: 20s with a warm build cache, over 10 minutes without")
	}
	reg := startRegistry(t)
	// ko compiles the operator with -trimpath: from an empty build cache,
	// on two busy cores, over 10 minutes (19s once cached).
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()

	base, err := name.ParseReference(reg+"/hopdag/base:static", name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(base, baseImage(t), remote.WithContext(ctx)), "push the base image to %s", base)

	// ko build, from the kube module (this package's ../..).
	refs := filepath.Join(t.TempDir(), "refs")
	cmd := exec.CommandContext(ctx, ko, "build", "./examples/operator", "--bare", "--platform=linux/amd64", "--sbom=none", "--image-refs="+refs)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "KO_DOCKER_REPO="+reg+"/hopdag/operator", "KO_DEFAULTBASEIMAGE="+base.String(), "CGO_ENABLED=0")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "ko build ./examples/operator:\n%s", out)
	data, err := os.ReadFile(refs)
	require.NoError(t, err)
	built := strings.TrimSpace(string(data))
	t.Logf("ko build took %s: %s", time.Since(start).Round(time.Second), built)
	require.True(t, strings.HasPrefix(built, reg+"/hopdag/operator@sha256:"), "ko pushed %q, want it in %s/hopdag/operator by digest", built, reg)

	// Pull it back and check its config.
	ref, err := name.ParseReference(built, name.Insecure)
	require.NoError(t, err)
	img, err := remote.Image(ref, remote.WithContext(ctx))
	require.NoError(t, err, "pull %s", ref)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%d:%d", nonRoot, nonRoot), cf.Config.User, "the image's user: non-root")
	assert.Equal(t, []string{"/ko-app/operator"}, cf.Config.Entrypoint, "the image's entrypoint")
	assert.Equal(t, "linux", cf.OS)
	assert.Equal(t, "amd64", cf.Architecture)
	layers, err := img.Layers()
	require.NoError(t, err)
	baseLayers, err := baseImage(t).Layers()
	require.NoError(t, err)
	bd, err := baseLayers[0].Digest()
	require.NoError(t, err)
	ld, err := layers[0].Digest()
	require.NoError(t, err)
	assert.Equal(t, bd, ld, "the image's first layer is the base's")

	bin := extract(t, layers, "ko-app/operator")
	help, err := exec.CommandContext(ctx, bin, "--help").CombinedOutput()
	require.NoError(t, err, "operator --help:\n%s", help)
	for _, flag := range []string{"-catalog", "-health-probe-bind-address", "-metrics-bind-address", "-kubeconfig", "-leader-elect"} {
		assert.Contains(t, string(help), flag, "operator --help lists %s", flag)
	}

	runImageBinary(ctx, t, bin)
}

// extract writes the file at path of the image's layers (the last layer
// holding it wins) into a temporary executable and returns its path.
func extract(t *testing.T, layers []v1.Layer, path string) string {
	t.Helper()
	var data []byte
	for _, l := range layers {
		rc, err := l.Uncompressed()
		require.NoError(t, err)
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			if strings.TrimPrefix(h.Name, "/") == path && h.Typeflag == tar.TypeReg {
				assert.NotZero(t, h.Mode&0o111, "%s is executable in the image", path)
				data, err = io.ReadAll(tr)
				require.NoError(t, err)
			}
		}
		require.NoError(t, rc.Close())
	}
	require.NotEmpty(t, data, "no %s in the image's layers", path)
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	require.NoError(t, os.WriteFile(out, data, 0o755))
	return out
}

// runImageBinary starts the operator binary against the test control
// plane (a kubeconfig of its administrator, the CRDs installed), waits
// for /healthz and /readyz to answer ok, and stops it with SIGTERM,
// expecting a clean exit.
func runImageBinary(ctx context.Context, t *testing.T, bin string) {
	t.Helper()
	cfg := cp.Config()
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{configDir("crd")}, ErrorIfPathMissing: true})
	require.NoError(t, err)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	kc.CurrentContext = "test"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, kubeconfig))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	probes := l.Addr().String()
	require.NoError(t, l.Close())
	var logs lockedBuffer
	cmd := exec.Command(bin, "--kubeconfig="+kubeconfig, "--catalog=../../../testdata/catalog", "--health-probe-bind-address="+probes, "--metrics-bind-address=0")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("operator log:\n%s", logs.String())
		}
	}()
	for _, path := range []string{"/healthz", "/readyz"} {
		var last string
		ok := assert.Eventually(t, func() bool {
			resp, err := http.Get("http://" + probes + path)
			if err != nil {
				last = err.Error()
				return false
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
			return resp.StatusCode == http.StatusOK && string(body) == "ok"
		}, time.Minute, 100*time.Millisecond, "the operator's %s never answered 200 ok", path)
		t.Logf("GET %s: %s", path, last)
		if !ok {
			return
		}
	}
	// Ready says the caches synced; each controller starts its workers
	// once its own event handlers have seen them, a moment later. A stop
	// before that is not a clean start and stop: controller-runtime logs
	// the sources' wait cut short as an ERROR.
	assert.Eventually(t, func() bool { return strings.Count(logs.String(), `msg="Starting workers"`) == 2 }, time.Minute, 50*time.Millisecond,
		"both controllers (clusterversion, upgraderollout) start their workers")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		assert.NoError(t, err, "the operator's exit on SIGTERM")
	case <-ctx.Done():
		t.Fatal("the operator did not exit after SIGTERM")
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		assert.NotContains(t, line, "level=ERROR", "no ERROR on a clean start and stop")
	}
}

// lockedBuffer is a process's output, read while it writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
