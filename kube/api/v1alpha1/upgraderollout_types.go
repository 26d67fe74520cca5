package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// UpgradeRollout upgrades a fleet: the ClusterVersions it selects go to
// spec.desiredVersion in waves (canaries first), at most maxConcurrency
// at once, stopping when more than maxFailures fail, and each only inside
// the maintenance windows. Each ClusterVersion follows its own route
// (its own hops and component DAGs); the rollout only decides when it
// starts, by setting its desiredVersion. The controller derives
// everything from the ClusterVersions it selects (level-based): a
// restart resumes without starting a cluster twice.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ur,categories=hopdag
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.desiredVersion`
// +kubebuilder:printcolumn:name="Wave",type=string,JSONPath=`.status.wave`
// +kubebuilder:printcolumn:name="Done",type=integer,JSONPath=`.status.counts.succeeded`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.counts.failed`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type UpgradeRollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec UpgradeRolloutSpec `json:"spec"`
	// +optional
	Status UpgradeRolloutStatus `json:"status,omitzero"`
}

// UpgradeRolloutSpec is the fleet's target and how to get there.
type UpgradeRolloutSpec struct {
	// Selector selects the ClusterVersions of the fleet: in the
	// rollout's namespace, or in those of NamespaceSelector.
	Selector metav1.LabelSelector `json:"selector"`
	// NamespaceSelector, when set, makes the fleet the ClusterVersions
	// that Selector selects in every namespace whose labels it matches
	// (an empty one: every namespace), the rollout's own only if it
	// matches too, rather than in the rollout's namespace. A
	// ClusterVersion of another namespace than the rollout's is named
	// NAMESPACE/NAME in the status, the dry run, the Events and
	// canaries.names.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// DesiredVersion is the target every selected ClusterVersion is set
	// to, when its turn comes.
	DesiredVersion Target `json:"desiredVersion"`
	// AcceptRisks and Channel are set on each ClusterVersion with its
	// desiredVersion (see ClusterVersionSpec).
	// +optional
	// +kubebuilder:validation:MaxItems=64
	AcceptRisks []string `json:"acceptRisks,omitempty"`
	// +optional
	Channel string `json:"channel,omitempty"`
	// Canaries go first, in a wave of their own.
	// +optional
	Canaries *Canaries `json:"canaries,omitempty"`
	// Waves groups the other ClusterVersions (one wave when unset).
	// +optional
	Waves *Waves `json:"waves,omitempty"`
	// MaxConcurrency is how many ClusterVersions upgrade at once (a count
	// or a percentage of the fleet, rounded up); default 1.
	// +optional
	MaxConcurrency *intstr.IntOrString `json:"maxConcurrency,omitempty"`
	// MaxFailures is the failure budget (a count or a percentage of the
	// fleet, rounded down); default 0: the first failure stops the
	// rollout.
	// +optional
	MaxFailures *intstr.IntOrString `json:"maxFailures,omitempty"`
	// MinSuccessTime is how long a ClusterVersion must stay at the
	// target, available, before it counts as done (soak).
	// +optional
	MinSuccessTime *metav1.Duration `json:"minSuccessTime,omitempty"`
	// ProgressDeadline is how long a ClusterVersion may take to reach
	// the target before it counts as failed.
	// +optional
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`
	// Gates names the waves that start only once Approvals names them.
	// +optional
	Gates []string `json:"gates,omitempty"`
	// Approvals approve gated waves.
	// +optional
	Approvals []WaveApproval `json:"approvals,omitempty"`
	// Paused stops starting ClusterVersions; those upgrading go on.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Abort stops starting ClusterVersions for good; those upgrading
	// finish their hop.
	// +optional
	Abort bool `json:"abort,omitempty"`
	// Rollback, with Abort, rolls back the clusters this rollout
	// started: Failed, every ClusterVersion whose upgrade failed (phase
	// Failed); Moved, every one whose upgrade started, whether it
	// completed, failed or is in progress. Each is asked through its
	// spec.rollback: its last upgrade rolls back through each hop's DAG,
	// last hop first, to the version it started from (RolledBack); one
	// in progress stops at its safe point first. Each is asked once (the
	// annotation hopdag.io/rollout-rollback says so).
	// +optional
	// +kubebuilder:validation:Enum=Failed;Moved
	Rollback string `json:"rollback,omitempty"`
	// OnFailure is set on each ClusterVersion with its target (see
	// ClusterVersionSpec.OnFailure): Rollback or RollbackRun make a
	// cluster whose hop fails roll back by itself.
	// +optional
	// +kubebuilder:validation:Enum=Rollback;RollbackRun
	OnFailure string `json:"onFailure,omitempty"`
	// MaintenanceWindows, when set, are when the ClusterVersions it
	// starts may run: a cluster starts only while these and its own
	// windows are both open, and each hop of its upgrade too (a hop in
	// progress when one closes finishes; the next waits, Paused).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	MaintenanceWindows []MaintenanceWindow `json:"maintenanceWindows,omitempty"`
}

// RolloutAnnotation names, on a ClusterVersion, the UpgradeRollout that
// set its desiredVersion: NAME in the ClusterVersion's namespace,
// NAMESPACE/NAME in another (spec.namespaceSelector). The
// ClusterVersion's upgrade to that version keeps within the rollout's
// maintenance windows.
const RolloutAnnotation = "hopdag.io/rollout"

// Canaries are the ClusterVersions that go first: Names, or the first
// Count in name order.
type Canaries struct {
	// +optional
	Names []string `json:"names,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Count int `json:"count,omitempty"`
}

