package controlplane

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The environment variables that name the binaries; tools/env.sh sets
// them. KUBEBUILDER_ASSETS is envtest's directory holding etcd and
// kube-apiserver.
const (
	EnvAssets            = "KUBEBUILDER_ASSETS"
	EnvControllerManager = "HOPDAG_KUBE_CONTROLLER_MANAGER"
	EnvScheduler         = "HOPDAG_KUBE_SCHEDULER"
	EnvKwok              = "HOPDAG_KWOK"
)

// The labels and annotations that kwok's stages (stages.yaml) read.
const (
	// AnnotationNode, set to "fake", marks the Nodes kwok manages.
	AnnotationNode = "kwok.x-k8s.io/node"
	// LabelReady set to "false" on a pod (in a workload's pod template)
	// keeps it Running but never Ready, a readiness probe that never
	// passes: a rollout of such pods never completes.
	LabelReady = "kwok.hopdag.io/ready"
	// AnnotationReadyDelay on a pod is a Go duration ("2s") kwok waits
	// before marking the pod Running and Ready, so that a rollout takes a
	// time a test can observe.
	AnnotationReadyDelay = "kwok.hopdag.io/ready-delay"
)

// controllers are the kube-controller-manager controllers that run: those
// of workloads and of what a namespace needs, nothing of nodes, volumes or
// networking.
var controllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"daemonset-controller",
	"statefulset-controller",
	"job-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"namespace-controller",
	"garbage-collector-controller",
}

//go:embed stages.yaml
var stages []byte

// ErrMissing matches the error of Start when a binary is not there.
var ErrMissing = errors.New("controlplane: a binary is missing")

// ControlPlane is a running control plane: see the package comment.
type ControlPlane struct {
	env     *envtest.Environment
	cfg     *rest.Config
	dir     string
	ownDir  bool
	keep    bool
	nodes   []string
	procs   []*process
	logs    []*os.File
	steps   []step
	started time.Duration
}

// step is one part of the start and how long it took.
type step struct {
	what string
	took time.Duration
}

// Option configures Start.
type Option func(*options)

type options struct {
	nodes int
	dir   string
}

// WithNodes sets the number of fake nodes (default 3). A DaemonSet gets a
// pod on each.
func WithNodes(n int) Option { return func(o *options) { o.nodes = n } }

// WithDir sets the directory of the logs, kubeconfigs and certificates,
// which Stop then leaves in place; by default it is a new temporary
// directory that Stop removes.
func WithDir(dir string) Option { return func(o *options) { o.dir = dir } }

// Missing names what Start lacks: each environment variable that is unset
// or names no executable (for KUBEBUILDER_ASSETS, a directory without
// etcd and kube-apiserver), sorted; nil when nothing is missing.
func Missing() []string {
	var out []string
	if dir := os.Getenv(EnvAssets); !executable(filepath.Join(dir, "etcd")) || !executable(filepath.Join(dir, "kube-apiserver")) {
		out = append(out, EnvAssets+" (etcd, kube-apiserver)")
	}
	for _, env := range []string{EnvControllerManager, EnvKwok, EnvScheduler} {
		if !executable(os.Getenv(env)) {
			out = append(out, env)
		}
	}
	return out
}

