// Package fleet is the controller of UpgradeRollouts: it upgrades the
// ClusterVersions a rollout selects in waves, by setting their
// desiredVersion when kube/rollout's Decide says they may start; each
// ClusterVersion's own reconciler (kube/controller) then runs its route.
//
// The controller keeps nothing of its own: it reads the rollout and the
// ClusterVersions, decides, patches the ClusterVersions that start
// (desiredVersion, acceptRisks, channel, and the annotations Rollout and
// Started that say which rollout started them and when), and writes the
// rollout's status. A restart, or a new leader, decides the same from
// the same objects, so no ClusterVersion starts twice and the
// concurrency holds: a ClusterVersion counts as started once its
// annotations say so, and they are written with its target in one patch.
// The ClusterVersions are read from the manager's cache: a reconcile
// that follows one that started some waits until the cache shows those
// starts (the only thing kept between reconciles, and a new process
// needs none), and the starts of a wave go 16 patches at once. The cost
// of a reconcile is a List from the cache and one status write when the
// status changed; BenchmarkRollout measures a fleet's (see
// docs/fleet.md).
//
// Before it starts anything (and again when its spec changes) a rollout
// keeps a dry run in status.dryRun: each ClusterVersion's route from
// where it is (kube/controller's Route, as its reconciler resolves it),
// and those that cannot go with the resolver's diagnostics. An approval
// of a gated wave is recorded (status.approvals: by, and when the wave
// started). spec.abort with spec.rollback Failed rolls back the
// ClusterVersions whose upgrade failed, through their own runs
// (annotation RollbackBy). Events: DryRunComputed, WaveStarted,
// WaveCompleted, WaveWaitingForApproval, WaveApproved, CanaryFailed,
// BudgetExceeded, RolloutPaused, RolloutResumed, RolloutAborted,
// RollbackStarted.
//
// The dry run's pure parts are exported: Decide (the waves) and RouteOf
// (a ClusterVersion's route, or why it cannot go) read nothing but their
// arguments, so hopdag rollout plan shows the same plan without a cluster.
//
// The ClusterRole kube/config/rbac/role.yaml covers it (generated from
// these markers and kube/controller's):
//
// +kubebuilder:rbac:groups=hopdag.io,resources=upgraderollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=hopdag.io,resources=upgraderollouts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
package fleet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/internal/english"
	"github.com/hopdag/hopdag/kube/internal/eventlimit"
	"github.com/hopdag/hopdag/kube/internal/windows"
	"github.com/hopdag/hopdag/kube/rollout"
)

// The annotations a rollout puts on the ClusterVersions it starts.
const (
	// Rollout names the UpgradeRollout that set the ClusterVersion's
	// desiredVersion (v1alpha1.RolloutAnnotation).
	Rollout = v1alpha1.RolloutAnnotation
	// Started is when it did (RFC 3339).
	Started = "hopdag.io/rollout-started"
)

