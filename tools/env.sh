#!/usr/bin/env bash
# tools/env.sh is the one entry point for the server binaries that hopdag's
# integration tests run on 127.0.0.1. It prints `export NAME=value` lines,
# building whatever is missing from the Go module proxy first:
#
#   eval "$(tools/env.sh)"          # every tool
#   eval "$(tools/env.sh etcd)"     # only the named ones
#
# Binaries are cached outside the checkout, under
# ${HOPDAG_TOOLS_CACHE:-$HOME/.cache/hopdag/tools}/NAME/, keyed by the
# sha256 of the go.mod and go.sum of the module that builds them: a changed
# module rebuilds them, and every checkout on the machine (a second clone,
# CI's fresh clone) reuses what one of them built. Build output goes to
# stderr, so the eval sees only exports.
# Each tool is one `case` arm below: what it builds and what it exports.
set -euo pipefail
tools="$(cd "$(dirname "$0")" && pwd)"
cache="${HOPDAG_TOOLS_CACHE:-$HOME/.cache/hopdag/tools}"
mkdir -p "$cache"

# key MODULE_DIR prints the cache key of the module at tools/MODULE_DIR.
key() { cat "$tools/$1/go.mod" "$tools/$1/go.sum" | sha256sum | cut -c1-16; }

# build NAME MODULE_DIR PACKAGE builds PACKAGE (a path inside the module at
# tools/MODULE_DIR) into $cache/NAME/NAME unless the cached binary has the
# module's current key, and prints the binary's path.
build() {
  local name=$1 mod=$2 pkg=$3 dir="$cache/$1" k
  k="$(key "$mod")"
  if [ -x "$dir/$name" ] && [ "$(cat "$dir/.key" 2>/dev/null)" = "$k" ]; then
    echo "$dir/$name"
    return 0
  fi
  echo "tools/env.sh: building $name into $dir (module tools/$mod)" >&2
  mkdir -p "$dir"
  local start=$SECONDS
  # Build to a temporary name and rename, so that a concurrent run never
  # sees a half-written binary. GOWORK=off: each tool builds from its own
  # go.mod and go.sum (the cache key), not from the repository's go.work,
  # whose build list raises versions for the other modules' sake (and which
  # does not list tools/kube, tools/registry, ...).
  if ! (cd "$tools/$mod" && GOWORK=off go build -trimpath -o "$dir/.$name.$$" "$pkg") >&2; then
    echo "tools/env.sh: building $name failed" >&2
    rm -f "$dir/.$name.$$"
    return 1
  fi
  mv -f "$dir/.$name.$$" "$dir/$name"
  echo "$k" >"$dir/.key"
  echo "tools/env.sh: built $name in $((SECONDS - start)) s" >&2
  echo "$dir/$name"
}

# etcd_bin prints an etcd server: built from tools/etcd, or, if that build
# fails, one on PATH or Debian's etcd-server package (etcd 3.4, which the
# v3.6 client speaks to) when apt-get is there and we are root.
etcd_bin() {
  build etcd . ./etcd && return 0
  if ! command -v etcd >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y etcd-server >&2
  fi
  command -v etcd && return 0
  echo "tools/env.sh: no etcd server: fix the build above, or install etcd" >&2
  return 1
}

# The biggest build first: .ci/run builds them all before any test compiles.
all=(kube kubecp kwok etcd registry oras controller-gen ko)
[ $# -gt 0 ] || set -- "${all[@]}"
for tool in "$@"; do
  case "$tool" in
  etcd)
    p="$(etcd_bin)"
    echo "export HOPDAG_ETCD=$p"
    ;;
  kube)
    # envtest (sigs.k8s.io/controller-runtime/pkg/envtest) wants etcd,
    # kube-apiserver and kubectl in one directory: KUBEBUILDER_ASSETS.
    # kube-apiserver and kubectl are k8s.io/kubernetes's own mains, named
    # by the tool directive of tools/kube/go.mod; the first build takes
    # about ten minutes on two cores.
    api="$(build kube-apiserver kube k8s.io/kubernetes/cmd/kube-apiserver)"
    ctl="$(build kubectl kube k8s.io/kubernetes/cmd/kubectl)"
    e="$(etcd_bin)"
    assets="$cache/kube"
    mkdir -p "$assets"
    # Relative links where the target is in the cache, which several
    # checkouts share.
    for t in "$api" "$ctl" "$e"; do
      ln -sfn "${t/#$cache\//..\/}" "$assets/$(basename "$t")"
    done
    echo "export KUBEBUILDER_ASSETS=$assets"
    echo "export HOPDAG_KUBECTL=$ctl"
    ;;
  kubecp)
    # The rest of a control plane for kube/internal/controlplane:
    # kube-controller-manager and kube-scheduler, k8s.io/kubernetes's own
    # mains at the version of tools/kube, named by the tool directive of
    # tools/kubecp/go.mod. A module of their own keeps tools/kube's cache
    # key (kube-apiserver is not rebuilt), and the same dependency versions
    # let them reuse the packages that kube-apiserver's build compiled.
    cm="$(build kube-controller-manager kubecp k8s.io/kubernetes/cmd/kube-controller-manager)"
    sch="$(build kube-scheduler kubecp k8s.io/kubernetes/cmd/kube-scheduler)"
    echo "export HOPDAG_KUBE_CONTROLLER_MANAGER=$cm"
    echo "export HOPDAG_KUBE_SCHEDULER=$sch"
    ;;
  kwok)
    # kwok (sigs.k8s.io/kwok) plays the kubelet of fake nodes: its stages
    # mark pods Running and Ready, or keep them not ready.
    p="$(build kwok kwok sigs.k8s.io/kwok/cmd/kwok)"
    echo "export HOPDAG_KWOK=$p"
    ;;
  registry)
    p="$(build registry registry github.com/distribution/distribution/v3/cmd/registry)"
    echo "export HOPDAG_REGISTRY=$p"
    ;;
  oras)
    p="$(build oras oras oras.land/oras/cmd/oras)"
    echo "export HOPDAG_ORAS=$p"
    ;;
  controller-gen)
    p="$(build controller-gen controllergen sigs.k8s.io/controller-tools/cmd/controller-gen)"
    echo "export HOPDAG_CONTROLLER_GEN=$p"
    ;;
  ko)
    # ko (github.com/google/ko) builds kube/examples/operator's image
    # without Docker, onto a base image kube/examples/operator's image test
    # assembles and pushes to the local registry (no base is pulled from
    # the internet). Small: after the Kubernetes builds.
    p="$(build ko ko github.com/google/ko)"
    echo "export HOPDAG_KO=$p"
    ;;
  *)
    echo "tools/env.sh: unknown tool $tool (known: ${all[*]})" >&2
    exit 2
    ;;
  esac
done
