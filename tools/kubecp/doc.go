// Module kubecp builds kube-controller-manager and kube-scheduler
// (k8s.io/kubernetes/cmd/...) from the Go module proxy, at the version and
// with the dependency versions of ../kube, whose kube-apiserver they join
// in kube/internal/controlplane; see ../env.sh. Its go.mod began as a copy
// of tools/kube's: the same versions let the build reuse the packages that
// kube-apiserver's build compiled, and a module of its own keeps
// tools/kube's cache key, so that adding these binaries does not rebuild
// kube-apiserver. Keep both go.mod files at the same k8s.io/kubernetes
// version.
package kubecp