func executable(path string) bool {
	if path == "" || !filepath.IsAbs(path) && !strings.Contains(path, "/") {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// howTo says what is missing and how to get it.
func howTo(missing []string) string {
	return fmt.Sprintf("no control plane: %s not set to the binaries; run `eval \"$(tools/env.sh)\"` from the repository root (it builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok from the Go module proxy, 20 to 30 minutes the first time on two cores)", strings.Join(missing, ", "))
}

// Start starts a control plane and returns once the API server serves,
// the controller-manager and the scheduler report healthy, and every fake
// node is Ready. ctx bounds the start only; the processes run until Stop.
// A binary that is missing is an error matching ErrMissing. On any error
// what started is stopped, and the error ends with the end of each log.
func Start(ctx context.Context, opts ...Option) (_ *ControlPlane, err error) {
	o := options{nodes: 3}
	for _, opt := range opts {
		opt(&o)
	}
	if o.nodes < 1 {
		return nil, fmt.Errorf("controlplane: WithNodes(%d): want at least 1 node", o.nodes)
	}
	if m := Missing(); len(m) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrMissing, howTo(m))
	}
	c := &ControlPlane{dir: o.dir}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "hopdag-controlplane-"); err != nil {
			return nil, fmt.Errorf("controlplane: %w", err)
		}
		c.ownDir = true
	} else if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	begin := time.Now()
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, c.Logs(20))
			c.keep = true
			_ = c.Stop()
		}
	}()
	if err := c.startAPIServer(ctx); err != nil {
		return nil, err
	}
	c.step("etcd and kube-apiserver", begin)
	cs, err := kubernetes.NewForConfig(c.cfg)
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	t := time.Now()
	if err := c.startControllerManager(ctx); err != nil {
		return nil, err
	}
	c.step("kube-controller-manager", t)
	t = time.Now()
	if err := c.startScheduler(ctx); err != nil {
		return nil, err
	}
	c.step("kube-scheduler", t)
	t = time.Now()
	if err := c.startKwok(ctx, cs, o.nodes); err != nil {
		return nil, err
	}
	c.step(fmt.Sprintf("kwok and %d nodes Ready", o.nodes), t)
	c.started = time.Since(begin)
	return c, nil
}

func (c *ControlPlane) step(what string, since time.Time) {
	c.steps = append(c.steps, step{what: what, took: time.Since(since)})
}