// Waves groups ClusterVersions: by Label's values (in Order first, then
// the others sorted, then those without the label), or by Size.
type Waves struct {
	// +optional
	Label string `json:"label,omitempty"`
	// +optional
	Order []string `json:"order,omitempty"`
	// +optional
	Size *intstr.IntOrString `json:"size,omitempty"`
}

// WaveApproval approves a gated wave.
type WaveApproval struct {
	// Wave is the gated wave's name, as status.waves names it.
	// +kubebuilder:validation:MinLength=1
	Wave string `json:"wave"`
	// By says who approves; it is recorded in status.approvals with the
	// time the wave started.
	// +kubebuilder:validation:MinLength=1
	By string `json:"by"`
}

// RecordedWaveApproval is an approval the controller acted on: the gated
// wave started because of it.
type RecordedWaveApproval struct {
	Wave string      `json:"wave"`
	By   string      `json:"by"`
	At   metav1.Time `json:"at"`
}

// DryRun is the fleet's plan, computed before the rollout starts any
// ClusterVersion (and again when its spec changes): where each one is,
// the route it would take, and those that cannot go.
type DryRun struct {
	// ObservedGeneration is the rollout's generation it was computed for;
	// Time when.
	ObservedGeneration int64       `json:"observedGeneration"`
	Time               metav1.Time `json:"time"`
	// Routes groups the ClusterVersions that can go by current version
	// and route, in order of current version then hops.
	// +optional
	Routes []PlannedRoute `json:"routes,omitempty"`
	// Blocked lists the ClusterVersions that cannot reach the target as
	// they are (no route, a route only behind risks not accepted, an
	// unknown version), in name order, at most 100; BlockedCount counts
	// them all.
	// +optional
	Blocked []BlockedCluster `json:"blocked,omitempty"`
	// +optional
	BlockedCount int `json:"blockedCount,omitempty"`
	// AtTarget counts those already at the target.
	// +optional
	AtTarget int `json:"atTarget,omitempty"`
}

// PlannedRoute is the route of some ClusterVersions.
type PlannedRoute struct {
	From string `json:"from"`
	// Hops are the route's hops, as a ClusterVersion's status.plan.hops
	// names them.
	Hops []string `json:"hops"`
	// Clusters are the ClusterVersions taking it, in name order, each
	// as NAME (WAVE).
	Clusters []string `json:"clusters"`
}

// BlockedCluster is a ClusterVersion that cannot reach the target.
type BlockedCluster struct {
	Name    string `json:"name"`
	Wave    string `json:"wave"`
	Current string `json:"current"`
	// Reason: NoRoute, BehindRisks (Risks names those to accept in
	// spec.acceptRisks), UnknownVersion, CatalogInvalid.
	Reason string `json:"reason"`
	// +optional
	Risks []string `json:"risks,omitempty"`
	// Message carries the resolver's diagnostics.
	Message string `json:"message"`
}

// MaintenanceWindow opens at each time Schedule (cron, five fields, as a
// CronJob's) names in TimeZone, for Duration.
type MaintenanceWindow struct {
	// +kubebuilder:validation:MinLength=1
	Schedule string          `json:"schedule"`
	Duration metav1.Duration `json:"duration"`
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// UpgradeRolloutStatus is what the controller observed and decided.
type UpgradeRolloutStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase: Progressing, WaitingForApproval, WaitingForWindow, Paused,
	// Aborted, Failed or Completed.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Wave is the wave in progress.
	// +optional
	Wave string `json:"wave,omitempty"`
	// +optional
	Counts RolloutCounts `json:"counts,omitzero"`
	// FailureBudget is how many may fail; Counts.Failed how many did.
	// +optional
	FailureBudget int `json:"failureBudget,omitempty"`
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Waves lists every wave and its ClusterVersions' states.
	// +optional
	Waves []WaveStatus `json:"waves,omitempty"`
	// Approvals are the gate approvals the controller acted on.
	// +optional
	Approvals []RecordedWaveApproval `json:"approvals,omitempty"`
	// DryRun is the fleet's plan as computed before anything started.
	// +optional
	DryRun *DryRun `json:"dryRun,omitempty"`
	// NextDecision is when the controller looks again if nothing
	// changes (a soak ends, a deadline passes, a window opens).
	// +optional
	NextDecision *metav1.Time `json:"nextDecision,omitempty"`
}

// RolloutCounts counts ClusterVersions by state.
type RolloutCounts struct {
	Pending   int `json:"pending"`
	Upgrading int `json:"upgrading"`
	Soaking   int `json:"soaking"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// RolledBack counts those rolled back on the rollout's request
	// (spec.abort with spec.rollback Moved) whose upgrade had not failed.
	// +optional
	RolledBack int `json:"rolledBack,omitempty"`
}

// WaveStatus is one wave.
type WaveStatus struct {
	Name     string          `json:"name"`
	Clusters []ClusterStatus `json:"clusters"`
}

// ClusterStatus is one ClusterVersion's place in the rollout.
type ClusterStatus struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	NextWindow *metav1.Time `json:"nextWindow,omitempty"`
	// Message says more: why it failed, or that its cluster does not
	// answer (the ClusterVersion's Failing condition).
	// +optional
	Message string `json:"message,omitempty"`
}

// UpgradeRolloutList is a list of UpgradeRollouts.
//
// +kubebuilder:object:root=true
type UpgradeRolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UpgradeRollout `json:"items"`
}
