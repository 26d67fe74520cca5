//go:build tools

// Package controllergen pins sigs.k8s.io/controller-tools, whose
// controller-gen generates the kube/ module's deepcopy code and CRD
// manifests (tools/env.sh controller-gen builds it).
package controllergen

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
