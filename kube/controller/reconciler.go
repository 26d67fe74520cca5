package controller

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/catalog"
	"github.com/hopdag/hopdag/kube/internal/eventlimit"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
)

// Reconciler reconciles ClusterVersions. Build it with New and register it
// with SetupWithManager.
type Reconciler struct {
	now       func() time.Time // WithClock
	client    client.Client
	reader    client.Reader // reads ClusterVersions uncached
	runner    runner.Runner
	runnerFor func(types.NamespacedName, *rest.Config) (runner.Runner, error) // WithRunnerFor
	// clusterCheck: how often a run in flight checks that the cluster of
	// spec.clusterRef answers (WithClusterCheckInterval).
	clusterCheck time.Duration
	stores       StoreFunc
	recorder     recorder.EventRecorder
	execOpts     []runner.Option
	manifests    fs.FS
	catalogs     *catalog.Cache // built in New, with manifests
	updates      updatesCache
	interval     time.Duration
	workers      int // WithMaxConcurrentReconciles
	holder       string
	ttl          time.Duration
	logger       *slog.Logger

	mu   sync.Mutex
	runs map[types.NamespacedName]*run // runs in flight in this process
	// runners are the ClusterVersions' conns (connect), by
	// ClusterVersion.
	runners map[types.NamespacedName]conn
	// written is the resourceVersion of each ClusterVersion as this
	// process last wrote it (caughtUp).
	written map[types.NamespacedName]string
	// conflicts counts each ClusterVersion's status writes in a row that
	// met a newer object (stale), until one goes through (wrote).
	conflicts map[types.NamespacedName]int
	// backoff spaces the wakes of a run whose first status write failed
	// (announce), exponentially as controller-runtime spaces a failed
	// Reconcile's requeues (an event in between reconciles at once).
	backoff workqueue.TypedRateLimiter[types.NamespacedName]
	// wake re-queues a ClusterVersion when its run ends.
	wake   chan event.GenericEvent
	writes atomic.Int64
	// base is the context runs start under: the manager's, once it has
	// started this reconciler's runnable (it is cancelled when the manager
	// stops or loses the leader election). It is kept because runs outlive
	// the Reconcile call that starts them.
	base   context.Context
	runsWG sync.WaitGroup
	// started is closed once base is set (SetupWithManager's runnable
	// started); nil without SetupWithManager.
	started chan struct{}
}

// New returns a reconciler that runs components through rn (a
// components.Router; nil with WithRunnerFor, which gives each
// ClusterVersion its own) and keeps each ClusterVersion's runs in the
// store and lock stores gives. The client must read the catalog kinds and write
// ClusterVersion status; the manager's client does.
func New(c client.Client, rn runner.Runner, stores StoreFunc, opts ...Option) *Reconciler {
	host, _ := os.Hostname()
	r := &Reconciler{
		client: c, reader: c, runner: rn, stores: stores, now: time.Now,
		interval: 2 * time.Second, clusterCheck: 30 * time.Second,
		holder:    fmt.Sprintf("%s/%d", host, os.Getpid()),
		ttl:       15 * time.Second,
		logger:    slog.New(slog.DiscardHandler),
		runs:      map[types.NamespacedName]*run{},
		runners:   map[types.NamespacedName]conn{},
		written:   map[types.NamespacedName]string{},
		conflicts: map[types.NamespacedName]int{},
		backoff:   workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](5*time.Millisecond, 1000*time.Second),
		wake:      make(chan event.GenericEvent, 64),
	}
	for _, o := range opts {
		o(r)
	}
	r.catalogs = catalog.NewCache(catalog.WithManifests(r.manifests))
	return r
}

// forget drops what the reconciler keeps of cv, deleted: the runner
// WithRunnerFor gave it, so that an operator whose ClusterVersions come
// and go does not keep them all (one created again under the name gets a
// new one either way: connect compares UIDs), and its last write's
// resourceVersion (caughtUp).
func (r *Reconciler) forget(cv types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.runners, cv)
	delete(r.written, cv)
	delete(r.conflicts, cv)
	r.backoff.Forget(cv)
}