// Reconciler runs UpgradeRollouts.
type Reconciler struct {
	client    client.Client
	reader    client.Reader
	cached    bool // client reads a cache, reader past it (SetupWithManager)
	recorder  events.EventRecorder
	now       func() time.Time
	logger    *slog.Logger
	manifests fs.FS // WithManifests
	expect    expectations
	interval  time.Duration // WithStatusInterval
	// written is when this process last wrote each rollout's status
	// (holdProgress), seen the resourceVersion it last read past the
	// cache or wrote (readRollout): caches, which a new process starts
	// empty.
	mu      sync.Mutex
	written map[types.NamespacedName]time.Time
	seen    map[types.NamespacedName]string
}

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithClock sets the clock the decisions read (windows, soak,
// deadlines): tests inject one.
func WithClock(now func() time.Time) Option { return func(r *Reconciler) { r.now = now } }

// WithManifests gives the files the catalog's ComponentVersions name
// (see catalog.WithManifests), for the dry run to load the catalog as the
// ClusterVersions' reconciler does.
func WithManifests(fsys fs.FS) Option { return func(r *Reconciler) { r.manifests = fsys } }

// WithStatusInterval sets how often, at most, a rollout's status is
// written for progress alone (default 1s): clusters that start or finish
// within a wave, the counts, the Progressing message. A change of phase
// or wave, a failure, an approval, a dry run, or anything announced by
// an Event is written at once. The status lists every cluster of the
// fleet (some 100 bytes each), so a fleet of thousands, whose clusters
// finish many times a second, would otherwise write it as often.
func WithStatusInterval(d time.Duration) Option { return func(r *Reconciler) { r.interval = d } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(r *Reconciler) { r.logger = l } }

// New returns a Reconciler that reads and writes through c.
func New(c client.Client, opts ...Option) *Reconciler {
	r := &Reconciler{client: c, reader: c, now: time.Now, logger: slog.Default(), interval: time.Second,
		written: map[types.NamespacedName]time.Time{}, seen: map[types.NamespacedName]string{}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// SetupWithManager registers the reconciler with mgr: it reconciles
// UpgradeRollouts, and each of them again when a ClusterVersion of its
// namespace changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.recorder = eventlimit.New(mgr.GetEventRecorder("hopdag-upgraderollout"))
	// The rollout is read past the cache unless the cache shows the
	// version last read or written (readRollout); the ClusterVersions
	// from the cache, once it shows this process's starts
	// (expectations).
	r.reader, r.cached = mgr.GetAPIReader(), true
	// A ClusterVersion's change concerns the rollouts of its namespace
	// and those that select namespaces; a namespace's (its labels), the
	// latter.
	concerned := func(namespace string) handler.MapFunc {
		return func(ctx context.Context, o client.Object) []ctrl.Request {
			// Not copied: only the names are read, and a rollout's status
			// lists its whole fleet (a copy for each ClusterVersion event
			// of a fleet of 10,000 is some 2 MB).
			var l v1alpha1.UpgradeRolloutList
			if err := r.client.List(ctx, &l, client.UnsafeDisableDeepCopy); err != nil {
				return nil
			}
			out := make([]ctrl.Request, 0, len(l.Items))
			for _, ur := range l.Items {
				if ur.Spec.NamespaceSelector != nil || ur.Namespace == namespace {
					out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ur.Namespace, Name: ur.Name}})
				}
			}
			return out
		}
	}
	return ctrl.NewControllerManagedBy(mgr).Named("upgraderollout").
		For(&v1alpha1.UpgradeRollout{}).
		Watches(&v1alpha1.ClusterVersion{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return concerned(o.GetNamespace())(ctx, o)
		})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(concerned(""))).
		Complete(r)
}

