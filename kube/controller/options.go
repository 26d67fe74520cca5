package controller

import (
	"io/fs"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// StoreFunc gives the store and the lock of a ClusterVersion's runs. A
// state.Memory is both; kube/store keeps them on the API server (its New
// refuses a name that cannot name one: derive names from the
// ClusterVersion's so that they always can). An error is shown on the
// ClusterVersion (Failing, reason StoreUnavailable), and tried again.
type StoreFunc func(cv types.NamespacedName) (state.Store, state.Lock, error)

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithExecutorOptions adds options to every run's runner.Executor
// (parallelism, checks, retries). The reconciler sets the checkpointer and
// adds its own observer.
func WithExecutorOptions(opts ...runner.Option) Option {
	return func(r *Reconciler) { r.execOpts = append(r.execOpts, opts...) }
}

// WithRunnerFor gives each ClusterVersion's runs a runner of their own,
// in place of the one New was given (which may then be nil): for
// example a components.Router whose Manifest names the instance after the
// ClusterVersion (components.WithInstance), so that two ClusterVersions in
// one cluster never prune each other's objects. cluster is the
// rest.Config of the cluster the ClusterVersion upgrades, read from the
// kubeconfig Secret its spec.clusterRef names, for the runner to send
// its manifests, Helm releases, readiness checks and inventories there;
// nil without a clusterRef. The reconciler asks once per ClusterVersion
// and kubeconfig (by UID and the Secret's resourceVersion: one deleted
// and created again under the same name, or a rotated kubeconfig, is
// asked again), and each run keeps the runner it started with. An error
// is shown on the ClusterVersion (Failing, reason ClusterUnreachable) and
// asked again with backoff.
func WithRunnerFor(rf func(cv types.NamespacedName, cluster *rest.Config) (runner.Runner, error)) Option {
	return func(r *Reconciler) { r.runnerFor = rf }
}

// WithClusterCheckInterval sets how often, while a run is in flight, the
// reconciler checks that the cluster of its spec.clusterRef answers
// (default 30s); one that does not is said in Failing, reason
// ClusterUnreachable, until it answers again.
func WithClusterCheckInterval(d time.Duration) Option {
	return func(r *Reconciler) { r.clusterCheck = d }
}

// WithManifests gives the files that ComponentVersions name in
// spec.manifests[].file and spec.phases[].manifests[].file (see
// catalog.WithManifests).
func WithManifests(fsys fs.FS) Option { return func(r *Reconciler) { r.manifests = fsys } }

// WithStatusInterval sets how often, at most, progress inside a hop is
// written to the status (default 2s). Hop starts and ends and the end of
// the run are written when they happen (the first hop's start with the
// Upgrading status that starts the run, the last hop's end with the
// run's end).
func WithStatusInterval(d time.Duration) Option { return func(r *Reconciler) { r.interval = d } }

// WithHolder names this process in the store's lock (default: the pod's
// hostname and pid).
func WithHolder(name string) Option { return func(r *Reconciler) { r.holder = name } }

// WithLeaseTTL sets the store lock's TTL (default 15s).
func WithLeaseTTL(d time.Duration) Option { return func(r *Reconciler) { r.ttl = d } }

// WithLogger sets the logger (default, and nil: discard).
func WithLogger(l *slog.Logger) Option {
	return func(r *Reconciler) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		r.logger = l
	}
}

// WithClock sets the clock the reconciler reads for maintenance windows
// (spec.maintenanceWindows); tests inject one. Default time.Now.
func WithClock(now func() time.Time) Option { return func(r *Reconciler) { r.now = now } }

// DefaultMaxConcurrentReconciles is how many ClusterVersions the
// reconciler reconciles at once when neither WithMaxConcurrentReconciles
// nor the manager's Controller.MaxConcurrentReconciles says.
// controller-runtime's own default, one, starts the clusters of a
// rollout's wave one after the other, each waiting for its read and its
// status write (docs/fleet.md, Scale).
const DefaultMaxConcurrentReconciles = 8

// WithMaxConcurrentReconciles sets how many ClusterVersions the
// reconciler reconciles at once (default: the manager's
// Controller.MaxConcurrentReconciles when it is set, else
// DefaultMaxConcurrentReconciles). One ClusterVersion is never
// reconciled by two workers at once (controller-runtime's queue), and
// runs go in the background whatever the number: it bounds how many
// upgrades start, and how many statuses are written, at once. Raise it
// for fleets that start hundreds of ClusterVersions together, as far as
// the API server keeps up.
func WithMaxConcurrentReconciles(n int) Option { return func(r *Reconciler) { r.workers = n } }