// wrote records cv's resourceVersion as this process wrote it (the object
// the API server returned), unless it recorded a later one (two writes of
// a run and a reconcile may return in either order).
func (r *Reconciler) wrote(cv *v1alpha1.ClusterVersion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := keyOf(cv)
	delete(r.conflicts, key)
	if last, ok := r.written[key]; ok {
		if c, err := resourceversion.CompareResourceVersion(cv.ResourceVersion, last); err == nil && c < 0 {
			return
		}
	}
	r.written[key] = cv.ResourceVersion
}

// stale forgets cv's last write: another writer wrote since, and the
// next decision reads past the cache (caughtUp). It counts the conflict
// (conflictLevel).
func (r *Reconciler) stale(cv types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.written, cv)
	r.conflicts[cv]++
}

// conflictsToWarn is how many status writes of one ClusterVersion in a
// row may meet a newer object before it is logged as a warning: one is
// the ordinary race of two writers (a run and a reconcile, a client's
// spec change), decided again at once.
const conflictsToWarn = 5

// conflictLevel is the level at which to log a status write of cv that
// met a newer object: Debug, unless conflictsToWarn of them came in a
// row.
func (r *Reconciler) conflictLevel(cv types.NamespacedName) slog.Level {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conflicts[cv] >= conflictsToWarn {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// caughtUp reports whether cv, read from the cache, shows this process's
// last write of it or a later state: its resourceVersion is not older
// (resource versions of one resource compare as integers, as
// k8s.io/apimachinery/pkg/util/resourceversion says; one that does not
// parse is not trusted). A ClusterVersion this process has not written
// since it started (a new leader's first look) is not trusted either.
func (r *Reconciler) caughtUp(cv *v1alpha1.ClusterVersion) bool {
	r.mu.Lock()
	last, ok := r.written[keyOf(cv)]
	r.mu.Unlock()
	if !ok {
		return false
	}
	c, err := resourceversion.CompareResourceVersion(cv.ResourceVersion, last)
	return err == nil && c >= 0
}

// StatusWrites is the number of ClusterVersion status writes this
// reconciler made.
func (r *Reconciler) StatusWrites() int64 { return r.writes.Load() }

// SetupWithManager registers the reconciler: it watches ClusterVersions and
// the catalog kinds (a change to any catalog object re-queues every
// ClusterVersion of its namespace), and records Events as
// "hopdag-clusterversion".
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.recorder = eventlimit.New(mgr.GetEventRecorder("hopdag-clusterversion"))
	// The ClusterVersion is read past the cache unless the cache shows
	// this process's last write of it (caughtUp): a decision taken on a
	// status the cache has not caught up with (a run that just ended)
	// would start what is done.
	r.reader = mgr.GetAPIReader()
	// Runs start under the context of a runnable that, like the
	// controller, runs only on the leader; when it stops, runs stop at once
	// (the store's record lets the next leader resume) and Start waits for
	// them.
	r.started = make(chan struct{})
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		r.mu.Lock()
		r.base = ctx
		r.mu.Unlock()
		close(r.started)
		<-ctx.Done()
		r.runsWG.Wait()
		return nil
	})); err != nil {
		return err
	}
	byNamespace := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
		var l v1alpha1.ClusterVersionList
		if err := r.client.List(ctx, &l, client.InNamespace(o.GetNamespace())); err != nil {
			r.logger.Warn("controller: listing ClusterVersions for a catalog change", "namespace", o.GetNamespace(), "error", err)
			return nil
		}
		out := make([]ctrl.Request, 0, len(l.Items))
		for _, cv := range l.Items {
			out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: cv.Namespace, Name: cv.Name}})
		}
		return out
	})
	workers := r.workers
	if workers <= 0 && mgr.GetControllerOptions().MaxConcurrentReconciles <= 0 {
		workers = DefaultMaxConcurrentReconciles
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("clusterversion").
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: workers}).
		For(&v1alpha1.ClusterVersion{}).
		Watches(&v1alpha1.Release{}, byNamespace).
		Watches(&v1alpha1.ComponentVersion{}, byNamespace).
		Watches(&v1alpha1.UpgradePath{}, byNamespace).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// Reconcile observes one ClusterVersion and does one step (see the package
