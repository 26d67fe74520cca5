// Package controller is the ClusterVersion reconciler, on
// sigs.k8s.io/controller-runtime, and its admission validation.
//
// A Reconciler watches ClusterVersions and the catalog objects of their
// namespaces (kube/catalog loads them). On every reconcile it records
// status.availableUpdates and status.conditionalUpdates (see Updates):
// each target with its hop count and next hop, at most 100 of each kind
// (the newest and the nearest), counting the others, so that the status
// stays small whatever the catalog. When spec.desiredVersion differs from
// status.currentVersion it resolves the route (path.Resolve): a version is
// the state of a one-track system, on spec.track; a state
// (v1alpha1.Target: platform=27.03.0,...) goes across the tracks of a
// catalog that ties them by supports;
// an unknown or unreachable target sets the Failing condition
// with the resolver's diagnostics and runs nothing. Otherwise it starts the
// plan in the background with the runner the embedding operator provides
// (a components.Router: inline handlers, the kube applier), checkpointing
// into the state.Store and under the state.Lock that New's StoreFunc gives
// for that ClusterVersion, and returns: the run writes the status the
// reconcile decided (phase Upgrading) before its first component, and
// does not start when that write conflicts (the ClusterVersion is
// reconciled again), so that the upgrades of a wave start together, not
// one per reconcile worker at a time. A decision is taken on the cache's
// copy of the ClusterVersion when it shows this process's last write,
// and on a read past the cache otherwise.
//
// While a run goes, its transitions reach the ClusterVersion's status
// coalesced: at most one write per WithStatusInterval, plus one at each hop
// start and end and at the end of the run, whatever the number of
// components (StatusWrites counts them). Events: UpgradeStarted (hops,
// target), HopCompleted (duration), UpgradeCompleted, UpgradeFailed
// (component, code), UpgradeAborted, UpgradePaused, UpgradeAbandoned,
// UpgradeWaitingForApproval (the steps, what to set), UpgradeApproved
// (step, by), UpgradeRolledBack (component, code, where the system is),
// UpgradeRollbackFailed, UpgradeRedirected (a new target came while a run
// went: the hop in progress finished, and the upgrade to the new target
// starts from there); Warnings ComponentFailed (a component failed for
// good while its hop goes on; Failing turns True, reason ComponentFailed;
// at most 10 a minute per run, and one when the hop ends naming those
// held back),
// ComponentRetrying (an attempt failed and the component's retries allow
// another: the component, the attempt, the code and the first line of the
// error, when the next attempt is due; at most 10 a minute per run),
// ApprovalNotWaiting (spec.approvals names a step that does not wait) and
// NothingToAbandon (spec.abandon is set and no upgrade runs). Every
// Event's note is cut to the 1,024 bytes events.k8s.io/v1 accepts
// ("... and N more bytes"), its action to 128.
//
// While a component is retried, status.plan.retrying lists it (the
// attempt that failed, its code and error, when the next attempt is due,
// or that it runs), Progress.retrying counts the components retried, and
// the Progressing message names the first of them: a run whose component
// waits for its backoff does not look hung.
//
// While a running component waits (its runner reports it through
// runner.Task.Waiting: a manifest component's readiness wait, "waiting
// for DaemonSet kube-system/calico-node: 3 of 5 updated"),
// status.plan.waitingFor says for what — the first two components by
// name, each message cut to 200 bytes, and "and N more" — and the
// Progressing message ends with it; `kubectl get cv -o wide` shows it
// (WAITING). It is written with the progress, at most once per status
// interval, and cleared when the component's attempt ends.
//
// How a run ends, in the status:
//   - at a gate (a rule's, a ComponentVersion's or a phase's gate):
//     phase WaitingForApproval, status.plan.waiting naming each step and
//     its gate's reason, Progressing False reason WaitingForApproval
//     saying what to add to spec.approvals; the history entry stays
//     Partial. Nothing but an entry of spec.approvals naming a step that
//     waits approves it: the reconciler records it (by, and the time) in
//     the run's record, once, under the run's lock, and resumes the run.
//   - rolled back (a rule's onFailure: rollback, or runner.Rollback in
//     the executor options): phase RolledBack, history RolledBack,
//     Failing True reason UpgradeRolledBack, currentVersion the release
//     the system runs (hops completed before stay). A spec change starts
//     a new upgrade from there.
//   - a rollback that did not finish: phase Failed, Failing True reason
//     RollbackFailed with the code, history Failed; spec.retry resumes
//     the rollback.
//   - at the until step (spec.until, StarlingX's targetDeployStep; or
//     runner.WithUntil in the operator's executor options, for every
//     ClusterVersion): phase Paused, Progressing reason UntilReached,
//     history Partial; clearing spec.until or moving it to a later step
//     goes on (an operator-wide step needs a restart without it).
//
// Control, through the spec:
//   - desiredVersion set back to the version the run started from aborts
//     the run at the next safe point: the hop in progress finishes (its
//     components not yet started too, and its checks), so that the system
//     is at a release of the catalog, and nothing of the hops after it
//     starts; the history entry is Partial (Completed when the abort came
//     during the last hop). An abort does not roll back: hops that
//     completed stay (status.currentVersion says where the system is);
//     spec.rollback does (below).
//   - rollback rolls the last upgrade (status.history[0]) back to the
//     version it started from, through each hop's DAG, last hop first
//     (runner.Revert on its record), whether it completed, failed or
//     stopped partway; a run in progress stops at its safe point first
//     (phase Paused, Progressing reason RollbackRequested). While it
//     runs: phase Upgrading, Progressing reason Upgrading saying
//     "rolling back", an UpgradeRollingBack Event. Then: phase and
//     history RolledBack, Failing False (it was asked for), Progressing
//     False reason RollbackRequested, an UpgradeRolledBack Event
//     (Normal). Nothing starts while spec.rollback is set; clearing it
//     starts the upgrade to desiredVersion again. spec.onFailure,
//     spec.until and maintenance windows do not apply to it; spec.paused
//     holds it. A record that cannot be rolled back (gone, abandoned,
//     nothing started): phase Failed, Failing RollbackRefused saying why.
//   - a run that stopped partway through a hop (paused, failed, waiting,
//     at the until step) and then ended (an abort, a new target) leaves
//     the system between two releases: status.plan.partial names the hop
//     and the components that completed it, the Available condition says
//     so (reason BetweenVersions), and a new upgrade must start with that
//     hop (a route that does not would take those components to versions
//     planned from the release before it: Failing, reason
//     BetweenVersions).
//   - paused stops starting new components the same way; clearing it
//     resumes from the store, never re-running what succeeded.
//   - abandon marks the stored run Abandoned (never resumed) and the phase
//     Abandoned. Set while no upgrade runs (together with a new
//     desiredVersion, or before it), it starts nothing, rather than an
//     upgrade abandoned at once: the phase stays Idle, Progressing False
//     reason NothingToAbandon says to clear spec.abandon to start the
//     upgrade, with a NothingToAbandon Warning Event; clearing it starts
//     the upgrade.
//   - a failed run (phase Failed) is retried when spec.retry changes
//     (increment it): the run resumes from its record, retrying what
//     failed. status.observedRetry is the value acted on; it is recorded
//     with the failure, so a value set before the failure showed retries
//     nothing, and neither does another spec change or an operator
//     restart (a record that says Failed while the status does not yet
//     is recorded as the failure, not run again). The Failing condition
//     and the UpgradeFailed Event end with what to do: retry, abort
//     (desiredVersion back to where the upgrade started, allowed when
//     paused, waiting or failed after a hop too), or abandon.
//   - a plan the executor refuses as the run starts: phase Failed,
//     Failing PlanInvalid, the history entry Failed with its completion
//     time.
//   - a run whose record was written for another plan than the one made
//     now (the catalog, or spec.channel, spec.allowPrereleases or
//     spec.acceptRisks, changed while the upgrade was stopped:
//     runner.ErrPlanMismatch): phase Failed, Failing UpgradeFailed naming
//     the ClusterVersion, the hops the record was written for and those
//     of the new plan, and what to do: put them back as they were and
//     increment spec.retry, or start over as planned now by setting
//     spec.abandon and then clearing it (an abort keeps the record, which
//     the same upgrade started again would resume).
//   - approvals approve the steps a run waits at (above).
//
// Deletion: the reconciler puts the finalizer hopdag.io/run-record
// (Finalizer) on every ClusterVersion before it starts anything for it.
// A ClusterVersion deleted while its run goes stops that run as an abort
// does (the hop in progress finishes, nothing after it starts; a
// ClusterVersionDeleted Event says so, an UpgradeStopped Event and the
// history entry, Partial, say where it stopped), whether or not the
// webhook runs. Once no run is in flight the run's record and lock are
// removed (a state store that is a Remover, as kube/store's is; another
// keeps them), and then the finalizer: the ClusterVersion goes. A
// ClusterVersion created again under the name is a new one: it has no
// record, no history and no status.plan, and plans from its
// spec.installedVersion; a new upgrade never resumes a record that
// completed. What the deleted one knew of a hop left partway is lost,
// which is why the webhook refuses that deletion (see Validator); a
// deletion mid-upgrade is recorded in a DeletedMidUpgrade Warning Event.
// The objects the components applied, and kube/apply's inventories of
// them (ConfigMaps labelled hopdag.io/inventory=true and
// hopdag.io/instance=INSTANCE in the inventory namespace), are kept: they
// describe what still runs in the cluster, and a ClusterVersion created
// again for the same instance upgrades and prunes from them. Remove
// them, once the components are removed, with kubectl delete configmap
// -n NAMESPACE -l hopdag.io/inventory=true,hopdag.io/instance=INSTANCE.
//
// A ClusterVersion may upgrade another cluster than the one it lives in:
// spec.clusterRef names a kubeconfig Secret of its namespace (Cluster
// API's NAME-kubeconfig, key "value"). WithRunnerFor is then given that
// cluster's *rest.Config, and its runner sends the manifests, Helm
// releases, readiness checks and inventories there; the run record,
// status and Events stay in the cluster of the reconciler. Before a run
// starts the reconciler reads the Secret and asks the cluster's API
// server for its version: a missing or malformed Secret, or a cluster
// that does not answer, is Failing reason ClusterUnreachable with the
// cause, nothing runs, and the reconcile is tried again with backoff. A
// run in flight checks its cluster every WithClusterCheckInterval and
// says in Failing when it does not answer. Runners are kept per
// ClusterVersion and Secret resourceVersion: a rotated kubeconfig is
// used from the next run on, without a restart.
//
// The reconciler is level-based: what it does follows from the
// ClusterVersion, the catalog and the stored run; the only state it keeps
// between calls is the set of runs in flight in this process. Run it under
// the manager's leader election so that one replica acts; the store's lock
// fences a replica that lost its lease. A run goes through state.Run, so
// its lock, lease, resume, checkpoints and release are the library's
// (WithHolder and WithLeaseTTL name and time its lease).
//
// Validator is the validating admission webhook of ClusterVersion.
//
// +kubebuilder:webhook:path=/validate-hopdag-io-v1alpha1-clusterversion,mutating=false,failurePolicy=fail,sideEffects=None,groups=hopdag.io,resources=clusterversions,verbs=create;update;delete,versions=v1alpha1,name=vclusterversion.hopdag.io,admissionReviewVersions=v1,timeoutSeconds=30
//
// The operator's permissions are the RBAC markers below, generated into
// kube/config/rbac/role.yaml (ClusterRole hopdag-operator;
// TestGeneratedRoleSuffices runs an upgrade under nothing else): the
// ClusterVersions (update and patch: the finalizer) and their status, the
// catalog objects (read), Leases (the store's lock and leader election),
// ConfigMaps (the store's records and kube/apply's inventories),
// Namespaces (create and patch: kube/apply applies its inventory
// namespace) and Events (events.k8s.io for the reconciler's, core for
// leader election's). The manifest runner applies what the catalog's
// manifests hold: grant that too, as the catalog needs (kube/apply's
// TestShippedRoleSuffices upgrades a manifest component under the role
// alone). A prune of a Namespace lists what the Namespace holds, every
// kind of it, and leaves a Namespace it may not list: grant list on those
// kinds for such prunes to go through. Secrets are not in the
// ClusterRole: an operator whose ClusterVersions name a kubeconfig
// (spec.clusterRef) needs get on Secrets in their namespaces only, a
// Role and RoleBinding per namespace (the reconciler reads the Secret
// when a run starts, never lists nor watches Secrets), so that it holds
// no Secret of another namespace (kube/examples/operator's
// TestConfigDefaultApplies checks it may not read kube-system's).
//
// +kubebuilder:rbac:groups=hopdag.io,resources=clusterversions,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=hopdag.io,resources=clusterversions/finalizers,verbs=update
// +kubebuilder:rbac:groups=hopdag.io,resources=clusterversions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=hopdag.io,resources=releases;componentversions;upgradepaths,verbs=get;list;watch
// +kubebuilder:rbac:groups=hopdag.io,resources=upgraderollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
package controller

//go:generate sh -c "$HOPDAG_CONTROLLER_GEN webhook paths=./... output:webhook:dir=../config/webhook && $HOPDAG_CONTROLLER_GEN rbac:roleName=hopdag-operator paths=./... paths=../fleet/... output:rbac:dir=../config/rbac"
