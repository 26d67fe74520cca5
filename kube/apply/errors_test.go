package apply_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/apply"
)

// TestObjectErrorText: the package's prefix is said once, also when the
// verb is the package's name.
func TestObjectErrorText(t *testing.T) {
	cm := components.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "fresh", Name: "settings"}
	tests := []struct {
		op, want string
	}{
		{"apply", `apply ConfigMap fresh/settings: boom`},
		{"get", `apply: get ConfigMap fresh/settings: boom`},
		{"map", `apply: map ConfigMap fresh/settings: boom`},
		{"delete", `apply: delete ConfigMap fresh/settings: boom`},
		{"wait", `apply: wait ConfigMap fresh/settings: boom`},
	}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			err := &apply.ObjectError{Object: cm, Op: tt.op, Err: errors.New("boom")}
			assert.Equal(t, tt.want, err.Error(), "ObjectError{Op: %q}.Error()", tt.op)
		})
	}
}

// TestOwnerErrorIsComponents: an *OwnerError is the components one, whose
// message names this package's option: errors.As finds either type, both
// name apply.WithTakeOver, and errors.Is matches ErrOwned, which is
// components.ErrOwned (the error of a components.Dir or Recorder too).
func TestOwnerErrorIsComponents(t *testing.T) {
	ref := components.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "shared-cm"}
	var err error = &apply.OwnerError{Object: ref, Component: "x", Instance: "ib", OwnerComponent: "x", OwnerInstance: "ia"}
	assert.ErrorIs(t, err, apply.ErrOwned)
	assert.ErrorIs(t, err, components.ErrOwned)
	ce, ok := errors.AsType[*components.OwnerError](err)
	if assert.True(t, ok, "errors.AsType[*components.OwnerError](%v)", err) {
		assert.Equal(t, components.OwnerError{Object: ref, Component: "x", Instance: "ib", OwnerComponent: "x", OwnerInstance: "ia", TakeOver: "apply.WithTakeOver"}, *ce)
		assert.Equal(t, err.Error(), ce.Error())
	}
	assert.Contains(t, err.Error(), "or take it over with apply.WithTakeOver (the old owner's prune then leaves it)")
	err = &apply.OwnerError{Object: ref, Component: "x", Instance: "ib", OwnerComponent: "x", OwnerInstance: "ia", TakeOver: "--take-over"}
	assert.Contains(t, err.Error(), "or take it over with --take-over (the old owner's prune then leaves it)", "a set TakeOver is kept")
}

// TestUnreadyWaiting: the summary names the first object not ready and
// says kstatus's counts as "N of M word", other messages as they are,
// the status when there is no message, and how many more are not ready.
func TestUnreadyWaiting(t *testing.T) {
	ds := components.Ref{Group: "apps", Version: "v1", Kind: "DaemonSet", Namespace: "kube-system", Name: "calico-node"}
	dep := components.Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "kube-system", Name: "coredns"}
	tests := []struct {
		name    string
		objects []apply.Unready
		want    string
	}{
		{"count", []apply.Unready{{Object: ds, Status: "InProgress", Message: "Updated: 3/5"}},
			"waiting for DaemonSet kube-system/calico-node: 3 of 5 updated"},
		{"lowercase count", []apply.Unready{{Object: ds, Status: "InProgress", Message: "updated: 2/3"}},
			"waiting for DaemonSet kube-system/calico-node: 2 of 3 updated"},
		{"other message", []apply.Unready{{Object: dep, Status: "InProgress", Message: "Progress deadline exceeded"}},
			"waiting for Deployment kube-system/coredns: Progress deadline exceeded"},
		{"no message", []apply.Unready{{Object: dep, Status: "NotFound"}},
			"waiting for Deployment kube-system/coredns: NotFound"},
		{"more", []apply.Unready{{Object: ds, Status: "InProgress", Message: "Ready: 4/5"}, {Object: dep, Status: "InProgress"}},
			"waiting for DaemonSet kube-system/calico-node: 4 of 5 ready and 1 more object"},
		{"cluster-scoped", []apply.Unready{{Object: components.Ref{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "x.example.com"}, Status: "InProgress", Message: "CRD is not established"}},
			"waiting for CustomResourceDefinition x.example.com: CRD is not established"},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := &apply.UnreadyError{Check: "c", Objects: tt.objects}
			assert.Equal(t, tt.want, err.Waiting())
		})
	}
}