// documentation).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.started != nil {
		// The manager starts the controller and the runnable that gives
		// runs their context at once, in no set order: a decision taken
		// before the runnable started would write Upgrading for a run
		// that start cannot launch (and the run resumed later would not
		// be announced).
		select {
		case <-r.started:
		case <-ctx.Done():
			return ctrl.Result{}, ctx.Err()
		}
	}
	// Whether a run is in flight is looked at before the read: a run that
	// ends has written its last status first, so a read after this look
	// sees it (a decision on a read taken before would write over it).
	ru := r.active(req.NamespacedName)
	if ru != nil {
		// A run whose first status write is on its way (announce): this
		// reconcile acts on the run once it has started, or, when that
		// write failed, on no run.
		select {
		case <-ru.announced:
		case <-ctx.Done():
			return ctrl.Result{}, ctx.Err()
		}
		if r.active(req.NamespacedName) != ru {
			ru = nil
		}
	}
	// A decision is taken on the cache's copy when it shows this process's
	// last write (caughtUp), and on a read past the cache otherwise (see
	// SetupWithManager): a run's last write, not yet in the cache, must be
	// seen, or the decision would start what is done. A run in
	// flight takes only the spec from this read, and what it keeps up in
	// the status (observedGeneration, the updates, the cluster's answer)
	// it reads again itself before it writes: the cache's copy, as new as
	// the event that queued this reconcile, serves, and spares the API
	// server a GET for each event of the run (its own status writes). A
	// ClusterVersion the cache does not have is looked for past it: the
	// run stops only for one deleted, not for one that left a cache's
	// label selector (a shard, docs/fleet.md).
	var cv v1alpha1.ClusterVersion
	err := r.client.Get(ctx, req.NamespacedName, &cv)
	if apierrors.IsNotFound(err) || ru == nil && (err != nil || !r.caughtUp(&cv)) {
		cv = v1alpha1.ClusterVersion{} // a read into an object merges its maps
		err = r.reader.Get(ctx, req.NamespacedName, &cv)
	}
	if err != nil {
		if apierrors.IsNotFound(err) && ru == nil {
			r.forget(req.NamespacedName)
		}
		if apierrors.IsNotFound(err) && ru != nil {
			ru.deleting() // gone without the finalizer (removed by hand): stop all the same
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cv.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &cv, ru)
	}
	if err := r.addFinalizer(ctx, &cv); err != nil {
		return ctrl.Result{}, err
	}
	if ru != nil {
		// The run in flight acts on the spec at its next safe point; the
		// reachable targets follow the catalog and the version reached.
		ru.control(&cv.Spec)
		r.observed(ctx, ru, &cv)
		r.refreshUpdates(ctx, ru, &cv)
		return r.watchCluster(ctx, ru, &cv), nil
	}
	st := cv.Status.DeepCopy()
	r.observe(ctx, &cv, st)
	next, wait, err := r.decide(ctx, &cv, st)
	if next != nil && r.start(next, &cv, st) {
		// The run writes st, then runs (execute): the writes of the
		// upgrades a wave starts go at once, not one after the other
		// behind this reconcile's workers.
		return ctrl.Result{RequeueAfter: wait}, err
	}
	if werr := r.writeStatus(ctx, &cv, st); werr != nil {
		if apierrors.IsConflict(werr) {
			// Another writer came in between: decided again from the
			// object as it is (its watch event, or this requeue), not
			// an error for controller-runtime to log.
			r.logger.Log(ctx, r.conflictLevel(req.NamespacedName), "controller: the ClusterVersion changed while the reconcile decided; deciding again",
				"clusterversion", req.String(), "error", werr)
			return ctrl.Result{RequeueAfter: r.backoff.When(req.NamespacedName)}, nil
		}
		return ctrl.Result{}, werr
	}
	r.backoff.Forget(req.NamespacedName)
	return ctrl.Result{RequeueAfter: wait}, err
}

// observed writes cv's generation as observed once the run in flight
// has taken its spec (ru.control): a client that set spec.paused, an
// abort or an abandon knows from status.observedGeneration that the run
// will stop at its next safe point, before the phase shows it (the
// components running then finish first).
func (r *Reconciler) observed(ctx context.Context, ru *run, cv *v1alpha1.ClusterVersion) {
	if cv.Status.ObservedGeneration >= cv.Generation {
		return
	}
	gen := cv.Generation
	ru.update(ctx, func(st *v1alpha1.ClusterVersionStatus) { st.ObservedGeneration = max(st.ObservedGeneration, gen) })
}

