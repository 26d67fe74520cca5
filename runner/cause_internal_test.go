package runner

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hopdag/hopdag/record"
)

// A ComponentError names its component once: a runner's error that names
// it again, after its package or not, is told from after the name
// (issue 30, "errors said once"); any other error is told whole.
func TestComponentErrorNamesTheComponentOnce(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"components' error", errors.New("components: api 1.1.0: upgrade: boom"), "upgrade: boom"},
		{"wrapped twice", fmt.Errorf("components: api 1.1.0: %w", fmt.Errorf("upgrade: %w", errors.New("boom"))), "upgrade: boom"},
		{"name without version", errors.New("api: boom"), "boom"},
		{"package and name without version", errors.New("simulate: api: scripted failure"), "scripted failure"},
		{"another component's name", errors.New("components: db 1.1.0: upgrade: boom"), "components: db 1.1.0: upgrade: boom"},
		{"a prefix that is not a package", errors.New("Components: api 1.1.0: boom"), "Components: api 1.1.0: boom"},
		{"only the name", errors.New("components: api 1.1.0: "), "components: api 1.1.0: "},
		{"no name", errors.New("connection refused"), "connection refused"},
		{"no error", nil, "no error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &ComponentError{Hop: 0, Component: "api", Version: "1.1.0", Attempt: 2, Code: record.CodeComponentFailed, Err: tt.err}
			want := "runner: hop 1: api 1.1.0 failed on attempt 2 (COMPONENT_FAILED): " + tt.want
			if got := e.Error(); got != want {
				t.Errorf("Error() = %q\nwant      %q", got, want)
			}
		})
	}
}