// Reconcile decides one rollout's next step and takes it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ur v1alpha1.UpgradeRollout
	if err := r.readRollout(ctx, req.NamespacedName, &ur); err != nil {
		if apierrors.IsNotFound(err) {
			r.mu.Lock()
			delete(r.written, req.NamespacedName)
			delete(r.seen, req.NamespacedName)
			r.mu.Unlock()
			r.expect.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	st := ur.Status.DeepCopy()
	st.ObservedGeneration = ur.Generation
	spec, err := specOf(&ur)
	if err != nil {
		st.Phase = string(rollout.PhaseFailed)
		setCondition(st, &ur, "Failed", metav1.ConditionTrue, "InvalidSpec", fmt.Sprintf("UpgradeRollout %s/%s: %v", ur.Namespace, ur.Name, err))
		return ctrl.Result{}, r.writeStatus(ctx, &ur, st)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ur.Spec.Selector)
	if err != nil {
		st.Phase = string(rollout.PhaseFailed)
		setCondition(st, &ur, "Failed", metav1.ConditionTrue, "InvalidSpec", fmt.Sprintf("UpgradeRollout %s/%s: spec.selector: %v", ur.Namespace, ur.Name, err))
		return ctrl.Result{}, r.writeStatus(ctx, &ur, st)
	}
	if ns := ur.Spec.NamespaceSelector; ns != nil {
		if _, err := metav1.LabelSelectorAsSelector(ns); err != nil {
			st.Phase = string(rollout.PhaseFailed)
			setCondition(st, &ur, "Failed", metav1.ConditionTrue, "InvalidSpec", fmt.Sprintf("UpgradeRollout %s/%s: spec.namespaceSelector: %v", ur.Namespace, ur.Name, err))
			return ctrl.Result{}, r.writeStatus(ctx, &ur, st)
		}
	}
	cvs, err := r.fleetOf(ctx, &ur, sel)
	if err != nil {
		return ctrl.Result{}, err
	}
	caught, expired := r.expect.caughtUp(req.NamespacedName, cvs.Items, func(cv *v1alpha1.ClusterVersion) string { return MemberKey(&ur, cv) })
	if !caught {
		return ctrl.Result{RequeueAfter: 50 * time.Millisecond}, nil // the cache does not show this process's last starts yet
	}
	if len(expired) > 0 {
		r.logger.Warn("fleet: the cache still does not show this controller's patches; deciding on it as it is",
			"upgraderollout", req.String(), "clusterversions", expired, "after", expectTimeout)
	}
	now := r.now()
	members := make([]rollout.Member, 0, len(cvs.Items))
	byName := map[string]*v1alpha1.ClusterVersion{}
	for i := range cvs.Items {
		cv := &cvs.Items[i]
		byName[MemberKey(&ur, cv)] = cv
		members = append(members, memberOf(&ur, cv))
	}
	d := rollout.Decide(spec, members, now)
	if st.DryRun == nil || st.DryRun.ObservedGeneration != ur.Generation {
		// Before anything starts (and again when the spec changes): the
		// whole fleet's plan, kept in the status.
		dr, err := r.dryRun(ctx, &ur, cvs.Items, d, now)
		if err != nil {
			return ctrl.Result{}, err
		}
		st.DryRun = dr
		r.event(&ur, "Normal", "DryRunComputed", dryRunNote(dr, len(members), len(d.Waves)))
	}
	if err := r.startAll(ctx, req.NamespacedName, &ur, d.Start, byName, now); err != nil {
		return ctrl.Result{}, err
	}
	limit := spec.Concurrency(len(members))
	waiting, holding, err := r.rollBack(ctx, req.NamespacedName, &ur, cvs.Items, d, limit)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(waiting) > 0 {
		d.Message += waitingNote(waiting, holding, limit, spec)
		wait := map[string]bool{}
		for _, k := range waiting {
			wait[k] = true
		}
		for i := range d.Members {
			if wait[d.Members[i].Key] {
				d.Members[i].Reason = "WaitingToRollBack"
			}
		}
	}
	told := r.announce(&ur, st, d)
	approvals := len(st.Approvals)
	r.recordApprovals(&ur, st, d, now)
	told = told || len(st.Approvals) > approvals
	fill(st, &ur, d, byName)
	var res ctrl.Result
	if !d.Next.IsZero() {
		res.RequeueAfter = max(d.Next.Sub(now), time.Second)
	}
	if wait := r.holdProgress(req.NamespacedName, &ur.Status, st, told); wait > 0 {
		// Written by the reconcile after wait, if none comes before.
		if res.RequeueAfter == 0 || wait < res.RequeueAfter {
			res.RequeueAfter = wait
		}
		return res, nil
	}
	if err := r.writeStatus(ctx, &ur, st); err != nil {
		return ctrl.Result{}, err
	}
	return res, nil
}

// holdProgress says how long the write of st over was waits, or zero
// to write it now: a change of progress alone (progressOnly) waits until
// WithStatusInterval has passed since this process last wrote key's
// status; a reconcile that told something in an Event (told) writes at
// once, for the next one to see that it was told (announce compares
// with the status as written).
func (r *Reconciler) holdProgress(key types.NamespacedName, was, st *v1alpha1.UpgradeRolloutStatus, told bool) time.Duration {
	if told || r.interval <= 0 || !progressOnly(was, st) {
		return 0
	}
	r.mu.Lock()
	last := r.written[key]
	r.mu.Unlock()
	return r.interval - time.Since(last) // the API server's time, not the decisions' clock (WithClock)
}

// progressOnly reports whether st differs from was in progress alone:
// the clusters' states, the counts but the failed, the next decision,
// and the conditions' messages.
func progressOnly(was, st *v1alpha1.UpgradeRolloutStatus) bool {
	if st.Counts.Failed != was.Counts.Failed {
		return false
	}
	c := *st // a shallow copy: the waves are not changed, only put aside
	c.Counts, c.Waves, c.NextDecision = was.Counts, was.Waves, was.NextDecision
	c.Conditions = slices.Clone(st.Conditions)
	for i := range c.Conditions {
		n := &c.Conditions[i]
		if o := meta.FindStatusCondition(was.Conditions, n.Type); o != nil && o.Status == n.Status && o.Reason == n.Reason {
			n.Message = o.Message
		}
	}
	return equality.Semantic.DeepEqual(was, &c)
}

// readRollout reads the rollout key into ur: from the cache when the
// cache shows the resourceVersion this process last read past it or
// wrote (the same object, so the status announce compares with is the
// one written last), else past the cache. Its status lists every
// cluster of the fleet: read past the cache at every reconcile, that is
// 1 MB at 10,000 clusters for the API server to send and this process
// to decode, several times a second.
func (r *Reconciler) readRollout(ctx context.Context, key types.NamespacedName, ur *v1alpha1.UpgradeRollout) error {
	r.mu.Lock()
	rv := r.seen[key]
	r.mu.Unlock()
	if rv != "" && r.cached {
		if err := r.client.Get(ctx, key, ur); err == nil && ur.ResourceVersion == rv {
			return nil
		}
	}
	if err := r.reader.Get(ctx, key, ur); err != nil {
		return err
	}
	r.mu.Lock()
	r.seen[key] = ur.ResourceVersion
	r.mu.Unlock()
	return nil
}

// startParallel is how many ClusterVersions a reconcile patches at once:
// a wave of a hundred starts in the time of a few patches, not a hundred.
const startParallel = 16

// startAll starts the ClusterVersions of names, startParallel at once,
// and records the starts that went through as expected of the cache
// (expectations), those before an error included. The errors, if any,
// are joined, in name order.
func (r *Reconciler) startAll(ctx context.Context, key types.NamespacedName, ur *v1alpha1.UpgradeRollout, names []string, byName map[string]*v1alpha1.ClusterVersion, now time.Time) error {
	var (
		mu      sync.Mutex
		started = map[string]string{}
		errs    = make([]error, len(names))
		wg      sync.WaitGroup
		slots   = make(chan struct{}, startParallel)
	)
	for i, name := range names {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if errs[i] = r.start(ctx, ur, byName[name], now); errs[i] == nil {
				mu.Lock()
				started[name] = now.UTC().Format(time.RFC3339)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	r.expect.expect(key, Started, started)
	return errors.Join(errs...)
}

// start sets cv's target to the rollout's, with the annotations that say
// so, in one patch conditioned on cv as read.
func (r *Reconciler) start(ctx context.Context, ur *v1alpha1.UpgradeRollout, cv *v1alpha1.ClusterVersion, now time.Time) error {
	cv = cv.DeepCopy() // the cache's
	orig := cv.DeepCopy()
	cv.Spec = targetSpec(ur, cv)
	if cv.Annotations == nil {
		cv.Annotations = map[string]string{}
	}
	cv.Annotations[Rollout] = refOf(ur, cv)
	cv.Annotations[Started] = now.UTC().Format(time.RFC3339)
	if err := r.client.Patch(ctx, cv, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("fleet: UpgradeRollout %s/%s: starting ClusterVersion %s (desiredVersion %s): %w", ur.Namespace, ur.Name, MemberKey(ur, cv), ur.Spec.DesiredVersion, err)
	}
	r.logger.Info("fleet: started", "upgraderollout", ur.Namespace+"/"+ur.Name, "clusterversion", cv.Namespace+"/"+cv.Name, "to", ur.Spec.DesiredVersion)
	return nil
}

// memberOf is cv as a member of ur's fleet.
func memberOf(ur *v1alpha1.UpgradeRollout, cv *v1alpha1.ClusterVersion) rollout.Member {
	target := string(ur.Spec.DesiredVersion)
	m := rollout.Member{Key: MemberKey(ur, cv), Labels: cv.Labels}
	// Its own windows: it starts only while they are open too. Ones that
	// do not compile leave it to its reconciler, which refuses them and
	// says so (InvalidMaintenanceWindow).
	m.Windows, _ = windows.Calendar(cv.Spec.MaintenanceWindows)
	if cv.Annotations[Rollout] == refOf(ur, cv) {
		if t, err := time.Parse(time.RFC3339, cv.Annotations[Started]); err == nil {
			m.Started = t
		}
	}
	st := &cv.Status
	aimed := string(cv.Spec.DesiredVersion) == target
	m.AtTarget = aimed && st.CurrentVersion == target && st.Phase == v1alpha1.PhaseIdle && st.ObservedGeneration >= cv.Generation
	if m.AtTarget {
		m.Since = sinceAt(st, target)
	}
	switch st.Phase {
	case v1alpha1.PhaseFailed, v1alpha1.PhaseRolledBack, v1alpha1.PhaseAbandoned:
		m.Failed = aimed && !m.Started.IsZero()
		m.Why = "Upgrade" + string(st.Phase)
	case v1alpha1.PhaseUpgrading, v1alpha1.PhasePaused, v1alpha1.PhaseWaitingForApproval:
		m.Running = true
	}
	if cv.Annotations[RollbackBy] == refOf(ur, cv) && !m.Started.IsZero() {
		// Asked to roll back: RollingBack until its run has ended. One
		// whose upgrade had failed stays failed; the others are rolled
		// back on request, which is not a failure.
		m.Why = "RollingBack"
		if st.Phase == v1alpha1.PhaseRolledBack {
			m.Why = "UpgradeRolledBack"
		}
		m.Failed = cv.Annotations[RollbackOfFailed] == "true"
		m.RolledBack = !m.Failed
		// Asked, and its reconciler has not yet seen the request: its
		// rollback is about to run, and counts against maxConcurrency.
		m.Running = m.Running || st.ObservedGeneration < cv.Generation
	}
	return m
}

// MemberKey names cv in ur's fleet, as the rollout's status, dry run,
// Events and spec.canaries.names do: its name in ur's namespace,
// NAMESPACE/NAME in another (spec.namespaceSelector). One without a
// namespace is taken to be in ur's.
func MemberKey(ur *v1alpha1.UpgradeRollout, cv *v1alpha1.ClusterVersion) string {
	return qualified(ur, cv, cv.Namespace, cv.Name)
}

// refOf is how cv's annotations (Rollout, RollbackBy) name ur: its name
// in ur's namespace, NAMESPACE/NAME in another (as
// v1alpha1.RolloutAnnotation reads).
func refOf(ur *v1alpha1.UpgradeRollout, cv *v1alpha1.ClusterVersion) string {
	return qualified(ur, cv, ur.Namespace, ur.Name)
}

// qualified is name, of namespace, as ur and cv name each other: bare
// when they share a namespace (or cv has none), NAMESPACE/NAME when not.
func qualified(ur *v1alpha1.UpgradeRollout, cv *v1alpha1.ClusterVersion, namespace, name string) string {
	if cv.Namespace == ur.Namespace || cv.Namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// fleetOf lists the ClusterVersions ur selects (sel, its spec.selector):
// in its namespace, or in the namespaces its spec.namespaceSelector
// matches. From the cache, not copied: nothing changes them (start and
// rollBack patch copies).
func (r *Reconciler) fleetOf(ctx context.Context, ur *v1alpha1.UpgradeRollout, sel labels.Selector) (*v1alpha1.ClusterVersionList, error) {
	var cvs v1alpha1.ClusterVersionList
	if ur.Spec.NamespaceSelector == nil {
		if err := r.client.List(ctx, &cvs, client.InNamespace(ur.Namespace), client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("fleet: listing the ClusterVersions of UpgradeRollout %s/%s: %w", ur.Namespace, ur.Name, err)
		}
		return &cvs, nil
	}
	nsSel, err := metav1.LabelSelectorAsSelector(ur.Spec.NamespaceSelector)
	if err != nil { // specOf refused it before
		return nil, fmt.Errorf("fleet: UpgradeRollout %s/%s: spec.namespaceSelector: %w", ur.Namespace, ur.Name, err)
	}
	var nss corev1.NamespaceList
	if err := r.client.List(ctx, &nss, client.MatchingLabelsSelector{Selector: nsSel}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("fleet: listing the namespaces of UpgradeRollout %s/%s (spec.namespaceSelector): %w", ur.Namespace, ur.Name, err)
	}
	in := map[string]bool{}
	for _, ns := range nss.Items {
		in[ns.Name] = true
	}
	if err := r.client.List(ctx, &cvs, client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("fleet: listing the ClusterVersions of UpgradeRollout %s/%s: %w", ur.Namespace, ur.Name, err)
	}
	cvs.Items = slices.DeleteFunc(cvs.Items, func(cv v1alpha1.ClusterVersion) bool { return !in[cv.Namespace] })
	return &cvs, nil
}

// sinceAt is when cv's status reached target: its history's completion,
// else its Available condition's last change.
func sinceAt(st *v1alpha1.ClusterVersionStatus, target string) time.Time {
	if len(st.History) > 0 && st.History[0].To == target && st.History[0].CompletionTime != nil {
		return st.History[0].CompletionTime.Time
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionAvailable); c != nil {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// specOf reads ur's spec as Decide takes it.
func specOf(ur *v1alpha1.UpgradeRollout) (rollout.Spec, error) {
	s := ur.Spec
	var out rollout.Spec
	var err error
	if s.Canaries != nil {
		out.Canaries, out.CanaryCount = s.Canaries.Names, s.Canaries.Count
	}
	if s.Waves != nil {
		out.WaveLabel, out.WaveOrder = s.Waves.Label, s.Waves.Order
		if out.WaveSize, err = amount("spec.waves.size", s.Waves.Size); err != nil {
			return out, err
		}
	}
	if out.MaxConcurrency, err = amount("spec.maxConcurrency", s.MaxConcurrency); err != nil {
		return out, err
	}
	if out.MaxFailures, err = amount("spec.maxFailures", s.MaxFailures); err != nil {
		return out, err
	}
	if s.MinSuccessTime != nil {
		out.MinSuccessTime = s.MinSuccessTime.Duration
	}
	if s.ProgressDeadline != nil {
		out.ProgressDeadline = s.ProgressDeadline.Duration
	}
	out.Gates = s.Gates
	for _, a := range s.Approvals {
		out.Approved = append(out.Approved, a.Wave)
	}
	out.Paused, out.Aborted = s.Paused, s.Abort
	if out.Windows, err = windows.Calendar(s.MaintenanceWindows); err != nil {
		return out, fmt.Errorf("spec.maintenanceWindows: %w", err)
	}
	return out, nil
}

// amount reads an IntOrString count or percentage.
func amount(field string, v *intstr.IntOrString) (rollout.Amount, error) {
	if v == nil {
		return rollout.Amount{}, nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return rollout.Amount{}, fmt.Errorf("%s: %d is negative", field, v.IntVal)
		}
		return rollout.Amount{N: int(v.IntVal)}, nil
	}
	a, err := rollout.ParseAmount(v.StrVal)
	if err != nil {
		return a, fmt.Errorf("%s: %w", field, err)
	}
	return a, nil
}

// fill writes d into st; each ClusterVersion's Failing message (its
// cluster unreachable, its upgrade failed) goes with its state.
func fill(st *v1alpha1.UpgradeRolloutStatus, ur *v1alpha1.UpgradeRollout, d rollout.Decision, cvs map[string]*v1alpha1.ClusterVersion) {
	st.Phase = string(d.Phase)
	st.Wave = ""
	if d.Wave < len(d.Waves) {
		st.Wave = d.Waves[d.Wave].Name
	}
	started := map[string]bool{}
	for _, k := range d.Start {
		started[k] = true
	}
	st.Counts = v1alpha1.RolloutCounts{Pending: d.Counts.Pending - len(d.Start), Upgrading: d.Counts.Upgrading + len(d.Start), Soaking: d.Counts.Soaking, Succeeded: d.Counts.Succeeded, Failed: d.Counts.Failed, RolledBack: d.Counts.RolledBack}
	st.FailureBudget = d.Budget
	st.Waves = make([]v1alpha1.WaveStatus, len(d.Waves))
	for i, w := range d.Waves {
		st.Waves[i].Name = w.Name
		st.Waves[i].Clusters = []v1alpha1.ClusterStatus{}
	}
	for _, m := range d.Members {
		cs := v1alpha1.ClusterStatus{Name: m.Key, State: string(m.State), Reason: m.Reason}
		if started[m.Key] {
			cs.State = string(rollout.Upgrading)
		}
		if f := meta.FindStatusCondition(cvs[m.Key].Status.Conditions, v1alpha1.ConditionFailing); f != nil && f.Status == metav1.ConditionTrue && m.State != rollout.Pending && m.State != rollout.Succeeded {
			cs.Message = eventlimit.Cut(f.Reason+": "+f.Message, 512)
			if cs.Reason == "" {
				cs.Reason = f.Reason // upgrading, but failing: ClusterUnreachable
			}
		}
		if !m.NextWindow.IsZero() {
			cs.NextWindow = &metav1.Time{Time: m.NextWindow}
		}
		st.Waves[m.Wave].Clusters = append(st.Waves[m.Wave].Clusters, cs)
	}
	st.NextDecision = nil
	if !d.Next.IsZero() {
		st.NextDecision = &metav1.Time{Time: d.Next}
	}
	progressing, completed, failed := metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionFalse
	switch d.Phase {
	case rollout.Progressing:
		progressing = metav1.ConditionTrue
	case rollout.Completed:
		completed = metav1.ConditionTrue
	case rollout.PhaseFailed:
		failed = metav1.ConditionTrue
	}
	setCondition(st, ur, "Progressing", progressing, d.Reason, d.Message)
	setCondition(st, ur, "Completed", completed, d.Reason, d.Message)
	setCondition(st, ur, "Failed", failed, d.Reason, d.Message)
}

// announce sends the Events of what changed since the status st (as
// last written): a wave started or completed, a canary failed, the
// budget exceeded, the rollout paused, resumed, aborted or waiting. It
// reports whether it had anything to tell (also without a recorder).
func (r *Reconciler) announce(ur *v1alpha1.UpgradeRollout, st *v1alpha1.UpgradeRolloutStatus, d rollout.Decision) bool {
	before := map[string]string{}
	for _, w := range st.Waves {
		for _, c := range w.Clusters {
			before[c.Name] = c.State
		}
	}
	told := r.announceWaves(ur, before, d)
	for _, m := range d.Members {
		if m.State == rollout.Failed && before[m.Key] != string(rollout.Failed) && m.Wave == 0 && len(d.Waves) > 0 && d.Waves[0].Name == "canary" {
			r.eventf(ur, m.Key, "Warning", "CanaryFailed", "Rollout", "canary %s failed (%s)", m.Key, m.Reason)
			told = true
		}
	}
	if string(d.Phase) != st.Phase {
		r.announcePhase(ur, st.Phase, d)
		told = true
	}
	return told
}

// announceWaves sends WaveStarted and WaveCompleted for the waves that
// started or completed since the cluster states before, and reports
// whether it sent any.
func (r *Reconciler) announceWaves(ur *v1alpha1.UpgradeRollout, before map[string]string, d rollout.Decision) bool {
	told := false
	waveDone := func(i int) bool {
		for _, m := range d.Members {
			if m.Wave == i && !m.State.Settled() {
				return false
			}
		}
		return true
	}
	for i, w := range d.Waves {
		wasStarted, wasDone := false, true
		for _, k := range w.Members {
			if s := before[k]; s != "" && s != string(rollout.Pending) {
				wasStarted = true
			}
			if s := before[k]; !rollout.State(s).Settled() {
				wasDone = false
			}
		}
		if !wasStarted && slices.ContainsFunc(d.Start, func(k string) bool { return slices.Contains(w.Members, k) }) {
			r.eventf(ur, "", "Normal", "WaveStarted", "Wave "+w.Name, "wave %s (%s) started: %s", w.Name, english.Count(len(w.Members), "cluster"), joinMax(d.Start, 10))
			told = true
		}
		if !wasDone && waveDone(i) {
			r.eventf(ur, "", "Normal", "WaveCompleted", "Wave "+w.Name, "wave %s completed", w.Name)
			told = true
		}
	}
	return told
}

// announcePhase sends the Event of the rollout's move from phase was to
// d's.
func (r *Reconciler) announcePhase(ur *v1alpha1.UpgradeRollout, was string, d rollout.Decision) {
	if r.recorder == nil {
		return
	}
	switch d.Phase {
	case rollout.PhaseFailed:
		r.recorder.Eventf(ur, nil, "Warning", d.Reason, "Rollout", "%s", d.Message)
	case rollout.PhasePaused:
		r.recorder.Eventf(ur, nil, "Normal", "RolloutPaused", "Pause", "%s", d.Message)
	case rollout.PhaseAborted:
		r.recorder.Eventf(ur, nil, "Warning", "RolloutAborted", "Abort", "%s", d.Message)
	case rollout.WaitingForApproval:
		r.recorder.Eventf(ur, nil, "Normal", "WaveWaitingForApproval", "Approve", "%s", d.Message)
	case rollout.Progressing:
		if was == string(rollout.PhasePaused) {
			r.recorder.Eventf(ur, nil, "Normal", "RolloutResumed", "Resume", "%s", d.Message)
		}
	}
}

// event records an Event about ur.
func (r *Reconciler) event(ur *v1alpha1.UpgradeRollout, typ, reason, note string) {
	r.eventf(ur, "", typ, reason, "Rollout", "%s", note)
}

// eventf records an Event about ur, when the reconciler has a recorder.
// Events of one reason, action and related object are one series (the
// events recorder counts repeats and keeps the first note): an Event
// about a wave has the wave in its action, one about a cluster has the
// cluster's ClusterVersion (named by cluster, in ur's namespace) as its
// related object, so that each keeps its own note.
func (r *Reconciler) eventf(ur *v1alpha1.UpgradeRollout, cluster, typ, reason, action, format string, args ...any) {
	if r.recorder == nil {
		return
	}
	var related runtime.Object
	if cluster != "" {
		ns, name, ok := strings.Cut(cluster, "/")
		if !ok {
			ns, name = ur.Namespace, cluster
		}
		related = &v1alpha1.ClusterVersion{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ClusterVersion"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	r.recorder.Eventf(ur, related, typ, reason, action, format, args...)
}

func joinMax(ks []string, n int) string {
	if len(ks) <= n {
		return fmt.Sprint(ks)
	}
	return fmt.Sprintf("%v and %d more", ks[:n], len(ks)-n)
}

func setCondition(st *v1alpha1.UpgradeRolloutStatus, ur *v1alpha1.UpgradeRollout, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: ur.Generation})
}

func (r *Reconciler) writeStatus(ctx context.Context, ur *v1alpha1.UpgradeRollout, st *v1alpha1.UpgradeRolloutStatus) error {
	if equality.Semantic.DeepEqual(&ur.Status, st) {
		return nil // nothing changed: no write, no watch event
	}
	obj := ur.DeepCopy()
	obj.Status = *st
	if err := r.client.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("fleet: writing the status of UpgradeRollout %s/%s: %w", ur.Namespace, ur.Name, err)
	}
	r.mu.Lock()
	r.written[client.ObjectKeyFromObject(ur)] = time.Now()
	r.seen[client.ObjectKeyFromObject(ur)] = obj.ResourceVersion
	r.mu.Unlock()
	return nil
}