// refreshUpdates writes cv's availableUpdates and conditionalUpdates from
// the version its run in flight has reached, when they changed (a hop
// completed, the catalog changed): they are kept on every reconcile, not
// only between upgrades. The status write is ru's, so that it does not
// race the run's own.
func (r *Reconciler) refreshUpdates(ctx context.Context, ru *run, cv *v1alpha1.ClusterVersion) {
	l, ok := r.updatesAt(ctx, cv, cv.Status.CurrentVersion)
	if !ok || l.shownIn(&cv.Status) {
		return // a catalog that does not load: the run goes on with the one it started with; decide reports it after
	}
	ru.update(ctx, func(st *v1alpha1.ClusterVersionStatus) {
		if st.CurrentVersion == cv.Status.CurrentVersion {
			l.setIn(st)
		}
	})
}

// observe fills in what holds whatever happens next: versions and the
// reachable targets.
func (r *Reconciler) observe(ctx context.Context, cv *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) {
	if st.CurrentVersion == "" {
		st.CurrentVersion = string(cmpOr(cv.Spec.InstalledVersion, cv.Spec.DesiredVersion))
	}
	st.DesiredVersion = string(cv.Spec.DesiredVersion)
	st.ObservedGeneration = cv.Generation
	if st.Phase == "" {
		st.Phase = v1alpha1.PhaseIdle
	}
}

// executorOptions are the options of the executor that plans and runs
// cv's upgrade: the operator's (WithExecutorOptions), then spec.onFailure's
// failure policy and spec.until's step, which take the place of those
// among them.
func (r *Reconciler) executorOptions(cv *v1alpha1.ClusterVersion) []runner.Option {
	opts := slices.Clone(r.execOpts)
	if cv.Spec.Rollback != nil {
		// The rollback spec.rollback asks goes back to the start, with
		// the policy runner.Revert records; until does not apply.
		return opts
	}
	switch cv.Spec.OnFailure {
	case "Rollback":
		opts = append(opts, runner.WithFailurePolicy(runner.Rollback))
	case "RollbackRun":
		opts = append(opts, runner.WithFailurePolicy(runner.RollbackRun))
	}
	if cv.Spec.Until != "" {
		opts = append(opts, runner.WithUntil(cv.Spec.Until))
	}
	return opts
}

// plan is an upgrade to start.
type plan struct {
	key  types.NamespacedName
	cv   *v1alpha1.ClusterVersion
	plan *runner.Plan
	// runner runs its components (connect).
	runner runner.Runner
	// target is the desiredVersion the upgrade was started for
	// (PlanSummary.Target): a change of spec.desiredVersion away from it
	// aborts or supersedes the upgrade.
	target string
	fresh  bool // a new upgrade, not the resumption of one
	// retry: the resumption of a Failed upgrade that spec.retry asked
	// for. Only then does the run resume a record that ended failed.
	retry bool
	// window is spec.maintenanceWindows and those of the rollout that
	// started the upgrade (none: always open): a hop starts only while
	// they are (run.Run).
	window runWindows
	// revert: the run rolls the upgrade back, as spec.rollback asks
	// (runner.Revert on its record).
	revert bool
}

const maxHistory = 50

func (r *Reconciler) failing(cv *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus, reason, msg string) {
	setCondition(st, cv, v1alpha1.ConditionFailing, metav1.ConditionTrue, reason, msg)
	setCondition(st, cv, v1alpha1.ConditionProgressing, metav1.ConditionFalse, reason, "not upgrading: "+firstLine(msg))
}

func setCondition(st *v1alpha1.ClusterVersionStatus, cv *v1alpha1.ClusterVersion, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: truncate(msg), ObservedGeneration: cv.Generation})
}

// openHistory reports whether the newest history entry is an upgrade
// that has not ended.
func openHistory(st *v1alpha1.ClusterVersionStatus) bool {
	return len(st.History) > 0 && st.History[0].CompletionTime == nil
}

