// Package controlplane starts a whole Kubernetes control plane on 127.0.0.1
// for tests in which workloads really roll out: etcd and kube-apiserver
// (through controller-runtime's envtest), kube-controller-manager,
// kube-scheduler, and kwok (sigs.k8s.io/kwok) playing the kubelet of N
// fake nodes. A Deployment's new ReplicaSet scales up and its old one
// down, a DaemonSet puts a pod on every node, a StatefulSet replaces its
// pods one ordinal at a time, and every pod is marked Running and Ready by
// kwok's stages (stages.yaml) without any container running.
//
// A test package starts it once, in TestMain, and each test says it needs
// it:
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) { os.Exit(controlplane.Main(m, &cp, controlplane.WithNodes(5))) }
//
//	func TestRollout(t *testing.T) {
//		cp.Need(t) // skips without the binaries; prints the logs if t fails
//		cs := kubernetes.NewForConfigOrDie(cp.Config())
//		...
//	}
//
// Binaries: etcd and kube-apiserver from KUBEBUILDER_ASSETS, and the
// paths in HOPDAG_KUBE_CONTROLLER_MANAGER, HOPDAG_KUBE_SCHEDULER and
// HOPDAG_KWOK; `eval "$(tools/env.sh)"` from the repository root builds
// them all and sets the variables. Without one of them Main runs the tests,
// which skip (Need) saying so, except under CI=true, where Main fails.
//
// What runs, and how the pieces are wired:
//   - the API server is envtest's (RBAC, the ServiceAccount admission
//     plugin off, so a pod needs no ServiceAccount token);
//   - kube-controller-manager runs the controllers of Deployments,
//     ReplicaSets, DaemonSets, StatefulSets, Jobs, ServiceAccounts and
//     their tokens, Namespaces and the garbage collector, signing tokens
//     with the key the API server verifies them with (envtest's
//     sa-signer.key) and publishing the API server's CA in
//     kube-root-ca.crt; nothing of nodes, volumes or networking;
//   - kube-scheduler binds pods to the fake nodes;
//   - kwok manages the Nodes annotated kwok.x-k8s.io/node=fake that Start
//     creates (kwok-node-0, kwok-node-1...), marks them Ready, marks their
//     pods Running and Ready (after the Go duration of the pod's
//     AnnotationReadyDelay, if any), keeps a pod labelled LabelReady=false
//     Running but not Ready, completes Jobs' pods and deletes pods being
//     deleted at once.
//
// The controller-manager, the scheduler and kwok each authenticate as a
// user of their own (envtest's AddUser) in the system:masters group, with
// leader election off. The node lifecycle controller does not run: Start
// removes the not-ready taint the API server gives a new node once kwok
// has marked it Ready, and the fake nodes stay Ready without heartbeats.
//
// Each process logs into a file of Dir (NAME.log); Need prints the end
// of each when a test fails, and Main keeps the directory when the tests
// fail. Starting takes 6 to 9 seconds on two cores shared with other
// builds (most of it etcd and the API server); Stop ends every process,
// kwok first and etcd last. A test binary that ends without Stop (a
// panicking test) takes kube-controller-manager, kube-scheduler and kwok
// with it on Linux (the parent-death signal), not envtest's etcd and
// kube-apiserver, which envtest leaves running as it always does.
//
// A ControlPlane is safe for concurrent use by the tests of its package;
// the tests share it, so each should work in a namespace of its own.
package controlplane
