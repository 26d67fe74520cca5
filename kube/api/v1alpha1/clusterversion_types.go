package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ClusterVersion declares the version a system should run; its reconciler
// (package kube/controller) upgrades the system there, hop by hop, through
// the catalog objects of the same namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cv,categories=hopdag
// +kubebuilder:printcolumn:name="Desired",type=string,JSONPath=`.spec.desiredVersion`
// +kubebuilder:printcolumn:name="Current",type=string,JSONPath=`.status.currentVersion`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.plan.progress.summary`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Hop",type=string,JSONPath=`.status.plan.hop`,priority=1
// +kubebuilder:printcolumn:name="Waiting",type=string,JSONPath=`.status.plan.waitingFor`,priority=1
type ClusterVersion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ClusterVersionSpec `json:"spec"`
	// +optional
	Status ClusterVersionStatus `json:"status,omitzero"`
}

// ClusterVersionSpec is what the user declares.
//
// +kubebuilder:validation:XValidation:rule="has(self.installedVersion) == has(oldSelf.installedVersion) && (!has(self.installedVersion) || self.installedVersion == oldSelf.installedVersion)",message="installedVersion is set at creation and cannot change"
// +kubebuilder:validation:XValidation:rule="!has(self.track) || size(self.track) == 0 || !self.desiredVersion.contains('=')",message="track names one track; a desiredVersion of the form track=version,... names its tracks itself: remove track"
// +kubebuilder:validation:XValidation:rule="!has(self.installedVersion) || self.installedVersion.contains('=') == self.desiredVersion.contains('=')",message="installedVersion and desiredVersion must both be versions, or both states (track=version,...)"
type ClusterVersionSpec struct {
	// DesiredVersion is the version the system should run. Changing it
	// starts an upgrade; setting it back to the version a running upgrade
	// started from aborts that upgrade at the next safe point: once the
	// hop in progress has finished. For a
	// catalog whose tracks are tied by supports (StarlingX: the platform
	// release and the Kubernetes version), it is a state,
	// "platform=27.03.0,kubernetes=v1.34.0", as hopdag's --to takes it; a
	// desired state may name only some tracks, the others moving as the
	// route needs.
	DesiredVersion Target `json:"desiredVersion"`
	// InstalledVersion is the version the system runs when the
	// ClusterVersion is created; it defaults to DesiredVersion. It cannot
	// change afterwards: status.currentVersion says what runs. With a
	// desired state, it is a state naming every track the system runs
	// ("platform=13.01.0,kubernetes=v1.32.0").
	// +optional
	InstalledVersion Target `json:"installedVersion,omitempty"`
	// Track is the release track ("" is the default track). A state names
	// its tracks itself: leave Track out then.
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]*$`
	Track string `json:"track,omitempty"`
	// Channel, when set, keeps routes to the versions of that channel
	// (the UpgradePath's versions[].channels), the current one excepted
	// (path.WithChannel).
	// +optional
	Channel string `json:"channel,omitempty"`
	// AllowPrereleases lets a route between two GA versions pass through
	// prereleases (path.AllowPrereleases); without it, it never does.
	// +optional
	AllowPrereleases bool `json:"allowPrereleases,omitempty"`
	// AcceptRisks names the upgrade risks the user accepts: a route whose
	// edges carry these risks may be used (status.conditionalUpdates lists
	// the targets behind risks).
	// +optional
	// +listType=set
	AcceptRisks []string `json:"acceptRisks,omitempty"`
	// Paused stops the upgrade from starting new components; what runs
	// finishes. Clearing it resumes where the upgrade stopped.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Abandon, when set, stops the upgrade for good at the next safe point
	// and marks it Abandoned: it is never resumed. Change desiredVersion
	// and clear Abandon to start another upgrade. Set while no upgrade
	// runs, it abandons nothing and no upgrade starts until it is cleared
	// (Progressing reason NothingToAbandon).
	// +optional
	Abandon *AbandonRequest `json:"abandon,omitempty"`
	// Rollback, when set, rolls the last upgrade (status.history[0]) back
	// to the version it started from, through each hop's component DAG,
	// dependents first, last hop first (runner.Revert): whether it
	// completed, failed or stopped partway. A run in progress stops at
	// its next safe point first, as a pause stops it. The ClusterVersion
	// is then RolledBack (history RolledBack), and while Rollback is set
	// no upgrade starts: clear it to start the upgrade to desiredVersion
	// again. spec.onFailure and maintenance windows do not apply to the
	// rollback, and spec.paused holds it. An UpgradeRollout aborted with
	// rollback Failed or Moved sets it.
	// +optional
	Rollback *RollbackRequest `json:"rollback,omitempty"`
	// Approvals approve the steps the upgrade waits at
	// (status.plan.waiting, phase WaitingForApproval): a gate of the
	// catalog (an UpgradePath rule's, a ComponentVersion's, a lifecycle
	// phase's) holds its step until an entry here names it. The
	// reconciler records the approval (by, and when it recorded it) in
	// the run's record once, when the step waits, and resumes the run;
	// status.plan.approvals lists what was recorded. Only an entry added
	// once its step waits approves it: one that was there before (left
	// from an earlier upgrade through the same step) is listed in
	// status.plan.waiting[].stale and approves nothing, and nothing else
	// approves a step.
	// +optional
	// +listType=map
	// +listMapKey=step
	// +kubebuilder:validation:MaxItems=64
	Approvals []ApprovalRequest `json:"approvals,omitempty"`
	// Until runs the upgrade up to and including one step and stops there
	// (StarlingX's targetDeployStep): HOP[/COMPONENT[/PHASE]], HOP being a
	// hop's target version, as status.plan.waiting names steps. The
	// ClusterVersion is then Paused, Progressing reason UntilReached;
	// clear Until, or set it to a later step, to go on. It is read when a
	// run starts or resumes: a change while a run is in flight takes
	// effect when that run stops (set spec.paused to stop it sooner). A
	// step the plan does not have fails the upgrade's plan (Failing
	// reason PlanInvalid, naming the plan's hops or the hop's
	// components).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Until string `json:"until,omitempty"`
	// MaintenanceWindows, when set, are when an upgrade may start: one
	// set outside them waits (Progressing reason
	// WaitingForMaintenanceWindow, saying when the next opens) and
	// starts when one opens. A run that has started goes on past the
	// window's end.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	MaintenanceWindows []MaintenanceWindow `json:"maintenanceWindows,omitempty"`
	// ClusterRef, when set, names the cluster this ClusterVersion
	// upgrades through a kubeconfig Secret in its namespace (Cluster
	// API's convention: Secret NAME-kubeconfig, key "value"): manifests,
	// Helm releases, readiness and inventories go to that cluster, while
	// the run record, the status and the Events stay here. A Secret that
	// is missing or malformed, or a cluster that does not answer, gives
	// Failing reason ClusterUnreachable with the cause; nothing is
	// applied, and the reconciler tries again with backoff. A rotated
	// kubeconfig (the Secret changed) is used from the next run on.
	// +optional
	ClusterRef *ClusterRef `json:"clusterRef,omitempty"`
	// OnFailure, when set, is how a run answers a hop that fails:
	// Rollback rolls that hop back (its components, dependents first,
	// through the runner's Rollbacker; the hops completed before stay),
	// RollbackRun rolls back the completed hops too, last first, to the
	// version the upgrade started from (runner.Rollback and
	// runner.RollbackRun). The ClusterVersion is then RolledBack. Unset,
	// a failed hop stops the run (Failed) unless its UpgradePath rule
	// says onFailure: rollback. It is read when a run starts or resumes:
	// set it and increment spec.retry to roll back a Failed upgrade
	// whose failed component fails again.
	// +optional
	// +kubebuilder:validation:Enum=Rollback;RollbackRun
	OnFailure string `json:"onFailure,omitempty"`
	// Retry retries a Failed upgrade: increment it (any new value does)
	// and the reconciler resumes the run, retrying the failed
	// component(s) and never re-running what succeeded. The reconciler
	// records the value it acted on in status.observedRetry; a value set
	// before the failure was recorded retries nothing, nor does a restart
	// of the operator or a change of another field.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Retry int64 `json:"retry,omitempty"`
}

// ClusterRef names a workload cluster's kubeconfig Secret.
type ClusterRef struct {
	// Name is the cluster's name (a Cluster API Cluster's): its
	// kubeconfig is the Secret NAME-kubeconfig unless SecretName says
	// otherwise.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// SecretName overrides the Secret's name.
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// Key is the Secret's key holding the kubeconfig (default "value").
	// +optional
	Key string `json:"key,omitempty"`
}

// ApprovalRequest approves one gated step.
type ApprovalRequest struct {
	// Step is the step to approve as status.plan.waiting names it:
	// HOP[/COMPONENT[/PHASE]], HOP being the hop's target version.
	// +kubebuilder:validation:MinLength=1
	Step string `json:"step"`
	// By says who approves; it is recorded with the time.
	// +kubebuilder:validation:MinLength=1
	By string `json:"by"`
}

// AbandonRequest asks to abandon the upgrade in progress.
type AbandonRequest struct {
	// Reason is recorded in the status and history.
	// +kubebuilder:validation:MinLength=1
	Reason string `json:"reason"`
}

// RollbackRequest asks to roll back the last upgrade.
type RollbackRequest struct {
	// Reason is recorded in the run's record, the status and the history.
	// +kubebuilder:validation:MinLength=1
	Reason string `json:"reason"`
}

// Phase is the state of a ClusterVersion.
//
// +kubebuilder:validation:Enum=Idle;Upgrading;Paused;WaitingForApproval;Failed;RolledBack;Abandoned
type Phase string

// Phases of a ClusterVersion.
const (
	// PhaseIdle: the system runs the desired version, or waits for a
	// target it can reach (see the Failing condition).
	PhaseIdle Phase = "Idle"
	// PhaseUpgrading: an upgrade runs.
	PhaseUpgrading Phase = "Upgrading"
	// PhasePaused: spec.paused stopped the upgrade between components.
	PhasePaused Phase = "Paused"
	// PhaseWaitingForApproval: the upgrade stopped at a gate;
	// status.plan.waiting names the steps, and an entry of spec.approvals
	// naming one resumes the upgrade.
	PhaseWaitingForApproval Phase = "WaitingForApproval"
	// PhaseFailed: the upgrade failed; status.plan.lastFailure says where.
	// Increment spec.retry to resume it, set desiredVersion back to the
	// version it started from to abort it, or abandon it (spec.abandon).
	// Nothing else resumes it: not another spec change, not a restart of
	// the operator.
	PhaseFailed Phase = "Failed"
	// PhaseRolledBack: a hop failed and its rule (onFailure: rollback)
	// rolled it back; status.currentVersion is the release the system
	// runs (the hops completed before stay), status.plan.lastFailure says
	// what failed. Change the spec (metadata.generation) to try again: a
	// new upgrade starts from status.currentVersion. A rollback that did
	// not finish is PhaseFailed, Failing with reason RollbackFailed.
	PhaseRolledBack Phase = "RolledBack"
	// PhaseAbandoned: the upgrade was abandoned and will not resume.
	PhaseAbandoned Phase = "Abandoned"
)

// Condition types, as OpenShift's ClusterVersion uses them.
const (
	// ConditionAvailable is True when the system runs a version of the
	// catalog (status.currentVersion).
	ConditionAvailable = "Available"
	// ConditionProgressing is True while an upgrade runs toward
	// status.desiredVersion.
	ConditionProgressing = "Progressing"
	// ConditionFailing is True when the desired version cannot be reached
	// (unknown, no route, a catalog error) or the upgrade failed; its
	// message carries the diagnostics.
	ConditionFailing = "Failing"
	// ConditionStatusTrimmed is True, with reason TooLarge, when
	// status.availableUpdates and status.conditionalUpdates are left out
	// (counted in their omitted fields) because with them the status
	// would be larger than the reconciler writes; it is absent otherwise.
	ConditionStatusTrimmed = "StatusTrimmed"
)

// HistoryState is the outcome of one upgrade.
//
// +kubebuilder:validation:Enum=Completed;Partial;Failed;RolledBack
type HistoryState string

// History states, as OpenShift's history uses them, plus Failed and
// openFuyao's RolledBack.
const (
	// HistoryCompleted: the upgrade reached its target.
	HistoryCompleted HistoryState = "Completed"
	// HistoryPartial: the upgrade runs, waits for approval, or was
	// stopped (aborted, paused) before reaching its target.
	HistoryPartial HistoryState = "Partial"
	// HistoryFailed: the upgrade failed, its rollback failed, or it was
	// abandoned.
	HistoryFailed HistoryState = "Failed"
	// HistoryRolledBack: a hop failed and was rolled back; the system
	// runs the release it ran before that hop.
	HistoryRolledBack HistoryState = "RolledBack"
)

// ClusterVersionStatus is what the reconciler observes and does.
type ClusterVersionStatus struct {
	// ObservedGeneration is the metadata.generation last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ObservedRetry is the spec.retry the reconciler last acted on: it is
	// recorded with a failure, and when a retry resumes the failed run.
	// A Failed upgrade is retried when spec.retry differs from it.
	// +optional
	ObservedRetry int64 `json:"observedRetry,omitempty"`
	// CurrentVersion is the version the system runs: the target of the
	// last hop that completed.
	// +optional
	CurrentVersion string `json:"currentVersion,omitempty"`
	// DesiredVersion is the version the reconciler works toward.
	// +optional
	DesiredVersion string `json:"desiredVersion,omitempty"`
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// Conditions are Available, Progressing and Failing.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// History lists the upgrades, newest first (at most 50).
	// +optional
	// +listType=atomic
	History []UpdateHistory `json:"history,omitempty"`
	// AvailableUpdates are the versions reachable from currentVersion with
	// the accepted risks, ascending (path.Targets), each with its hop
	// count and next hop. At most 100 are listed, so that the status
	// stays small whatever the catalog (on a chain every later version
	// is a target): the newest, and those reached in the fewest hops
	// (of equal hops, the newer). AvailableUpdatesOmitted counts the
	// others; `hopdag targets` lists them all.
	// +optional
	// +listType=atomic
	AvailableUpdates []Update `json:"availableUpdates,omitempty"`
	// AvailableUpdatesOmitted is how many reachable versions
	// AvailableUpdates leaves out.
	// +optional
	AvailableUpdatesOmitted int `json:"availableUpdatesOmitted,omitempty"`
	// ConditionalUpdates are the versions reachable only by accepting
	// more risks, ascending, each with the risks its route carries;
	// listed as AvailableUpdates are, at most 100.
	// +optional
	// +listType=atomic
	ConditionalUpdates []ConditionalUpdate `json:"conditionalUpdates,omitempty"`
	// ConditionalUpdatesOmitted is how many versions behind risks
	// ConditionalUpdates leaves out.
	// +optional
	ConditionalUpdatesOmitted int `json:"conditionalUpdatesOmitted,omitempty"`
	// Plan is the upgrade in progress (or the one that waits to start
	// while spec.paused is set), or the last one, in brief.
	// +optional
	Plan *PlanSummary `json:"plan,omitempty"`
}

// UpdateHistory is one upgrade.
type UpdateHistory struct {
	From  string       `json:"from"`
	To    string       `json:"to"`
	State HistoryState `json:"state"`
	// StartedTime is when the upgrade started.
	StartedTime metav1.Time `json:"startedTime"`
	// CompletionTime is when it ended (nil while it runs).
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Message says why it stopped when it did not complete.
	// +optional
	Message string `json:"message,omitempty"`
}

// Update is a version the system can upgrade to.
type Update struct {
	Version string `json:"version"`
	// Hops is the number of hops of the route to Version.
	Hops int `json:"hops"`
	// Next is the route's first hop, the one the system takes now toward
	// Version: "FROM -> TO", or "TRACK FROM -> TO" for a state across
	// tracks, as `hopdag targets` prints it in its NEXT column (whole
	// routes would make the status grow with the square of the versions).
	Next string `json:"next"`
}

// ConditionalUpdate is a version reachable only by accepting Risks.
type ConditionalUpdate struct {
	Update `json:",inline"`
	// Risks are the risks of the route not yet accepted, in route order;
	// at most 10 are listed, RisksOmitted counts the others.
	// +listType=atomic
	Risks []ConditionalRisk `json:"risks"`
	// RisksOmitted is how many further risks the route carries.
	// +optional
	RisksOmitted int `json:"risksOmitted,omitempty"`
}

// ConditionalRisk is one named risk of a conditional update.
type ConditionalRisk struct {
	Name string `json:"name"`
	// Message is the risk's, cut to 512 bytes.
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	URL string `json:"url,omitempty"`
}

// PlanSummary is an upgrade plan in brief: its hops, where it is, and the
// last failure. The full per-component record lives in the state store.
type PlanSummary struct {
	// Target is the desiredVersion the upgrade was started for, as the
	// reconciler spells it; across tracks it may name only some of them,
	// while To is where the route ends.
	// +optional
	Target string `json:"target,omitempty"`
	From   string `json:"from"`
	To     string `json:"to"`
	// Hops are the hops in order, each "from -> to".
	// +listType=atomic
	Hops []string `json:"hops"`
	// CurrentHop is the index in Hops of the hop running or last run,
	// counted from 0 (messages say "hop N of M", counted from 1).
	CurrentHop int `json:"currentHop"`
	// Hop is Hops[CurrentHop], for the printer column (kubectl -o wide).
	// +optional
	Hop string `json:"hop,omitempty"`
	// Phase is the run's phase (record.Phase).
	// +optional
	Phase    string   `json:"phase,omitempty"`
	Progress Progress `json:"progress"`
	// Partial is set when the run stopped partway through the hop
	// CurrentHop (paused, failed or aborted there, and not resumed): some
	// of that hop's components already run its target versions, so the
	// system is between two releases until that hop completes.
	// +optional
	Partial *PartialHop `json:"partial,omitempty"`
	// LastFailure is the most recent component or check failure.
	// +optional
	LastFailure *Failure `json:"lastFailure,omitempty"`
	// Retrying are the components of the run in progress whose last
	// attempt failed and that are retried (their retries allow another
	// attempt): each waits for its backoff, or its next attempt runs. At
	// most 10 are listed, by hop, then name; Progress.Retrying counts
	// them all. A Warning Event ComponentRetrying reports each failed
	// attempt.
	// +optional
	// +listType=atomic
	Retrying []Retry `json:"retrying,omitempty"`
	// WaitingFor says what the running components of the hop in progress
	// wait for, as their runners last reported it ("waiting for DaemonSet
	// kube-system/calico-node: 3 of 5 updated"): the first two, by name,
	// each cut to 200 characters, and "and N more". The Progressing
	// condition's message ends with it; `kubectl get cv -o wide` shows it
	// (WAITING). Empty when no component reports a wait.
	// +optional
	WaitingFor string `json:"waitingFor,omitempty"`
	// Waiting are the steps waiting for approval, by step; add an entry
	// naming one to spec.approvals to approve it.
	// +optional
	// +listType=atomic
	Waiting []WaitingStep `json:"waiting,omitempty"`
	// Approvals are the approvals recorded in the run's record, in the
	// order recorded.
	// +optional
	// +listType=atomic
	Approvals []Approval `json:"approvals,omitempty"`
}

// WaitingStep is a step held by its gate.
type WaitingStep struct {
	// Step names it, HOP[/COMPONENT[/PHASE]], as spec.approvals does.
	Step string `json:"step"`
	// Reason is the gate's: what to look at before approving.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Stale are the approvers (by) of the spec.approvals entries for
	// Step that were there before it began waiting (left from an earlier
	// upgrade through the same step, say): they approve nothing. Remove
	// such an entry and add it again to approve; the reconciler drops a
	// name from here once its entry is gone.
	// +optional
	// +listType=atomic
	Stale []string `json:"stale,omitempty"`
}

// Approval is an approval recorded in the run's record (record.Approval).
type Approval struct {
	Step string `json:"step"`
	By   string `json:"by"`
	// At is when the reconciler recorded it.
	At metav1.Time `json:"at"`
}

// Progress counts the plan's components: Done of Total (succeeded or
// skipped).
type Progress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
	// Retrying is how many components are being retried after a failed
	// attempt (PlanSummary.Retrying lists them).
	// +optional
	Retrying int `json:"retrying,omitempty"`
	// Summary is "done/total", for the printer column.
	// +optional
	Summary string `json:"summary,omitempty"`
}

// PartialHop is a hop that stopped partway.
type PartialHop struct {
	// Hop is the hop, as Hops names it.
	Hop string `json:"hop"`
	// To is where the hop goes: the release whose versions Done run.
	To string `json:"to"`
	// Done are the hop's components that completed (at most 20 are
	// listed, by name; Count says how many there are).
	// +listType=atomic
	Done []string `json:"done"`
	// Count is how many of the hop's Total components completed.
	Count int `json:"count"`
	Total int `json:"total"`
}

// Retry is a component retried after a failed attempt (runner's
// ComponentRetrying event).
type Retry struct {
	// Hop is the index in PlanSummary.Hops of the component's hop,
	// counted from 0 (messages say "hop N", counted from 1).
	Hop       int    `json:"hop"`
	Component string `json:"component"`
	// Attempt is the number of the attempt that failed, counted from 1
	// over the whole upgrade (a resumed run counts on); the next attempt
	// is Attempt+1.
	Attempt int `json:"attempt"`
	// Code is COMPONENT_TIMEOUT for an attempt that ran past its timeout,
	// else COMPONENT_FAILED.
	Code string `json:"code"`
	// Message is the attempt's error: its first line, cut to 256 bytes.
	// +optional
	Message string `json:"message,omitempty"`
	// NextAttemptAt is when the next attempt is due: the failure's time
	// plus the backoff.
	NextAttemptAt metav1.Time `json:"nextAttemptAt"`
	// Running is true once the next attempt runs.
	// +optional
	Running bool `json:"running,omitempty"`
}

// Failure is the most recent failure of a run (record.Failure).
type Failure struct {
	// Hop is the index in PlanSummary.Hops of the hop that failed,
	// counted from 0 (messages say "hop N of M", counted from 1).
	Hop int `json:"hop"`
	// +optional
	Component string `json:"component,omitempty"`
	// +optional
	Check string `json:"check,omitempty"`
	// Code is a record.Code, e.g. COMPONENT_FAILED.
	Code string `json:"code"`
	// +optional
	Message string `json:"message,omitempty"`
}

// ClusterVersionList is a list of ClusterVersions.
//
// +kubebuilder:object:root=true
type ClusterVersionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterVersion `json:"items"`
}