// endHistory closes the newest history entry.
func endHistory(st *v1alpha1.ClusterVersionStatus, state v1alpha1.HistoryState, msg string, now metav1.Time) {
	if len(st.History) == 0 {
		return
	}
	h := &st.History[0]
	h.State, h.Message, h.CompletionTime = state, truncate(msg), &now
}

// summary is the status's brief of a plan and, when known, its run.
func summary(p *runner.Plan, s *record.Status, target string) *v1alpha1.PlanSummary {
	ps := &v1alpha1.PlanSummary{Target: target, From: routeFrom(p.Route).String(), To: routeTo(p.Route).String(), Phase: string(record.Pending), Hops: []string{}}
	for _, h := range p.Hops {
		name := h.Name()
		if h.Track != "" { // a route across tracks: say which one moves
			name = h.Track + " " + name
		}
		ps.Hops = append(ps.Hops, name)
	}
	ps.Progress = v1alpha1.Progress{Total: p.Total()}
	if s != nil {
		ps.Phase = string(s.Phase)
		ps.CurrentHop = s.CurrentHop
		ps.Progress.Done, ps.Progress.Total = s.Progress.Done, s.Progress.Total
		if f := s.LastFailure; f != nil {
			ps.LastFailure = &v1alpha1.Failure{Hop: f.Hop, Component: f.Component, Check: f.Check, Code: string(f.Code), Message: truncate(f.Error)}
		}
		for _, step := range s.Waiting {
			ps.Waiting = append(ps.Waiting, v1alpha1.WaitingStep{Step: step, Reason: gateReason(p, step)})
		}
		for _, a := range s.Approvals {
			ps.Approvals = append(ps.Approvals, v1alpha1.Approval{Step: a.Step, By: a.By, At: metav1.NewTime(a.At)})
		}
	}
	if ps.CurrentHop < len(ps.Hops) {
		ps.Hop = ps.Hops[ps.CurrentHop]
		ps.Partial = partialHop(p, s, ps.Hop)
	}
	ps.Progress.Summary = fmt.Sprintf("%d/%d", ps.Progress.Done, ps.Progress.Total)
	return ps
}

// partialHop is the hop s stopped partway through, named hop, or nil:
// some of its components completed and the hop did not. A status
// without hops (the writer's brief, see note) has none.
func partialHop(p *runner.Plan, s *record.Status, hop string) *v1alpha1.PartialHop {
	if s == nil || s.CurrentHop >= len(s.Hops) || s.CurrentHop >= len(p.Hops) || s.Hops[s.CurrentHop].Phase == record.Succeeded {
		return nil
	}
	hs := s.Hops[s.CurrentHop]
	ph := &v1alpha1.PartialHop{Hop: hop, To: hs.To, Total: len(hs.Components), Done: []string{}}
	if p.Route.FromState != nil { // the state the hop goes to: the hops before it succeeded
		st := p.Route.FromState.Clone()
		for _, h := range p.Hops[:s.CurrentHop+1] {
			st[h.Hop.Track] = h.Hop.To
		}
		ph.To = st.String()
	}
	for _, c := range hs.Components {
		if c.Phase == record.Succeeded || (c.Phase == record.Skipped && c.Code == "") {
			ph.Count++
			if len(ph.Done) < 20 {
				ph.Done = append(ph.Done, c.Name)
			}
		}
	}
	if ph.Count == 0 {
		return nil
	}
	slices.Sort(ph.Done)
	return ph
}

// partialOf is the hop the last run stopped partway through, or nil.
func partialOf(st *v1alpha1.ClusterVersionStatus) *v1alpha1.PartialHop {
	if st.Plan == nil {
		return nil
	}
	return st.Plan.Partial
}

// finishHop says what to set when the system is between versions.
func finishHop(ph *v1alpha1.PartialHop) string {
	return "set desiredVersion to " + ph.To + ", or to a version whose route goes through it, to finish that hop (hopdag does not roll back a hop that stopped partway; onFailure: rollback does, when a hop fails)"
}

// abortEnded reports whether h is an upgrade an abort ended: Partial,
// or Completed because the abort came during its last hop.
func abortEnded(h v1alpha1.UpdateHistory) bool {
	return h.State == v1alpha1.HistoryPartial || (h.State == v1alpha1.HistoryCompleted && strings.HasPrefix(h.Message, abortedLate))
}

