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
