package runner_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// A component stopped by its timeout records how long it had, whose
// timeout that was (its spec.timeout, with the file:line of its
// ComponentVersion when known, or the executor's default) and what to do,
// in place of the bare "context deadline exceeded"; the error still
// matches context.DeadlineExceeded, and the runner's own error.
func TestTimeoutMessage(t *testing.T) {
	errReset := errors.New("connection reset")
	blocks := func(ctx context.Context, _ runner.Task) error { <-ctx.Done(); return ctx.Err() }
	tests := []struct {
		name string
		cv   func(*release.ComponentVersion)
		def  time.Duration
		run  func(ctx context.Context, t runner.Task) error
		want string
		is   error // also matched, besides context.DeadlineExceeded
	}{
		{"own timeout", timeout(10 * time.Millisecond), 0, blocks,
			"timed out after 10ms (spec.timeout of a@v1.1.0); raise it in that ComponentVersion if a needs longer", nil},
		{"own timeout with its source", func(cv *release.ComponentVersion) {
			cv.Timeout = release.D(10 * time.Millisecond)
			cv.Source = release.Source{File: "components.yaml", Line: 7}
		}, time.Minute, blocks,
			"timed out after 10ms (spec.timeout of a@v1.1.0, components.yaml:7); raise it in that ComponentVersion if a needs longer", nil},
		{"default timeout", nil, 10 * time.Millisecond, blocks,
			"timed out after 10ms (the executor's default timeout, WithDefaultTimeout: a@v1.1.0 sets no spec.timeout); set spec.timeout in its ComponentVersion if a needs longer", nil},
		{"runner wraps the deadline", timeout(10 * time.Millisecond), 0,
			func(ctx context.Context, _ runner.Task) error {
				<-ctx.Done()
				return fmt.Errorf("apply web: %w", ctx.Err())
			},
			"apply web: timed out after 10ms (spec.timeout of a@v1.1.0); raise it in that ComponentVersion if a needs longer", nil},
		{"runner fails its own way after the deadline", timeout(10 * time.Millisecond), 0,
			func(ctx context.Context, _ runner.Task) error { <-ctx.Done(); return errReset },
			"timed out after 10ms (spec.timeout of a@v1.1.0); raise it in that ComponentVersion if a needs longer: connection reset", errReset},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := c("a")
			if tt.cv != nil {
				n = n.with(tt.cv)
			}
			st, err := runner.New(runner.RunnerFunc(tt.run), runner.WithDefaultTimeout(tt.def)).Execute(context.Background(), plan1(t, n), nil)
			require.ErrorIs(t, err, runner.ErrRunFailed)
			assert.ErrorIs(t, err, context.DeadlineExceeded, "Execute's error matches the deadline")
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is, "Execute's error matches the runner's")
			}
			ce, ok := errors.AsType[*runner.ComponentError](err)
			require.True(t, ok, "Execute's error holds a *ComponentError: %v", err)
			assert.Equal(t, record.CodeComponentTimeout, ce.Code, "ComponentError.Code")
			assert.Equal(t, tt.want, ce.Err.Error(), "ComponentError.Err")
			a := compStatus(t, st, 0, "a")
			assert.Equal(t, record.CodeComponentTimeout, a.Code, "a code")
			assert.Equal(t, tt.want, a.Error, "a error")
			require.NotNil(t, st.LastFailure)
			assert.Equal(t, tt.want, st.LastFailure.Error, "LastFailure.Error")
		})
	}
}
