package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/store"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// operatorDeployment renders the stand-in of an operator's own Deployment
// at an image tag, its pod Ready delay after it starts: one replica, replaced the way an operator with leader
// election is (maxSurge 1, maxUnavailable 0: the new pod starts beside
// the old one, which terminates once the new one is Ready). The delay
// stands for an operator's readiness probe, which passes once it has
// synced its caches.
func operatorDeployment(tag string, delay time.Duration) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: hopdag-operator}
spec:
  replicas: 1
  selector: {matchLabels: {app: hopdag-operator}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  template:
    metadata:
      labels: {app: hopdag-operator}
      annotations: {kwok.hopdag.io/ready-delay: %s}
    spec:
      containers: [{name: manager, image: "example.invalid/hopdag-operator:%s"}]
`, delay, tag)
}

// configMap renders ConfigMap name holding a version.
func configMap(name, version string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {version: %s}\n", name, version)
}

// handoverCatalog is v1.0 and v2.0 of three manifest components in ns:
// crds, then the operator's own Deployment (operator, which depends on
// crds), then addon, which depends on the operator. v2.0's operator pod
// gets Ready 8s after it starts: longer than the next process waits for
// the dead one's lease, so that it finds the rollout under way.
func handoverCatalog(t *testing.T, ns string) *release.Catalog {
	t.Helper()
	var cvs []release.ComponentVersion
	var rels []release.Release
	for _, v := range []string{"v1.0", "v2.0"} {
		tag := v[:2]
		crds := component("crds", v, ns, "ConfigMap", configMap("crds", v), time.Minute)
		delay := time.Duration(0)
		if v == "v2.0" {
			delay = 8 * time.Second
		}
		op := component("operator", v, ns, "Deployment", operatorDeployment(tag, delay), time.Minute)
		op.Dependencies = []string{"crds"}
		addon := component("addon", v, ns, "ConfigMap", configMap("addon", v), time.Minute)
		addon.Dependencies = []string{"operator"}
		cvs = append(cvs, *crds, *op, *addon)
		ver := release.MustParseVersion(v)
		rels = append(rels, release.Release{Version: ver, Components: []release.ComponentRef{{Name: "crds", Version: ver}, {Name: "operator", Version: ver}, {Name: "addon", Version: ver}}})
	}
	cat, err := release.NewCatalog(rels, cvs, []release.UpgradePath{{Rules: []release.Rule{{From: release.MustParseConstraint("v1.0"), To: release.MustParseVersion("v2.0")}}}})
	require.NoError(t, err)
	return cat
}

// newRunStore is a kube/store Store for the run in ns, on a client of its
// own (not cached), as each operator process has.
func newRunStore(t *testing.T, ns string) *store.Store {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	c, err := client.New(cp.Config(), client.Options{Scheme: s})
	require.NoError(t, err)
	st, err := store.New(c, ns, "hopdag-cluster")
	require.NoError(t, err)
	return st
}

// death stands for the end of a process: once it has come, the process
// writes nothing more, neither a checkpoint nor its lease (a dead
// process neither refreshes nor releases it).
type death struct {
	dead atomic.Bool
	kill context.CancelFunc
}

func (d *death) die() { d.dead.Store(true); d.kill() }

// checkpoints drops every checkpoint after the death.
func (d *death) checkpoints(cp runner.Checkpointer) runner.Checkpointer {
	return deadCheckpointer{d, cp.(runner.ChangeCheckpointer)}
}

type deadCheckpointer struct {
	d  *death
	cp runner.ChangeCheckpointer
}

var errDead = errors.New("the process is dead")

func (c deadCheckpointer) Checkpoint(ctx context.Context, s *record.Status) error {
	if c.d.dead.Load() {
		return errDead
	}
	return c.cp.Checkpoint(ctx, s)
}

func (c deadCheckpointer) CheckpointChanges(ctx context.Context, s *record.Status, changed []record.Ref) error {
	if c.d.dead.Load() {
		return errDead
	}
	return c.cp.CheckpointChanges(ctx, s, changed)
}

// deadLock is a state.Lock whose holder refreshes and releases nothing
// after the death.
type deadLock struct {
	d *death
	state.Lock
}

func (l deadLock) Refresh(ctx context.Context, lease state.Lease) (state.Lease, error) {
	if l.d.dead.Load() {
		return lease, errDead
	}
	return l.Lock.Refresh(ctx, lease)
}

func (l deadLock) Release(ctx context.Context, lease state.Lease) error {
	if l.d.dead.Load() {
		return nil
	}
	return l.Lock.Release(ctx, lease)
}

// readyImages counts the Ready operator pods in ns by image, for a
// runner's goroutine (no test assertion: an error counts nothing).
func readyImages(ctx context.Context, cs kubernetes.Interface, ns string) map[string]int {
	out := map[string]int{}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=hopdag-operator"})
	if err != nil {
		return out
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) {
			out[p.Spec.Containers[0].Image]++
		}
	}
	return out
}

// tasks records the tasks a process's runner was given.
type tasks struct {
	mu  sync.Mutex
	got []string
}

func (r *tasks) add(t runner.Task) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, fmt.Sprintf("%s %s attempt %d", t.Component, t.To.Version, t.Attempt))
}

func (r *tasks) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// TestSelfUpgradeHandover is openFuyao's self-upgrade: a hopdag run whose
// component operator patches the operator's own Deployment (a stand-in
// here), with the run's record in kube/store. The first process dies
// right after its patch landed, before the component's end is recorded
// (it writes nothing more and does not release its lease), while the
// Deployment rolls out its new pod. The next process, with a new Store
// and a new Executor, takes the lock once the dead one's lease expired,
// resumes the run from the store (crds, which succeeded, does not run
// again), and the operator component succeeds only once the new
// ReplicaSet is available and the old pod has terminated; addon runs
// after it, and the store records the run Succeeded.
func TestSelfUpgradeHandover(t *testing.T) {
	t.Parallel()
	cs, ns := setup(t)
	cat := handoverCatalog(t, ns)
	ctx := context.Background()
	m := manifest(t, ns)
	v1 := release.MustParseVersion("v1.0")
	for _, name := range []string{"crds", "operator", "addon"} {
		cv, ok := cat.Component(name, v1)
		require.True(t, ok, "%s v1.0 in the catalog", name)
		_, err := run(t, m, nil, cv)
		require.NoError(t, err, "install %s v1.0", name)
	}
	const ttl = state.MinTTL

	// The first process: it dies once the operator's patch has landed.
	runCtx, kill := context.WithCancel(ctx)
	defer kill()
	d := &death{kill: kill}
	first := &tasks{}
	var atDeath map[string]int
	patched := false
	dying := runner.RunnerFunc(func(ctx context.Context, tk runner.Task) error {
		first.add(tk)
		if tk.Component != "operator" {
			return m.Run(ctx, tk)
		}
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx, tk) }()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			dep, err := cs.AppsV1().Deployments(ns).Get(ctx, "hopdag-operator", metav1.GetOptions{})
			if err == nil && dep.Spec.Template.Spec.Containers[0].Image == "example.invalid/hopdag-operator:v2" {
				break
			}
			if time.Now().After(deadline) {
				d.die()
				<-done
				return errors.New("the operator's patch never landed")
			}
		}
		patched = true
		atDeath = readyImages(ctx, cs, ns)
		d.die()
		<-done
		return ctx.Err()
	})
	e1 := runner.New(components.NewRouter().Register(release.TypeManifest, dying))
	plan, err := runner.NewPlan(cat, path.MustParseState("v1.0"), path.MustParseState("v2.0"), runner.ForExecutor(e1))
	require.NoError(t, err)
	s1 := newRunStore(t, ns)
	_, err = state.Run(runCtx, s1, deadLock{d, s1}, e1, plan, state.WithHolder("operator-v1"), state.WithTTL(ttl), state.WithCheckpoints(d.checkpoints))
	require.Error(t, err, "the first process's run ends with its death")
	diedAt := time.Now()
	assert.Equal(t, []string{"crds v2.0 attempt 1", "operator v2.0 attempt 1"}, first.list(), "what the first process ran")
	require.True(t, patched, "the first process patched the operator's Deployment")
	assert.Equal(t, map[string]int{"example.invalid/hopdag-operator:v1": 1}, atDeath, "Ready operator pods by image when the first process died: the old one only")

	// What the dead process left in the store: the operator component
	// Running, its end not recorded.
	left, err := newRunStore(t, ns).Load(ctx)
	require.NoError(t, err)
	require.NotNil(t, left, "the first process recorded its run")
	phases := func(st *record.Status) map[string]record.Phase {
		out := map[string]record.Phase{}
		for _, c := range st.Hops[0].Components {
			out[c.Name] = c.Phase
		}
		return out
	}
	assert.Equal(t, map[string]record.Phase{"crds": record.Succeeded, "operator": record.Running, "addon": record.Pending}, phases(left), "components' phases as the dead process left them")

	// The next process: a new Store and a new Executor on the same
	// catalog; it waits for the dead one's lease to expire.
	second := &tasks{}
	var operatorDone struct {
		at  time.Time
		dep *appsv1.Deployment
	}
	resumed := runner.RunnerFunc(func(ctx context.Context, tk runner.Task) error {
		second.add(tk)
		err := m.Run(ctx, tk)
		if tk.Component == "operator" && err == nil {
			operatorDone.at = time.Now()
			operatorDone.dep, _ = cs.AppsV1().Deployments(ns).Get(ctx, "hopdag-operator", metav1.GetOptions{})
		}
		return err
	})
	rsw := watchReplicaSets(t, cs, ns)
	e2 := runner.New(components.NewRouter().Register(release.TypeManifest, resumed))
	plan2, err := runner.NewPlan(cat, path.MustParseState("v1.0"), path.MustParseState("v2.0"), runner.ForExecutor(e2))
	require.NoError(t, err)
	s2 := newRunStore(t, ns)
	var st *record.Status
	locked := 0
	for {
		st, err = state.Run(ctx, s2, s2, e2, plan2, state.WithHolder("operator-v2"), state.WithTTL(ttl))
		var le *state.LockedError
		if !errors.As(err, &le) {
			break
		}
		locked++
		require.Less(t, locked, 20, "the dead process's lease never expired: %v", err)
		require.Equal(t, "operator-v1", le.Holder, "the lock's holder")
		time.Sleep(time.Until(le.Expires) + state.Skew(ttl))
	}
	require.NoError(t, err, "the resumed run")
	t.Logf("the next process finished the run %s after the first died (it found the lock held %d time(s) and waited for the lease to expire)", time.Since(diedAt).Round(time.Millisecond), locked)
	assert.Positive(t, locked, "the dead process's lease held the lock until it expired")
	assert.Equal(t, record.Succeeded, st.Phase, "run phase (%s)", st.Message)
	assert.Equal(t, []string{"operator v2.0 attempt 2", "addon v2.0 attempt 1"}, second.list(), "what the next process ran: the interrupted operator again, then addon; not crds")

	// The operator component succeeded only once the handover was done:
	// the new ReplicaSet available, the old one with no pod.
	require.NotNil(t, operatorDone.dep, "the operator's Deployment when its component succeeded")
	dep := operatorDone.dep
	assert.Equal(t, dep.Generation, dep.Status.ObservedGeneration, "observedGeneration when the component succeeded")
	assert.Equal(t, []int32{1, 1, 1}, []int32{dep.Status.Replicas, dep.Status.UpdatedReplicas, dep.Status.AvailableReplicas}, "Deployment replicas, updated, available when the component succeeded")
	rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=hopdag-operator"})
	require.NoError(t, err)
	require.Len(t, rss.Items, 2, "the old and the new ReplicaSet")
	for _, r := range rss.Items {
		got := []int32{*r.Spec.Replicas, r.Status.Replicas, r.Status.AvailableReplicas}
		if r.Spec.Template.Spec.Containers[0].Image == "example.invalid/hopdag-operator:v2" {
			assert.Equal(t, []int32{1, 1, 1}, got, "new ReplicaSet %s: spec replicas, replicas, available", r.Name)
		} else {
			assert.Equal(t, []int32{0, 0, 0}, got, "old ReplicaSet %s: spec replicas, replicas, available", r.Name)
		}
	}
	assert.Equal(t, map[string]int{"example.invalid/hopdag-operator:v2": 1}, liveImages(t, cs, ns, "app=hopdag-operator"), "live operator pods by image")
	assert.True(t, rsw.overlapped(), "the next process never saw the old and the new operator pod at the same time: the rollout was over before it resumed")
	t.Logf("the operator component succeeded %s after the first process died", operatorDone.at.Sub(diedAt).Round(time.Millisecond))
	assert.GreaterOrEqual(t, operatorDone.at.Sub(diedAt), 8*time.Second-time.Second, "the operator component succeeded before its new pod could get Ready")

	// The store holds the run's end, for whichever process reads it next.
	final, err := newRunStore(t, ns).Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, record.Succeeded, final.Phase, "the stored run's phase")
	assert.Equal(t, map[string]record.Phase{"crds": record.Succeeded, "operator": record.Succeeded, "addon": record.Succeeded}, phases(final), "the stored components' phases")
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "addon", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "v2.0", cm.Data["version"], "addon's ConfigMap")
}
