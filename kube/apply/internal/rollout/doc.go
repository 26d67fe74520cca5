// Package rollout holds kube/apply's readiness tests against a control
// plane on which workloads really roll out (kube/internal/controlplane:
// kube-controller-manager, kube-scheduler and kwok's fake nodes besides
// the API server). A manifest component upgrades a Deployment, a
// DaemonSet and a partitioned StatefulSet through components.Manifest
// and apply.Applier, as a hopdag run does, and each test checks that the
// kstatus wait returned when, and only when, the rollout was complete:
// only when, by the workload's status and its ReplicaSets or pods read
// the moment the wait returned, and by a lower bound on the rollout's
// duration (kwok makes each new pod Ready only after a delay); when, by a
// watch of the object that saw it complete at most 2s before the wait
// returned. A rollout whose pods never get ready times out naming the
// object and its kstatus message, and the hop's rollback restores the
// previous version. A helm component (kube/helm, chart
// testdata/charts/web) is held to the same rules through Helm 4's
// `--wait` (its kstatus watcher), and, run by a runner.Executor with the
// Rollback policy, its never-ready upgrade times out naming the
// Deployment and its kstatus message and is rolled back by Helm.
// TestSelfUpgradeHandover is openFuyao's self-upgrade: a run recorded in
// kube/store patches the operator's own Deployment, its process dies
// right after the patch, and the next process resumes the run from the
// store once the dead one's lease expired; the component succeeds only
// once the new ReplicaSet is available and the old pod gone. The
// package has no code of its own: only its tests, about 40 seconds of
// them with the control plane's start.
package rollout