// startAPIServer starts etcd and kube-apiserver through envtest, logging
// into the directory.
func (c *ControlPlane) startAPIServer(ctx context.Context) error {
	etcdLog, err := c.createLog("etcd")
	if err != nil {
		return err
	}
	apiLog, err := c.createLog("kube-apiserver")
	if err != nil {
		return err
	}
	timeout := time.Minute
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	c.env = &envtest.Environment{
		BinaryAssetsDirectory:    os.Getenv(EnvAssets),
		ControlPlaneStartTimeout: timeout,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	c.env.ControlPlane.Etcd = &envtest.Etcd{Out: etcdLog, Err: etcdLog}
	c.env.ControlPlane.APIServer = &envtest.APIServer{Out: apiLog, Err: apiLog}
	cfg, err := c.env.Start()
	if err != nil {
		c.env = nil
		return fmt.Errorf("controlplane: start etcd and kube-apiserver (envtest, binaries in %s=%s): %w", EnvAssets, os.Getenv(EnvAssets), err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 100, 200
	c.cfg = cfg
	return nil
}

// kubeconfig provisions a user of group system:masters for a component
// and writes its kubeconfig; it returns the file's path.
func (c *ControlPlane) kubeconfig(component string) (string, error) {
	u, err := c.env.AddUser(envtest.User{Name: "hopdag-controlplane:" + component, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("controlplane: a user for %s: %w", component, err)
	}
	data, err := u.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("controlplane: the kubeconfig of %s: %w", component, err)
	}
	path := filepath.Join(c.dir, component+".kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("controlplane: %w", err)
	}
	return path, nil
}

// startControllerManager starts kube-controller-manager and waits until
// its /healthz answers ok.
func (c *ControlPlane) startControllerManager(ctx context.Context) error {
	kc, err := c.kubeconfig("kube-controller-manager")
	if err != nil {
		return err
	}
	api := c.env.ControlPlane.GetAPIServer()
	// The API server verifies service account tokens with envtest's
	// sa-signer.crt (--service-account-key-file): the token controller
	// signs with its key.
	saKey := filepath.Join(api.CertDir, "sa-signer.key")
	if _, err := os.Stat(saKey); err != nil {
		return fmt.Errorf("controlplane: the API server's service account signing key: %w (envtest writes it into the API server's cert dir; has its layout changed?)", err)
	}
	ca := filepath.Join(c.dir, "ca.crt")
	if err := os.WriteFile(ca, api.SecureServing.CA, 0o600); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	p, err := c.start("kube-controller-manager", os.Getenv(EnvControllerManager),
		"--kubeconfig="+kc,
		"--leader-elect=false",
		"--controllers="+strings.Join(controllers, ","),
		"--service-account-private-key-file="+saKey,
		"--root-ca-file="+ca,
		"--use-service-account-credentials=false",
		"--kube-api-qps=100", "--kube-api-burst=200",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir="+filepath.Join(c.dir, "kube-controller-manager"),
	)
	if err != nil {
		return err
	}
	return p.waitHealthy(ctx, port)
}

// startScheduler starts kube-scheduler and waits until its /healthz
// answers ok.
func (c *ControlPlane) startScheduler(ctx context.Context) error {
	kc, err := c.kubeconfig("kube-scheduler")
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	p, err := c.start("kube-scheduler", os.Getenv(EnvScheduler),
		"--kubeconfig="+kc,
		"--leader-elect=false",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir="+filepath.Join(c.dir, "kube-scheduler"),
	)
	if err != nil {
		return err
	}
	return p.waitHealthy(ctx, port)
}

// startKwok creates the fake nodes, starts kwok with the stages of
// stages.yaml, and waits until every node is Ready.
func (c *ControlPlane) startKwok(ctx context.Context, cs kubernetes.Interface, n int) error {
	for i := range n {
		name := fmt.Sprintf("kwok-node-%d", i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{AnnotationNode: "fake"},
			Labels: map[string]string{
				"type":                   "kwok",
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		}}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("controlplane: create node %s: %w", name, err)
		}
		c.nodes = append(c.nodes, name)
	}
	kc, err := c.kubeconfig("kwok")
	if err != nil {
		return err
	}
	conf := filepath.Join(c.dir, "kwok-stages.yaml")
	if err := os.WriteFile(conf, stages, 0o600); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	p, err := c.start("kwok", os.Getenv(EnvKwok),
		"--kubeconfig="+kc,
		"--config="+conf,
		"--manage-nodes-with-annotation-selector="+AnnotationNode+"=fake",
		"--cidr=10.244.0.0/16",
	)
	if err != nil {
		return err
	}
	err = p.poll(ctx, "every node Ready", func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, node := range list.Items {
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == n, nil
	})
	if err != nil {
		return err
	}
	// The API server's TaintNodesByCondition admission taints a new node
	// node.kubernetes.io/not-ready:NoSchedule; the node lifecycle
	// controller, which does not run here (the fake nodes send no
	// heartbeats), would remove it once the node is Ready.
	for _, name := range c.nodes {
		patch := []byte(`{"spec":{"taints":null}}`)
		if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("controlplane: remove the not-ready taint of node %s: %w", name, err)
		}
	}
	return nil
}

// Config is a rest.Config of a cluster administrator (group
// system:masters), allowed 100 requests a second (burst 200). Each call
// returns a new copy.
func (c *ControlPlane) Config() *rest.Config { return rest.CopyConfig(c.cfg) }

// Nodes are the names of the fake nodes, in order of creation.
func (c *ControlPlane) Nodes() []string { return append([]string(nil), c.nodes...) }

// Dir is the directory of the processes' logs (NAME.log), the
// kubeconfigs and the CA certificate.
func (c *ControlPlane) Dir() string { return c.dir }

// StartDuration is how long Start took.
func (c *ControlPlane) StartDuration() time.Duration { return c.started }

// String describes the control plane: its API server, nodes, how long
// each part took to start, and where the logs are.
func (c *ControlPlane) String() string {
	parts := make([]string, len(c.steps))
	for i, s := range c.steps {
		parts[i] = fmt.Sprintf("%s %.1fs", s.what, s.took.Seconds())
	}
	host := ""
	if c.cfg != nil {
		host = c.cfg.Host
	}
	return fmt.Sprintf("controlplane: API server %s, %d fake nodes, started in %.1fs (%s), logs in %s",
		host, len(c.nodes), c.started.Seconds(), strings.Join(parts, ", "), c.dir)
}

// Stop ends every process, kwok first and etcd last (each gets a SIGTERM,
// then a SIGKILL after 10 seconds), and removes the directory Start
// created (not one given with WithDir). A process that had exited before
// Stop is an error (it crashed: see its log); the errors are joined.
func (c *ControlPlane) Stop() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		errs = append(errs, c.procs[i].stop(10*time.Second))
	}
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("controlplane: stop etcd and kube-apiserver: %w", err))
		}
	}
	for _, f := range c.logs {
		_ = f.Close()
	}
	if c.ownDir && !c.keep {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("controlplane: %w", err))
		}
	}
	return errors.Join(errs...)
}
