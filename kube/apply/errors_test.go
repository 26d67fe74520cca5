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
