// Module kwok builds kwok (sigs.k8s.io/kwok/cmd/kwok) from the Go module
// proxy: the kubelet of the fake nodes that kube/internal/controlplane
// starts, whose stages mark pods Running and Ready; see ../env.sh. It has
// its own go.mod so that its dependencies (another k8s.io version than
// tools/kube's) and cache key are separate.
package kwok