// between says where a system stopped partway through a hop is.
func between(current string, ph *v1alpha1.PartialHop) string {
	names := strings.Join(ph.Done, ", ")
	if ph.Count > len(ph.Done) {
		names += fmt.Sprintf(" and %d more", ph.Count-len(ph.Done))
	}
	return fmt.Sprintf("the system is between %s and %s: %d of the %d components of hop %s already run %s's versions (%s)", current, ph.To, ph.Count, ph.Total, ph.Hop, ph.To, names)
}

// pausedMessage says where spec.paused stopped an upgrade and how to go on.
func pausedMessage(st *v1alpha1.ClusterVersionStatus, to string) string {
	msg := "paused at " + st.Plan.Progress.Summary + " components toward " + to + "; clear spec.paused to resume (what succeeded does not run again)"
	if ph := partialOf(st); ph != nil {
		msg += "; " + between(st.CurrentVersion, ph)
	}
	return msg
}

// endedFor reports whether st's condition typ has reason and was set at
// cv's generation: the outcome it reports stays until the spec changes.
func endedFor(cv *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus, typ, reason string) bool {
	c := meta.FindStatusCondition(st.Conditions, typ)
	return c != nil && c.Reason == reason && c.ObservedGeneration == cv.Generation
}

// progressing is the Progressing message of a run of ps: where it is,
// and the components it retries.
func progressing(ps *v1alpha1.PlanSummary) string {
	if ps.Phase == string(record.RollingBack) {
		return fmt.Sprintf("rolling back %s -> %s to %s, hop %d of %d (%s)", ps.From, ps.To, ps.From, ps.CurrentHop+1, len(ps.Hops), ps.Hop)
	}
	s := fmt.Sprintf("working towards %s: %s components, hop %d of %d (%s)", ps.To, ps.Progress.Summary, ps.CurrentHop+1, len(ps.Hops), ps.Hop) + retryingText(ps)
	if ps.WaitingFor != "" {
		s += "; " + ps.WaitingFor
	}
	return s
}

// writeStatus writes st as cv's status unless nothing changed. st was
// decided from cv as read: a conflict (another writer in between: a
// replica without leader election, a run of another process) is
// returned, not answered by writing st over what that writer wrote, and
// the reconcile that follows decides again from the object as it is
// then. (A run's writes go through run.update, which re-applies its
// change to the object read again.) Once written, cv is the object the
// API server returned (its new resourceVersion included).
func (r *Reconciler) writeStatus(ctx context.Context, cv *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) error {
	fitStatus(cv, st)
	if equalStatus(&cv.Status, st) {
		return nil
	}
	return r.putStatus(ctx, cv, st)
}

// putStatus is writeStatus's write, made even when st changes nothing:
// the API server checks cv's resourceVersion all the same (a conflict
// says cv is not the object as it is), and writes nothing new to etcd.
func (r *Reconciler) putStatus(ctx context.Context, cv *v1alpha1.ClusterVersion, st *v1alpha1.ClusterVersionStatus) error {
	obj := cv.DeepCopy()
	obj.Status = *st.DeepCopy()
	if err := r.client.Status().Update(ctx, obj); err != nil {
		if apierrors.IsConflict(err) {
			r.stale(keyOf(cv)) // the next decision reads past the cache
		}
		return fmt.Errorf("controller: writing the status of ClusterVersion %s/%s: %w", cv.Namespace, cv.Name, err)
	}
	if obj.ResourceVersion != cv.ResourceVersion {
		r.writes.Add(1)
	}
	*cv = *obj
	r.wrote(cv)
	notePhase(cv, &cv.Status)
	return nil
}

func (r *Reconciler) event(cv *v1alpha1.ClusterVersion, typ, reason, action, note string) {
	if r.recorder != nil {
		r.recorder.Eventf(cv, nil, typ, reason, action, "%s", note)
	}
}

func (r *Reconciler) active(key types.NamespacedName) *run {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[key]
}

func cmpOr(vs ...v1alpha1.Target) v1alpha1.Target {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// truncate keeps messages within what a Condition accepts (32 KiB).
func truncate(s string) string {
	const limit = 4096
	if len(s) <= limit {
		return s
	}
	return s[:limit-3] + "..."
}
